//go:build !unix

package cli

import (
	"errors"
	"os"
	"os/exec"
)

// execProcess runs argv as a child and exits with its status, where the
// platform cannot replace a process image.
func execProcess(argv, environ []string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = environ
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return &ExitError{Code: ee.ExitCode()}
	}
	return err
}
