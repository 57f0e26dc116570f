package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/deltaharness/delta/internal/bundle"
	"github.com/deltaharness/delta/internal/config"
	"github.com/deltaharness/delta/internal/model/scripted"
)

// The demo's two requests. The task names the artifact (brief.md) so a real
// model and the scripted one write the same file; the follow-up names a
// second file and no .md word before it, so the scripted provider writes
// email.md and leaves brief.md alone.
const (
	demoTask = "Write a short decision brief on adopting Delta for our team's research agents " +
		"and save it as brief.md. Cover the goal, the main risks and the next steps."
	demoFollowUp = "Thanks. Now write a three-line executive email based on that brief and save it as email.md."
	demoArtifact = scripted.DefaultBriefPath
	demoModel    = "delta-demo-script" // the model name the scripted provider is asked for
)

// demoTimeout bounds the whole demo, so a stuck provider cannot hang it.
const demoTimeout = 10 * time.Minute

// maxArtifactLines bounds how much of the artifact the demo prints.
const maxArtifactLines = 60

// demoCommand runs one complete sample task end to end and narrates it:
// scaffold a bundle, start the daemon as a child on a free loopback port,
// create a task, show its events, show the artifact, continue the
// conversation once, stop the daemon. It exits 0 only if every step worked.
type demoCommand struct{ env }

// demoSynopsis is the argument synopsis `delta demo` shows in help and usage errors.
const demoSynopsis = "[--keep] [--dir D] [--browse]"

func (c *demoCommand) Run(ctx context.Context, args []string) error {
	fs := newFlagSet("demo")
	keep := fs.Bool("keep", false, "keep the temporary bundle directory afterwards")
	dirFlag := fs.String("dir", "", "use (and keep) this bundle `directory` instead of a temporary one")
	browse := fs.Bool("browse", false, "run the browsing agent: bobby (next to delta or on PATH) as delta's MCP server, against a local shop")
	if err := parseFlags(fs, c.env, demoSynopsis, args, ""); err != nil {
		return helpOK(err)
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, demoTimeout)
	defer cancel()

	cfg, err := config.Load(c.lookup)
	if err != nil {
		return fmt.Errorf("demo: configuration: %w", err)
	}

	d := &demo{env: c.env, cfg: cfg, dir: *dirFlag, keep: *keep || *dirFlag != "", browse: *browse}
	if d.browse {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("demo: find the delta executable: %w", err)
		}
		if d.bobby, err = findBobby(self, exec.LookPath); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		if err := checkChromium(); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	}
	runErr := d.run(ctx)
	switch {
	case runErr == nil:
	case parent.Err() != nil:
		runErr = fmt.Errorf("interrupted (%w)", runErr)
	case ctx.Err() != nil:
		runErr = fmt.Errorf("gave up after %s (%w)", demoTimeout, runErr)
	}
	d.cleanup(runErr)
	if runErr != nil {
		return fmt.Errorf("demo: %w", runErr)
	}
	return nil
}

// demo is the state of one demo run, so cleanup can undo what run started.
type demo struct {
	env
	cfg     config.Config
	dir     string // bundle directory (absolute once created)
	tempDir bool   // dir was created by the demo
	keep    bool
	fake    *scripted.Server
	child   *daemonChild
	logPath string
	stopped bool // the child was stopped and its outcome reported

	browse bool      // --browse: the browsing agent against the demo shop
	bobby  string    // the bobby binary (--browse)
	shop   *demoShop // the fixture shop (--browse)
}

func (d *demo) say(format string, a ...any) { fmt.Fprintf(d.stdout, format+"\n", a...) }

