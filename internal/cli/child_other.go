//go:build !linux

package cli

import "syscall"

// childProcAttr has no parent-death signal to set outside Linux.
func childProcAttr() *syscall.SysProcAttr { return nil }
