//go:build unix

package cli

import (
	"fmt"
	"syscall"
)

// execProcess replaces this process with argv, so the daemon (or litestream
// supervising it) receives the container's signals directly.
func execProcess(argv, environ []string) error {
	if err := syscall.Exec(argv[0], argv, environ); err != nil {
		return fmt.Errorf("exec %s: %w", argv[0], err)
	}
	return nil // not reached: a successful exec does not return
}
