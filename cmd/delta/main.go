// Command delta is the Delta agent harness: bare `delta` runs the daemon;
// subcommands scaffold bundles, launch a development daemon, send tasks and
// run a demo. See `delta help`.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/deltaharness/delta/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.LookupEnv)
	stop()
	if err != nil {
		var ee *cli.ExitError
		if !errors.As(err, &ee) || ee.Err != nil {
			fmt.Fprintln(os.Stderr, "delta:", err)
		}
		os.Exit(cli.ExitCode(err))
	}
}
