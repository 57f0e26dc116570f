// Package daemon is Delta's composition root: it builds the store, bundle,
// workspace, tools, provider, engine, queue and HTTP API from a Config, runs
// them, and tears them down in reverse order. Nothing else wires packages
// together; main only parses the command line.
package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/deltaharness/delta/internal/api"
	"github.com/deltaharness/delta/internal/bundle"
	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/mcp"
	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/queue"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/telemetry"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/tool/recall"
	"github.com/deltaharness/delta/internal/tool/remember"
	"github.com/deltaharness/delta/internal/tool/search"
	"github.com/deltaharness/delta/internal/tool/skills"
	"github.com/deltaharness/delta/internal/tool/todo"
	"github.com/deltaharness/delta/internal/vault"
	"github.com/deltaharness/delta/internal/version"
	"github.com/deltaharness/delta/internal/vision"
	"github.com/deltaharness/delta/internal/workspace"
)

// trashRetention is how long deleted workspace files stay in the trash; the
// sweep runs once at start.
const trashRetention = 7 * 24 * time.Hour

// parts is everything a running harness holds, for Serve and RunOnce.
type parts struct {
	status    func() any   // the /v1/status body
	vault     *vault.Vault // nil without a key
	mcp       *mcp.Manager // nil without servers (and in delta run)
	store     *store.Store
	workspace string // absolute path, for uploads
	files     *workspace.Root
	images    *vision.Registry
	self      *remember.File                  // DELTA.md and its revisions (restorable in safe mode too)
	skills    *skills.Index                   // DELTA_SKILLS=local outside safe mode; nil otherwise
	registry  atomic.Pointer[skills.Registry] // DELTA_SKILLS=mcp with a bound skill registry; nil otherwise
	learning  learningBinder                  // re-binds the registry and promotion as MCP tools connect
	memory    *memoryRail                     // nil in safe mode
	hydration *hydration                      // nil without DELTA_HYDRATE_* and in safe mode
	queue     *queue.Queue
	service   *engine.Service
	broker    *event.Broker       // every live event of this process, for the API's streams
	redact    func(string) string // vault values out of any text
	telemetry *telemetry.Exporter // nil unless TELEMETRY_URL (delta serve only)
	traces    *telemetry.Traces   // nil unless OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT (delta serve only)
	closers   closers             // what build opened, closed last first by close
	boot      store.Boot          // what Serve recorded in the meta table at start
	logger    *slog.Logger
	toolNames func(profile string) []string // a run's tool envelope by its placed tier
}

