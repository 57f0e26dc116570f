package browser

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// instance is one launched Chromium process. A crash ends the instance; the
// Runtime replaces it with a new one on the next NewSession.
type instance struct {
	rt      *Runtime
	log     *slog.Logger
	dataDir string
	pid     int

	allocCancel context.CancelFunc
	ctx         context.Context // the first chromedp context: its end is the browser's end
	cancel      context.CancelFunc
	dead        chan struct{} // closed when ctx is done
	closing     atomic.Bool
	shutOnce    sync.Once
	shutErr     error

	mu       sync.Mutex
	sessions map[cdp.BrowserContextID]*Session

	caps captures // downloads the pages started
}

// launch starts a Chromium with a fresh profile directory.
func (r *Runtime) launch(ctx context.Context) (*instance, error) {
	exe, err := r.execPath()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(r.opts.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("launch chromium: data dir: %w", err)
	}
	dir, err := os.MkdirTemp(r.opts.DataDir, "chromium-profile-")
	if err != nil {
		return nil, fmt.Errorf("launch chromium: profile dir: %w", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(DefaultWindowWidth, DefaultWindowHeight),
	)
	for _, f := range append(slices.Clone(DefaultFlags), r.opts.ExtraFlags...) {
		name, value, ok := parseFlag(f)
		if !ok {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("launch chromium: %w", invalidf("flag %q must look like --name or --name=value", f))
		}
		opts = append(opts, chromedp.Flag(name, value))
	}

	log := r.log
	allocCtx, allocCancel := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, bcancel := chromedp.NewContext(allocCtx,
		chromedp.WithLogf(func(f string, a ...any) { log.Debug("chromedp: " + fmt.Sprintf(f, a...)) }),
		chromedp.WithErrorf(func(f string, a ...any) { log.Debug("chromedp error: " + fmt.Sprintf(f, a...)) }),
	)
	inst := &instance{
		rt:          r,
		log:         log,
		dataDir:     dir,
		allocCancel: allocCancel,
		ctx:         bctx,
		cancel:      bcancel,
		dead:        make(chan struct{}),
		sessions:    make(map[cdp.BrowserContextID]*Session),
	}

	// The first Run ties the browser's life to bctx, so it must not carry a
	// timeout; the launch bound is applied around it instead.
	errc := make(chan error, 1)
	go func() { errc <- chromedp.Do(bctx) }()
	timer := time.NewTimer(r.opts.LaunchTimeout)
	defer timer.Stop()
	select {
	case err = <-errc:
	case <-ctx.Done():
		err = ctx.Err()
	case <-timer.C:
		err = fmt.Errorf("no answer after %s", r.opts.LaunchTimeout)
	}
	if err == nil {
		if c := chromedp.FromContext(bctx); c != nil && c.Browser != nil && c.Browser.Process() != nil {
			inst.pid = c.Browser.Process().Pid
		}
		err = chromedp.ListenBrowser(bctx, inst.onBrowserEvent)
	}
	if err != nil {
		bcancel()
		allocCancel()
		killLeftovers(dir)
		os.RemoveAll(dir)
		return nil, fmt.Errorf("launch chromium %s: %w", exe, err)
	}

	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		<-bctx.Done()
		close(inst.dead)
		if !inst.closing.Load() {
			log.Error("chromium exited unexpectedly", "pid", inst.pid)
			inst.failSessions()
		}
	}()
	log.Info("chromium launched", "pid", inst.pid, "exec", exe)
	return inst, nil
}

func (in *instance) alive() bool {
	select {
	case <-in.dead:
		return false
	default:
		return true
	}
}

// callCtx derives a context for a browser-level call: it carries the
// chromedp browser context, ends with ctx and after timeout.
func (in *instance) callCtx(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithTimeout(in.ctx, timeout)
	stop := context.AfterFunc(ctx, cancel)
	return cctx, func() { stop(); cancel() }
}

// classify turns an error of a call into ErrBrowserCrashed when the browser
// is gone.
func (in *instance) classify(err error) error {
	if err == nil {
		return nil
	}
	if !in.alive() {
		if in.closing.Load() {
			return fmt.Errorf("%w: %w", ErrNotOpen, err)
		}
		return fmt.Errorf("%w: %w", ErrBrowserCrashed, err)
	}
	return err
}

func (in *instance) addSession(s *Session) {
	in.mu.Lock()
	in.sessions[s.contextID] = s
	in.mu.Unlock()
}

func (in *instance) removeSession(s *Session) {
	in.mu.Lock()
	delete(in.sessions, s.contextID)
	in.mu.Unlock()
}

func (in *instance) session(id cdp.BrowserContextID) *Session {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.sessions[id]
}

