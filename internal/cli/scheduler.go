package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/scheduler"
	"github.com/deltaharness/delta/internal/store"
)

// schedulerCommand runs the control plane we ship: it keeps schedules in
// its own SQLite file and fires each due one as a task on the daemon.
type schedulerCommand struct{ env }

const schedulerSynopsis = "[--db delta-scheduler.db] [--listen 127.0.0.1:8091] [--daemon-url http://127.0.0.1:8080] [--poll 1s]"

func (c *schedulerCommand) Run(ctx context.Context, args []string) error {
	// The variables give the flags their defaults; a bad one is reported
	// after the flags are parsed, so -h still shows the usage.
	cfg, cfgErr := config.LoadScheduler(c.lookup)
	if cfgErr != nil {
		cfg = config.Scheduler{DB: config.DefaultSchedulerDB, Listen: config.DefaultSchedulerListen, DaemonURL: config.DefaultDaemonURL}
	}
	fs := newFlagSet("scheduler")
	db := fs.String("db", cfg.DB, "SQLite file of schedules and firings (DELTA_SCHEDULER_DB)")
	listen := fs.String("listen", cfg.Listen, "listen address (DELTA_SCHEDULER_LISTEN); a non-loopback address requires DELTA_CONTROL_TOKEN")
	daemonURL := fs.String("daemon-url", cfg.DaemonURL, "the daemon firings are posted to, as POST /v1/tasks (DELTA_URL)")
	poll := fs.Duration("poll", scheduler.DefaultPoll, "how often due schedules are looked for")
	if err := parseFlags(fs, c.env, schedulerSynopsis, args, ""); err != nil {
		return helpOK(err)
	}
	if cfgErr != nil {
		return fmt.Errorf("scheduler: %w", cfgErr)
	}
	if *poll <= 0 {
		return usageFor(c.env, fs, schedulerSynopsis, "--poll must be positive")
	}
	if err := config.CheckListenAddr(*listen); err != nil {
		return usageFor(c.env, fs, schedulerSynopsis, "--listen %q: %v", *listen, err)
	}
	host, _, _ := net.SplitHostPort(*listen) // CheckListenAddr split it
	if err := config.CheckBaseURL(*daemonURL); err != nil {
		return usageFor(c.env, fs, schedulerSynopsis, "--daemon-url %q: %v", config.RedactUserinfo(*daemonURL), err)
	}
	if cfg.Token == "" && !isLoopbackHost(host) {
		return usageFor(c.env, fs, schedulerSynopsis, "--listen %s is not loopback: set DELTA_CONTROL_TOKEN so only daemons holding it can manage schedules", *listen)
	}
	logger := slog.New(slog.NewJSONHandler(c.stderr, nil))
	if cfg.Token == "" {
		logger.Warn("DELTA_CONTROL_TOKEN is not set: any local process can manage schedules")
	}
	st, err := store.OpenSchedules(ctx, *db)
	if err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	defer st.Close()
	s := scheduler.New(st, scheduler.Options{
		Token: cfg.Token, DaemonURL: *daemonURL, DaemonToken: cfg.DaemonToken, Poll: *poll, Logger: logger,
	})
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", *listen)
	if err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	logger.Info("scheduler listening", "addr", ln.Addr().String(), "db", *db, "daemon", config.RedactUserinfo(*daemonURL))
	s.Open(ctx)
	var serveErr error
	if err := serveHTTP(ctx, ln, s.Handler()); err != nil {
		serveErr = fmt.Errorf("scheduler: %w", err)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return errors.Join(serveErr, s.Close(cctx))
}