// build wires the harness over the database at dbPath. withMCP connects
// the configured MCP servers (the daemon does; `delta run` does not). The
// configuration's own warnings (cfg.Warnings) are not logged here: the
// command that loaded it logs them, once, before anything can fail.
func build(ctx context.Context, cfg config.Config, dbPath string, withMCP bool, logger *slog.Logger) (_ *parts, err error) {
	ws, err := workspace.Open(cfg.Workspace)
	if err != nil {
		return nil, err // workspace.Open names the workspace
	}
	if err := ws.SweepTrash(trashRetention); err != nil {
		logger.Warn("sweep workspace trash", "err", err)
	}
	b, err := bundle.Load(bundle.Options{
		Dir: cfg.Workspace, PolicyMaxTokens: cfg.PolicyMaxTokens, SelfMaxTokens: cfg.SelfMaxTokens,
		VocabOverride: cfg.Vocab, EngineVersion: version.Version, AgentID: cfg.AgentID, Profile: cfg.Profile,
		SafeMode: cfg.SafeMode,
	})
	if err != nil {
		return nil, fmt.Errorf("load bundle: %w", err)
	}
	for _, w := range b.Warnings() {
		logger.Warn(w)
	}
	prices, err := priceTable(cfg)
	if err != nil {
		return nil, err
	}
	provider, err := newCascade(cfg, logger)
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, dbPath)
	if err != nil {
		return nil, err
	}
	p := &parts{store: st, workspace: ws.Dir(), files: ws, logger: logger}
	p.closers.add("store", func(context.Context) error { return st.Close() })
	defer func() {
		if err != nil {
			err = errors.Join(err, p.close(context.WithoutCancel(ctx)))
		}
	}()

	// The vault: secrets at rest, resolved at egress, redacted everywhere.
	red := vault.NewRedactor()
	p.redact = red.Redact
	// The exporter's bearer is a credential like any other: it never
	// appears in a transcript, an event or an exported record.
	red.Register("TELEMETRY_TOKEN", cfg.TelemetryToken)
	// So are the daemon's own credentials: a tool that talks to a service
	// holding one (the schedule tools present the control token) could
	// otherwise hand it to the model in an echoed error page.
	// Values under 12 characters are placeholders (a local model's "ollama"
	// key), whose redaction would shred ordinary text.
	for name, v := range map[string]string{
		"DELTA_CONTROL_TOKEN": cfg.ControlToken, "DELTA_INSPECT_TOKEN": cfg.InspectToken,
		"MODEL_API_KEY": cfg.ModelAPIKey, "EXA_API_KEY": cfg.ExaAPIKey,
		"DELTA_BROKER_AUTH": cfg.Broker.Auth, "DELTA_VAULT_KEY": cfg.MCP.VaultKey,
	} {
		if len(v) >= 12 {
			red.Register(name, v)
		}
	}
	for k, v := range cfg.OTLP.Headers {
		red.Register("OTEL_EXPORTER_OTLP_HEADERS "+k, v)
	}
	if cfg.MCP.VaultKey != "" && !cfg.SafeMode {
		p.vault, err = vault.New(st, cfg.MCP.VaultKey, red)
		if err != nil {
			return nil, fmt.Errorf("open vault: %w", err)
		}
		// Every stored value is redacted from boot on, used or not.
		if rerr := p.vault.RegisterAll(ctx); rerr != nil {
			logger.Warn("vault: some secrets cannot be redacted", "err", rerr)
		}
	}
	// One daemon is the only writer of its SQLite file's plans; workers
	// sharing a database read them each time.
	plans := todo.New(st, todo.Options{Logger: logger, Cache: !store.IsPostgresURL(cfg.DB)})
	// Images Delta itself verified (upload, read_file, MCP) reach a
	// vision model; the record lives in this process only.
	p.images = vision.New(ws, vision.Options{Models: cfg.VisionModels, Logger: logger})
	reg, tools := buildTools(cfg, ws, p.vault, plans, p.images, logger)
	p.toolNames = tools.names
	broker := event.NewBroker()
	p.broker = broker
	reg.Add(recall.New(st, recall.Options{Record: recordEvent(st, broker, logger), Logger: logger}))
	// The self-file exists in every boot, so an operator can restore a
	// revision through the inspection API even in safe mode; the remember
	// tool does not: a recovery boot must not let the agent write itself.
	p.self = remember.New(remember.Options{Files: ws, Store: st, MaxBytes: b.SelfMaxBytes(),
		Record: recordEvent(st, broker, logger), Logger: logger})
	if cfg.SafeMode {
		tools.omitted[remember.Name] = "DELTA_SAFE_MODE=1"
		logger.Info("tool omitted", "tool", remember.Name, "reason", "safe mode")
	} else {
		reg.Add(p.self.Tool())
	}
	p.skills = addSkills(ctx, cfg, ws.Dir(), reg, tools, recordEvent(st, broker, logger), logger)
	addSubagent(cfg, ws.Dir(), st, provider, prices, reg, tools, logger)
	p.memory = newMemoryRail(cfg, b.Vocab().Namespace(), st, judge(provider, prices), red.Redact, broker, logger)
	explorer := addResearch(cfg, reg, tools, ws, logger)
	// Progressive tool loading: search_tools is a built-in, so it sits in
	// the index after the others and before any MCP tool.
	loader := search.New(st, search.Options{
		Tools: reg, Allowed: tools.names, Profile: runProfile(st),
		Pinned: cfg.PinnedTools, CoreVerbs: b.Vocab().CoreVerbs, Logger: logger,
	})
	reg.Add(loader.Tool())
	tools.loader = loader
	// The policy block depends on whether a reviewed-write tool exists,
	// which only the MCP servers can tell: it is decided once they are
	// connected, and again whenever tools join later.
	prompt := newLivePrompt(b, logger)
	if withMCP && len(cfg.MCP.Servers) > 0 && !cfg.SafeMode {
		var resolve func(string) (string, error)
		if p.vault != nil {
			resolve = p.vault.Resolver(context.WithoutCancel(ctx))
		}
		p.mcp = mcp.New(mcp.Options{Servers: cfg.MCP.Servers, Refresh: cfg.MCP.Refresh, Env: cfg.MCP.ChildEnv,
			Logger: logger, Resolve: resolve, Redact: red.Redact, SaveImage: saveImage(p.images),
			// An MCP call's ceiling is the tool timeout the operator set, so
			// a slow tool given more time gets it; with none (0) MCP calls
			// keep the client's own ceiling, since they are always timed.
			CallTimeout: cfg.ToolTimeout,
			// Tools a server reveals later (bobby's phases) join the
			// registry, searchable on the next turn.
			OnToolsAdded: func(ts []tool.Tool) {
				reg.AddMissing(ts...)
				prompt.bindTools(reg.Names())
				p.learning.add(ts)
			}})
		// Open never fails for a dead server: its tools are absent and
		// its state is in /v1/status.
		_ = p.mcp.Open(ctx)
		p.closers.add("mcp servers", p.mcp.Close)
		reg.AddMissing(p.mcp.Tools()...)
		if p.vault != nil {
			// A server that waited for a credential connects when it arrives.
			p.vault.OnPut(func(string) {
				ts := p.mcp.Retry(context.WithoutCancel(ctx))
				reg.AddMissing(ts...)
				prompt.bindTools(reg.Names())
				p.learning.add(ts)
			})
		}
	}
	prompt.bindTools(reg.Names())
	// The learning rail binds to the product's tools connected at boot: the
	// skill registry (DELTA_SKILLS=mcp) and the promotion adapters. Its
	// loops start only then, so a reflection drained at start can stage a
	// promotion and a promotion owed since before a crash is sent. A server
	// that connects later (a credential arrived, tools revealed later)
	// re-decides both bindings, and a promotion staged for an adapter that
	// is bound now drains.
	p.memory.newPromoter(cfg, b.Vocab(), reg, broker, logger)
	var mcpTools []tool.Tool
	if p.mcp != nil {
		mcpTools = p.mcp.Tools()
	}
	p.learning.open(func(names []string) { p.bindLearning(cfg, b.Vocab(), names, reg, logger) }, mcpTools)
	p.closers.add("reflector", p.memory.start(ctx))
	// Hydration calls MCP tools detached from the run: it closes (and
	// waits for those calls) before the servers do.
	p.hydration = newHydration(cfg, b.Vocab().SubjectKeys, reg, st, red.Redact, broker.Publish, logger)
	p.hydration.check(reg)
	p.closers.add("hydration", p.hydration.close)
	p.status = func() any { return statusView(cfg, provider, tools, p) }

	// On a shared database the run checks its session lease at each
	// turn and checkpoint; on SQLite the writer lease covers the process.
	var leases engine.SessionLeases
	holder := ""
	if st.Shared() {
		holder = workerHolder(cfg.LeaseHolder)
		leases = sessionLeases{st: st, holder: holder, ttl: cfg.LeaseTTL}
	}
	eng := engine.New(engine.Options{
		Store: st, Broker: broker, Provider: provider,
		Models: append([]string{cfg.ModelPrimary}, cfg.ModelFallbacks...),
		Prompt: prompt, Tools: reg, Spill: ws, WorkspaceDir: ws.Dir(),
		ToolNames: tools.names, Resident: loader.Resident,
		AttemptBlocks: p.skillBlocks,
		TurnBlocks: func(ctx context.Context, sessionID string) []string {
			if b := plans.Block(ctx, sessionID); b != "" {
				return []string{b}
			}
			return nil
		},
		Budget: func(profile string) engine.Budget {
			bu := cfg.Budget(profile)
			return engine.Budget{Steps: bu.Steps, Tokens: bu.Tokens, CostUSD: bu.CostUSD}
		},
		Prices: prices, ReasoningEffort: cfg.ReasoningEffort,
		ToolTimeout: cfg.ToolTimeout, ResultMax: cfg.ToolResultMaxBytes, ToolArgMax: cfg.ToolArgMaxBytes, CompactAt: cfg.CompactAtTokens,
		Redact: red.Redact, CallContext: runTokenContext, Attach: p.images.Attach,
		CaptureCalls: cfg.CaptureCalls, Logger: logger,
		Reflect: p.memory.reflect, Reflected: p.memory.reflected, Leases: leases,
	})
	// A dial the spine and the offered tools' schemas already fill never
	// compacts: every request would go whole until the provider refuses
	// it. Such a dial refuses to boot, naming the value that works.
	if resident := tools.resident(); cfg.CompactAtTokens < eng.SmallestDial(resident) {
		return nil, fmt.Errorf("configuration: %w", &config.FieldError{
			Var: "DELTA_COMPACT_AT_TOKENS", Value: strconv.Itoa(cfg.CompactAtTokens),
			Err: fmt.Errorf("%w: the system prompt and the schemas of the %d tools offered leave compaction no room under it; set at least %d, or offer fewer tools (DELTA_ALLOWED_TOOLS)",
				config.ErrInvalid, len(resident), eng.SmallestDial(resident))})
	}
	explorer.bind(eng)
	p.queue = queue.New(st, eng.ExecuteHead, cfg.MaxConcurrency, logger)
	if holder != "" {
		p.queue.Share(st, holder, cfg.LeaseTTL)
	}
	p.service = engine.NewService(st, p.queue, eng)
	return p, nil
}

