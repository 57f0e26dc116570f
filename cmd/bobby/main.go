// Command bobby is a real-Chromium browser runtime exposed to agents as MCP
// tools, over stdio (`bobby stdio`) and streamable HTTP (`bobby serve`).
// See package gateway for the tool surface, package cmdline for the commands, and `bobby help` for usage.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/deltaharness/delta/internal/bobby/cmdline"
	"github.com/deltaharness/delta/internal/bobby/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cmdline.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, config.ReadEnv()); err != nil {
		fmt.Fprintln(os.Stderr, "bobby:", err)
		os.Exit(1)
	}
}