// sessionList is the instance's sessions, copied under the lock so the
// caller can act on them without holding it.
func (in *instance) sessionList() []*Session {
	in.mu.Lock()
	defer in.mu.Unlock()
	ss := make([]*Session, 0, len(in.sessions))
	for _, s := range in.sessions {
		ss = append(ss, s)
	}
	return ss
}

// failSessions marks the sessions of a crashed browser.
func (in *instance) failSessions() {
	ss := in.sessionList()
	for _, s := range ss {
		s.markClosed(ErrBrowserCrashed)
	}
}

// onBrowserEvent runs on the browser's read loop: it must not block or send
// commands, so the work is handed to goroutines.
func (in *instance) onBrowserEvent(ev any) {
	switch ev := ev.(type) {
	case *browser.EventDownloadWillBegin, *browser.EventDownloadProgress:
		in.onDownload(ev)
	case *target.EventTargetCreated:
		info := ev.TargetInfo
		if info == nil || info.Type != "page" {
			return
		}
		if s := in.session(info.BrowserContextID); s != nil {
			s.popupChecks.Add(1)
			go func() {
				defer s.popupChecks.Add(-1)
				s.adoptPopup(info)
			}()
		}
	case *target.EventTargetDestroyed:
		ss := in.sessionList()
		// Closing the page sends commands, which must not run on this loop.
		go func() {
			for _, s := range ss {
				s.targetGone(ev.TargetID)
			}
		}()
	}
}

// shutdown closes Chromium gracefully if it answers, kills it otherwise,
// waits for the process, kills any child left behind and removes the
// profile directory.
func (in *instance) shutdown(ctx context.Context) error {
	in.shutOnce.Do(func() {
		in.closing.Store(true)
		if in.alive() {
			cctx, cancel := context.WithTimeout(in.ctx, 5*time.Second)
			stop := context.AfterFunc(ctx, cancel)
			// A graceful close lets Chromium flush its profile; its
			// error only means we fall back to the kill below.
			_ = chromedp.Cancel(cctx)
			stop()
			cancel()
		}
		in.cancel()      // waits for the tab handlers and the process
		in.allocCancel() // waits for the allocator's goroutines
		killLeftovers(in.dataDir)
		if err := removeAllRetry(in.dataDir); err != nil {
			in.shutErr = fmt.Errorf("remove profile dir %s: %w", in.dataDir, err)
		}
		in.log.Info("chromium stopped", "pid", in.pid)
	})
	return in.shutErr
}

// killLeftovers kills the processes still started with this profile dir.
// Chromium's helpers (zygote, network service) can outlive a killed parent;
// the profile dir is unique per launch, so its --user-data-dir switch names
// exactly our processes.
func killLeftovers(dir string) {
	want := []byte("--user-data-dir=" + dir)
	deadline := time.Now().Add(2 * time.Second)
	for quiet := 0; quiet < 3 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if n := killProcessesUsing(want); n == 0 {
			quiet++
		} else {
			quiet = 0
		}
	}
}

func killProcessesUsing(want []byte) int {
	n := 0
	for _, pid := range pidsUsing(want) {
		if pid != os.Getpid() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			n++
		}
	}
	return n
}

// processesUsing counts live processes started with the profile dir; tests
// use it to prove nothing leaked.
func processesUsing(dir string) int {
	return len(pidsUsing([]byte("--user-data-dir=" + dir)))
}

// pidsUsing lists the processes whose command line has the argument want.
// Chromium's helpers rewrite their title, so their /proc cmdline is one
// space-separated string: an argument ends at a NUL, a space or the end.
func pidsUsing(want []byte) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(cmdline) == 0 {
			continue // gone, or a zombie (empty cmdline)
		}
		if hasArg(cmdline, want) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// hasArg reports whether want occurs in cmdline as a whole argument.
func hasArg(cmdline, want []byte) bool {
	sep := func(b byte) bool { return b == 0 || b == ' ' }
	for i := 0; ; {
		j := bytes.Index(cmdline[i:], want)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(want)
		if (start == 0 || sep(cmdline[start-1])) && (end == len(cmdline) || sep(cmdline[end])) {
			return true
		}
		i = start + 1
	}
}

// removeAllRetry removes dir; Chromium helpers can still be writing into it
// for a moment after they are killed.
func removeAllRetry(dir string) error {
	var err error
	for range 20 {
		if err = os.RemoveAll(dir); err == nil {
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	return err
}

// parseFlag splits "--name" or "--name=value" into a chromedp flag.
func parseFlag(f string) (name string, value any, ok bool) {
	if !strings.HasPrefix(f, "--") || len(f) < 3 {
		return "", nil, false
	}
	f = f[2:]
	if n, v, found := strings.Cut(f, "="); found {
		if n == "" {
			return "", nil, false
		}
		return n, v, true
	}
	return f, true, true
}
