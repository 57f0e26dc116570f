//go:build crashtest

package crashpoint

import (
	"fmt"
	"os"
)

// Enabled reports whether this binary was built with -tags crashtest.
const Enabled = true

// at is read once at start. This file is the one place outside
// internal/config that reads the environment, and it exists only in the
// crashtest build: DELTA_CRASH_AT is test machinery, not configuration.
var at = os.Getenv("DELTA_CRASH_AT")

// Hit exits the process with code 137 when name is the DELTA_CRASH_AT
// point. No deferred function runs and nothing is flushed, as with kill -9.
func Hit(name string) {
	if at == "" || name != at {
		return
	}
	fmt.Fprintf(os.Stderr, "crashpoint: exiting at %s\n", name)
	os.Exit(137)
}
