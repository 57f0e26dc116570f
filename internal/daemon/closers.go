package daemon

import (
	"context"
	"errors"
	"fmt"
)

// closers is what the daemon has opened, in the order it opened it. close
// releases it last first, so nothing is closed while something opened after
// it still uses it, and reports every failure instead of the first or none.
type closers []namedCloser

type namedCloser struct {
	name  string
	close func(context.Context) error
}

// add records that name is open and how to close it.
func (c *closers) add(name string, close func(context.Context) error) {
	*c = append(*c, namedCloser{name, close})
}

// close closes everything in reverse order of add, each once, and returns
// errors.Join of the failures, each naming what failed to close.
func (c *closers) close(ctx context.Context) error {
	var errs []error
	for i := len(*c) - 1; i >= 0; i-- {
		if err := (*c)[i].close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", (*c)[i].name, err))
		}
	}
	*c = nil
	return errors.Join(errs...)
}