// priceTable is the built-in price table with DELTA_MODEL_PRICES on top. A
// document that does not parse refuses to boot, named like any other
// invalid variable: a wrong price would weaken the dollar budget silently.
func priceTable(cfg config.Config) (map[string]model.Price, error) {
	if cfg.ModelPrices == "" {
		return model.Prices(nil), nil
	}
	over, err := model.ParsePrices([]byte(cfg.ModelPrices))
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", &config.FieldError{
			Var: "DELTA_MODEL_PRICES", Value: cfg.ModelPrices, Err: fmt.Errorf("%w: %v", config.ErrInvalid, err)})
	}
	return model.Prices(over), nil
}

// runProfile reads the profile a run was placed at from its stored request.
func runProfile(st *store.Store) func(ctx context.Context, runID string) (string, error) {
	return func(ctx context.Context, runID string) (string, error) {
		r, err := st.Run(ctx, runID)
		if err != nil {
			return "", err
		}
		var req engine.Request
		if err := json.Unmarshal(r.Request, &req); err != nil {
			return "", fmt.Errorf("decode request of run %s: %w", runID, err)
		}
		return req.Profile, nil
	}
}

// close releases what build opened, in reverse order, and reports every
// failure.
func (p *parts) close(ctx context.Context) error { return p.closers.close(ctx) }