func (d *demo) run(ctx context.Context) error {
	if d.browse {
		d.say("Delta demo: a browsing agent, end to end (bobby drives a real Chromium).\n")
	} else {
		d.say("Delta demo: one complete task, end to end.\n")
	}

	// 1. A bundle.
	if d.dir == "" {
		dir, err := os.MkdirTemp("", "delta-demo-")
		if err != nil {
			return fmt.Errorf("create a temporary bundle directory: %w", err)
		}
		d.dir, d.tempDir = dir, true
	}
	abs, err := filepath.Abs(d.dir)
	if err != nil {
		return fmt.Errorf("bundle %s: %w", d.dir, err)
	}
	d.dir = abs
	created, err := bundle.Scaffold(d.dir)
	if err != nil {
		return fmt.Errorf("scaffold bundle %s: %s", d.dir, oneProblem(err))
	}
	d.say("  bundle   %s (%d of 5 bundle files created, as `delta init` does)", d.dir, len(created))

	// 2. A model.
	overrides := map[string]string{}
	if d.cfg.ModelAPIKey != "" {
		d.say("  model    %s at %s", d.cfg.ModelPrimary, d.cfg.ModelBaseURL)
	} else {
		script, what := scripted.DemoScript(), "scripted demo provider"
		if d.browse {
			script, what = scripted.BrowseScript(), "scripted browsing agent"
		}
		fake, err := scripted.Start(script)
		if err != nil {
			return err
		}
		d.fake = fake
		maps.Copy(overrides, scriptedEnv(fake.URL()))
		d.say("  model    %s (no MODEL_API_KEY/OPENROUTER_API_KEY set)", what)
	}

	// 3. The daemon, as a child on a free loopback port with a fresh
	// database and its own tokens (so a stray token in the shell cannot
	// lock the demo out, and nothing else on the machine can drive it).
	port, err := freePort()
	if err != nil {
		return err
	}
	stateDir := filepath.Join(d.dir, ".delta")
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", stateDir, err)
	}
	db := filepath.Join(stateDir, "demo.db")
	for _, p := range []string{db, db + "-wal", db + "-shm"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove the previous demo database: %w", err)
		}
	}
	control, inspect := randomToken(), randomToken()
	overrides["DELTA_DB"] = db
	overrides["DELTA_BIND"] = "127.0.0.1"
	overrides["DELTA_INSPECT"] = "on"
	overrides["DELTA_CONTROL_TOKEN"] = control
	overrides["DELTA_INSPECT_TOKEN"] = inspect
	if d.browse {
		if d.shop, err = startDemoShop(ctx); err != nil {
			return err
		}
		d.say("  shop     %s (the demo's fixture shop, served by this process)", d.shop.url)
		if overrides["DELTA_MCP_SERVERS"], err = browseServers(d.bobby, stateDir); err != nil {
			return err
		}
	}
	childEnv := config.DevEnv(d.dir, environMap(d.environ()), overrides, port)

	d.logPath = filepath.Join(stateDir, "demo-daemon.log")
	logFile, err := os.Create(d.logPath)
	if err != nil {
		return fmt.Errorf("create daemon log: %w", err)
	}
	defer logFile.Close()
	d.child, err = startDaemon(childEnv, logFile, logFile)
	if err != nil {
		return err
	}
	base := healthBase("127.0.0.1", port)
	if err := d.child.waitHealthy(ctx, base); err != nil {
		return fmt.Errorf("start the daemon: %w", err)
	}
	d.say("  daemon   %s (pid %d; log: %s)", base, d.child.pid(), d.logPath)
	cl := newDaemonClient("127.0.0.1", port, control, inspect)
	if d.browse {
		tools, err := waitBobby(ctx, cl)
		if err != nil {
			return err
		}
		d.say("  bobby    %s (delta's stdio MCP server, %d tools)\n", d.bobby, tools)
		return d.runBrowse(ctx, cl, childEnv["DELTA_WORKSPACE"])
	}
	d.say("")

	// 4. A task, and its events as they happen.
	artifact := ""
	task, err := d.runTask(ctx, cl, demoTask, func(ev streamEvent) {
		if ev.Name == "tool.call" && artifact == "" {
			artifact = writtenPath(ev.Payload)
		}
	})
	if err != nil {
		return err
	}

	// 5. The artifact, read from the workspace.
	if artifact == "" {
		artifact = demoArtifact
	}
	content, err := readArtifact(childEnv["DELTA_WORKSPACE"], artifact)
	if err != nil {
		return err
	}
	d.say("\nArtifact %s (%d bytes, %s)", artifact, len(content), filepath.Join(childEnv["DELTA_WORKSPACE"], artifact))
	lines := strings.Split(strings.TrimRight(string(content), "\n"), "\n")
	for i, line := range lines {
		if i == maxArtifactLines {
			d.say("  │ … (%d more lines)", len(lines)-i)
			break
		}
		d.say("  │ %s", line)
	}

	// 6. Continue the conversation once.
	d.say("\nFollow-up (previous_response_id=%s)", task.ID)
	d.say("  > %s", wrap(demoFollowUp, 86, "    "))
	var resp responseBody
	if err := cl.call(ctx, "POST", "/v1/responses", map[string]any{"input": demoFollowUp, "previous_response_id": task.ID}, &resp); err != nil {
		return fmt.Errorf("continue the conversation: %w", err)
	}
	d.say("  %s", wrap(resp.OutputText, 88, "  "))
	if resp.Status != "completed" {
		return fmt.Errorf("follow-up response %s ended %s%s", resp.ID, resp.Status, errorSuffix(resp.Error))
	}

	// 7. Stop the daemon and judge its exit.
	d.stopped = true
	if err := d.child.stop(stopGrace); err != nil {
		return fmt.Errorf("stop the daemon: %w", err)
	}
	d.say("\nDaemon stopped cleanly.")
	d.say("Demo passed: the task finished, %s is in the workspace, and the conversation continued.", artifact)
	return nil
}

