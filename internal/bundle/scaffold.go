package bundle

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

//go:embed starter
var starter embed.FS

// Starter returns the scaffold content of one bundle file.
func Starter(name string) ([]byte, error) {
	return starter.ReadFile("starter/" + name)
}

// Scaffold writes the five starter files into dir for `delta init`,
// creating dir if needed. Each file is created exclusively (O_EXCL): an
// existing path, even a dangling symlink, is never touched, so in a partly
// scaffolded directory only the missing files appear. It keeps going past a
// failing file and returns every failure joined, with the paths it did
// create; rerunning after fixing the cause fills in the rest. A file whose
// write fails is removed, so a rerun can create it. delta.env is written
// 0600 because it will hold credentials.
func Scaffold(dir string) (created []string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("scaffold %s: %w", dir, err)
	}
	var errs []error
	for _, name := range Files() {
		path := filepath.Join(dir, name)
		ok, err := createExclusive(path, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			created = append(created, path)
		}
	}
	return created, errors.Join(errs...)
}

// createExclusive writes the starter for name at path. It reports false,
// nil when the path already exists.
func createExclusive(path, name string) (bool, error) {
	content, err := Starter(name)
	if err != nil {
		return false, fmt.Errorf("scaffold %s: %w", path, err)
	}
	perm := fs.FileMode(0o644)
	if name == EnvFile {
		perm = 0o600
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("scaffold %s: %w", path, err)
	}
	_, werr := f.Write(content)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(path) // ours, half-written: let a rerun create it whole
		return false, fmt.Errorf("scaffold %s: %w", path, err)
	}
	return true, nil
}
