package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDB takes an exclusive OS lock on <db>.lock so a second daemon on this
// host refuses to open the same database, whatever port it asked for. The
// kernel drops the lock when the process dies, kill -9 included, so a
// restart never waits.
func lockDB(db string) (release func() error, err error) {
	if err := os.MkdirAll(filepath.Dir(db), 0o755); err != nil {
		return nil, fmt.Errorf("lock %s: %w", db, err)
	}
	path := db + ".lock"
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("another delta process is using %s (lock %s held): refusing to start a second writer", db, path)
	}
	fmt.Fprintf(f, "%d\n", os.Getpid())
	return f.Close, nil
}
