//go:build !linux

package code

import "syscall"

// procAttr puts the child in its own process group; outside Linux there is
// no parent-death signal to set.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