// runTask sends input as a task and prints it, each event of its run as
// it happens (after seen, which may note what it needs from the event),
// and the answer. It fails unless the task ends done.
func (d *demo) runTask(ctx context.Context, cl *daemonClient, input string, seen func(streamEvent)) (taskBody, error) {
	var task taskBody
	if err := cl.call(ctx, "POST", "/v1/tasks", map[string]any{"input": input}, &task); err != nil {
		return task, fmt.Errorf("create the task: %w", err)
	}
	d.say("Task")
	d.say("  %s", wrap(input, 88, "  "))
	d.say("  accepted as %s (%s)\n", task.ID, task.Status)
	d.say("Events (from /v1/dev/stream)")
	err := followRun(ctx, cl, task.ID, func(ev streamEvent) error {
		seen(ev)
		if line, ok := summarize(ev.Name, ev.Payload); ok {
			d.say("  %-14s %s", ev.Name, line)
		}
		return nil
	})
	if err != nil {
		return task, fmt.Errorf("follow task %s: %w", task.ID, err)
	}
	final, err := getTask(ctx, cl, task.ID)
	if err != nil {
		return task, err
	}
	if final.Status != "done" {
		return task, fmt.Errorf("task %s ended %s%s", task.ID, final.Status, errorSuffix(final.Error))
	}
	if final.Result != nil {
		d.say("\nAnswer")
		d.say("  %s", wrap(final.Result.OutputText, 88, "  "))
	}
	return task, nil
}

// cleanup stops what run started. On failure it shows the end of the
// daemon log and keeps the bundle for inspection.
func (d *demo) cleanup(runErr error) {
	if d.child != nil && !d.stopped {
		_ = d.child.stop(stopGrace)
	}
	if d.fake != nil {
		_ = d.fake.Close()
	}
	if d.shop != nil {
		_ = d.shop.Close(context.Background())
	}
	if runErr != nil && d.logPath != "" {
		if tail := tailFile(d.logPath, 20); tail != "" {
			fmt.Fprintf(d.stderr, "last daemon log lines (%s):\n%s\n", d.logPath, tail)
		}
	}
	switch {
	case d.dir == "":
	case runErr != nil:
		// Kept for inspection, temporary or not, but only named when it
		// is there: a --dir that is a file, or could not be made, is not
		// a bundle to explore.
		if st, err := os.Stat(d.dir); err == nil && st.IsDir() {
			fmt.Fprintf(d.stderr, "the demo bundle is kept for inspection at %s\n", d.dir)
		}
	case d.keep:
		d.say("The bundle is kept at %s; run `delta dev %s` to explore it in the Cockpit.", d.dir, d.dir)
	case d.tempDir:
		if err := os.RemoveAll(d.dir); err != nil {
			fmt.Fprintf(d.stderr, "delta: demo: remove %s: %v\n", d.dir, err)
			return
		}
		d.say("Removed the temporary bundle (run `delta demo --keep` to keep it and explore it with `delta dev`).")
	}
}

// writtenPath is the "path" argument of a write_file tool.call payload.
func writtenPath(p json.RawMessage) string {
	var tc struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(p, &tc) != nil || tc.Name != "write_file" {
		return ""
	}
	return writtenPathArg(tc.Arguments)
}

// readArtifact reads a model-chosen path inside the workspace, refusing
// anything that is not a plain local path.
func readArtifact(workspace, rel string) ([]byte, error) {
	clean := filepath.Clean(filepath.FromSlash(rel))
	if !filepath.IsLocal(clean) {
		return nil, fmt.Errorf("artifact path %q is not inside the workspace", rel)
	}
	b, err := os.ReadFile(filepath.Join(workspace, clean))
	if err != nil {
		return nil, fmt.Errorf("read the artifact: %w", err)
	}
	return b, nil
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b)
}

// tailFile returns the last n lines of a (bounded) file, or "".
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const maxTail = 256 << 10
	if st, err := f.Stat(); err == nil && st.Size() > maxTail {
		_, _ = f.Seek(st.Size()-maxTail, io.SeekStart)
	}
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxTail)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// wrap folds text to width columns, continuing lines with indent.
func wrap(text string, width int, indent string) string {
	var b bytes.Buffer
	for i, para := range strings.Split(strings.TrimSpace(text), "\n") {
		if i > 0 {
			b.WriteString("\n" + indent)
		}
		col := 0
		for j, w := range strings.Fields(para) {
			if j > 0 {
				if col+1+len(w) > width {
					b.WriteString("\n" + indent)
					col = 0
				} else {
					b.WriteByte(' ')
					col++
				}
			}
			b.WriteString(w)
			col += len(w)
		}
	}
	return b.String()
}