// shutdownWait bounds each step of shutdown that waits: in-flight requests
// finishing, then runs stopping at their next interruption point.
const shutdownWait = 5 * time.Second

// Serve runs the daemon until ctx is done. The port is bound before any
// work resumes, so a duplicate start fails before touching running rows.
// Shutdown closes everything in reverse order of opening; the error joins
// the serve error with every close error.
func Serve(ctx context.Context, cfg config.Config, logger *slog.Logger) (err error) {
	addr := net.JoinHostPort(cfg.Bind, strconv.Itoa(cfg.Port))
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	var open closers
	defer func() { err = errors.Join(err, open.close(context.WithoutCancel(ctx))) }()
	open.add("listener", func(context.Context) error {
		if err := ln.Close(); !errors.Is(err, net.ErrClosed) { // the HTTP server closes it once it serves
			return err
		}
		return nil
	})
	shared := store.IsPostgresURL(cfg.DB)
	if !shared {
		unlock, err := lockDB(cfg.DB)
		if err != nil {
			return err
		}
		open.add("database lock", func(context.Context) error { return unlock() })
	}
	p, err := build(ctx, cfg, cfg.DB, true, logger)
	if err != nil {
		return err
	}
	open.add("harness", p.close)
	var leaseLost <-chan error
	if shared {
		// Workers share the database: each holds its sessions' leases, not
		// the whole database's.
		stopWorker, err := joinWorkers(ctx, cfg, p, logger)
		if err != nil {
			return err
		}
		open.add("run listener", stopWorker)
	} else {
		// The lease comes before any run resumes: the file lock stops a
		// second process on this host, the lease one on another host
		// sharing the file.
		lost, stopLease, err := holdLease(ctx, p.store, cfg.LeaseHolder, cfg.LeaseTTL, logger)
		if err != nil {
			return err
		}
		leaseLost = lost
		open.add("writer lease", func(context.Context) error { return stopLease() })
	}
	// Every boot records which harness opened the database and at which
	// schema, for upgrades and rollbacks to be checked against.
	if p.boot, err = p.store.RecordBoot(ctx, version.Version, cfg.Build); err != nil {
		return err
	}
	logger.Info("boot recorded", "harness_version", p.boot.HarnessVersion, "build", p.boot.Build, "schema_version", p.boot.SchemaVersion)
	if cfg.TelemetryURL != "" {
		p.telemetry, err = telemetry.New(ctx, telemetry.Options{
			URL: cfg.TelemetryURL, Token: cfg.TelemetryToken, AgentID: cfg.AgentID, Payloads: cfg.CapturePayloads,
			Redact: p.redact, Outbox: p.store, Logger: logger.With(event.KeySystem, "telemetry"),
		})
		if err != nil {
			return fmt.Errorf("start telemetry exporter: %w", err)
		}
		p.telemetry.Start(ctx)
		open.add("telemetry exporter", p.telemetry.Close)
		logger.Info("telemetry export on", "daemon_id", p.telemetry.DaemonID(), "capture_payloads", cfg.CapturePayloads)
	}
	if cfg.OTLP.TracesURL != "" {
		p.traces, err = telemetry.NewTraces(ctx, telemetry.TracesOptions{
			URL: cfg.OTLP.TracesURL, Headers: cfg.OTLP.Headers, ServiceName: cfg.OTLP.ServiceName, Resource: cfg.OTLP.Resource, Gzip: cfg.OTLP.Gzip,
			TLS: telemetry.OTLPTLS{CAFile: cfg.OTLP.CAFile, CertFile: cfg.OTLP.CertFile, KeyFile: cfg.OTLP.KeyFile,
				CAVar: cfg.OTLP.CAVar, CertVar: cfg.OTLP.CertVar, KeyVar: cfg.OTLP.KeyVar},
			AgentID: cfg.AgentID, Payloads: cfg.CapturePayloads, Redact: p.redact, Store: p.store,
			Logger: logger.With(event.KeySystem, "otlp"),
		})
		if err != nil {
			return fmt.Errorf("start otlp trace exporter: %w", err)
		}
		p.traces.Start(ctx)
		open.add("otlp trace exporter", p.traces.Close)
		logger.Info("otlp trace export on", "endpoint", p.traces.Endpoint(), "capture_payloads", cfg.CapturePayloads)
	}
	if cfg.Profiling {
		// Sample contention so the block and mutex profiles have something
		// to show: about one in 100 contended mutex events, and blocking
		// events weighted by duration around 10 µs. Off, both cost nothing.
		runtime.SetMutexProfileFraction(100)
		runtime.SetBlockProfileRate(10_000)
		logger.Warn("runtime profiles served under /v1/dev/pprof/ (DELTA_PPROF)")
	}
	handler := api.New(api.Options{
		Service: p.service, ControlToken: cfg.ControlToken, InspectToken: cfg.InspectToken, InspectOff: !cfg.Inspect,
		MaxBodyBytes: cfg.MaxBodyBytes, Version: version.Version, Build: cfg.Build, Placement: cfg.PlaceRequest, Logger: logger,
		Status: p.status, Secrets: secretsOf(p.vault), InspectWrite: cfg.InspectWrite, Profiling: cfg.Profiling, SelfFile: p.self,
		StrictTenant: cfg.StrictTenant, TrustReviewMetadata: cfg.TrustReviewMetadata, DevConfig: func() any { return devConfig(cfg, p) },
		Uploads: &api.Uploads{Dir: p.workspace, Stored: verifyUpload(p.images, logger)},
		Files:   p.files,
	})
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	if err := p.queue.Open(); err != nil {
		return err
	}
	// Interrupt-style: runs stop at their next interruption point and
	// resume on the next start.
	open.add("queue", func(ctx context.Context) error {
		qctx, cancel := context.WithTimeout(ctx, shutdownWait)
		defer cancel()
		return p.queue.Close(qctx)
	})
	stopSweep := sweepRetention(ctx, cfg, p.store, logger)
	open.add("retention sweep", func(context.Context) error { stopSweep(); return nil })
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	open.add("http server", func(ctx context.Context) error {
		sctx, cancel := context.WithTimeout(ctx, shutdownWait)
		defer cancel()
		err := srv.Shutdown(sctx)
		if errors.Is(err, context.DeadlineExceeded) {
			// Streams still open (SSE followers) never go idle: cut them.
			// The events they follow are durable and resumable by id.
			return srv.Close()
		}
		return err
	})
	logger.Info("delta listening", "addr", ln.Addr().String(), "version", version.Version, "db", p.store.Path(), "workspace", cfg.Workspace)
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	case serveErr = <-leaseLost:
		logger.Error("stopping: another process owns the writer lease", "err", serveErr)
	}
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	// The deferred close stops taking requests, interrupts runs, releases
	// the lease and closes the database, in that order.
	return serveErr
}

// secretsOf keeps a nil vault a nil interface, so the API answers 503.
func secretsOf(v *vault.Vault) api.Secrets {
	if v == nil {
		return nil
	}
	return v
}

// sweepRetention prunes old events and finished runs' journal rows once now
// and then every cfg.RetentionSweep (0 = only now). It returns a stop func.
func sweepRetention(ctx context.Context, cfg config.Config, st *store.Store, logger *slog.Logger) func() {
	sweep := func() {
		now := time.Now()
		r, err := st.Sweep(ctx, now.AddDate(0, 0, -cfg.RetentionEventsDays), now.AddDate(0, 0, -cfg.RetentionJournalDays),
			store.Keep{Unexported: cfg.TelemetryURL != "", Untraced: cfg.OTLP.TracesURL != ""})
		if err != nil {
			logger.Warn("retention sweep", "err", err)
			return
		}
		if r.Events+r.Journal > 0 {
			logger.Info("retention sweep", "events", r.Events, "journal", r.Journal)
		}
	}
	sweep()
	if cfg.RetentionSweep <= 0 {
		return func() {}
	}
	return every(ctx, cfg.RetentionSweep, func() bool { sweep(); return true })
}
