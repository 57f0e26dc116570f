package cli

import "syscall"

// childProcAttr makes the kernel send the daemon SIGTERM if the launcher
// dies without stopping it (kill -9 of `delta dev`), so no orphaned daemon
// keeps the port and the database. Linux ties the signal to the thread that
// forked; the Go runtime retires a thread only when a goroutine that locked
// it exits, which nothing in this program does.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
