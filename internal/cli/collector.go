package cli

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/deltaharness/delta/internal/collector"
	"github.com/deltaharness/delta/internal/config"
)

// collectorCommand runs the reference telemetry collector: NDJSON records
// from exporters land in a PostgreSQL agent_events table.
type collectorCommand struct{ env }

// defaultCollectorListen keeps the collector on loopback unless asked.
const defaultCollectorListen = "127.0.0.1:8090"

// collectorSynopsis is the argument synopsis `delta collector` shows in help and usage errors.
const collectorSynopsis = "--database <postgres URL> [--listen 127.0.0.1:8090]"

func (c *collectorCommand) Run(ctx context.Context, args []string) error {
	fs := newFlagSet("collector")
	database := fs.String("database", "", "PostgreSQL connection URL (postgres://user:pass@host:5432/db)")
	listen := fs.String("listen", defaultCollectorListen, "listen address; a non-loopback address requires DELTA_COLLECTOR_TOKEN")
	if err := parseFlags(fs, c.env, collectorSynopsis, args, ""); err != nil {
		return helpOK(err)
	}
	if *database == "" {
		return usageFor(c.env, fs, collectorSynopsis, "--database is required")
	}
	token := config.CollectorToken(c.lookup)
	host, _, err := net.SplitHostPort(*listen)
	if err != nil {
		return usageFor(c.env, fs, collectorSynopsis, "--listen %q: %v", *listen, err)
	}
	if token == "" && !isLoopbackHost(host) {
		return fmt.Errorf("collector: --listen %s is not loopback: set DELTA_COLLECTOR_TOKEN so only exporters holding it can write", *listen)
	}
	logger := slog.New(slog.NewJSONHandler(c.stderr, nil))
	if token == "" {
		logger.Warn("DELTA_COLLECTOR_TOKEN is not set: any local process can post to the collector")
	}
	col, err := collector.Open(ctx, *database, token, logger)
	if err != nil {
		return fmt.Errorf("collector: %w", err)
	}
	defer col.Close()
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", *listen)
	if err != nil {
		return fmt.Errorf("collector: %w", err)
	}
	logger.Info("collector listening", "addr", ln.Addr().String(), "ingest", collector.IngestPath)
	if err := serveHTTP(ctx, ln, col.Handler()); err != nil {
		return fmt.Errorf("collector: %w", err)
	}
	return nil
}
