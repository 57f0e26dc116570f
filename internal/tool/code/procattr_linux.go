package code

import "syscall"

// procAttr puts the child in its own process group, so a kill reaches
// everything it started, and has the kernel SIGKILL it if the daemon dies
// without stopping it (kill -9, an OOM kill), so it does not go on working
// in the workspace and spending with no one to hear its answer. Linux ties
// the signal to the thread that forked; the Go runtime retires a thread
// only when a goroutine that locked it exits, which the daemon never does.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
