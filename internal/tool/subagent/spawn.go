package subagent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/deltaharness/delta/internal/model"
)

// killGrace is how long Wait waits for output pipes held open by a process
// that left the child's group.
const killGrace = 2 * time.Second

// maxOutput bounds what is kept of the child's stdout; maxStderr its stderr.
const (
	maxOutput = 4 << 20
	maxStderr = 64 << 10
)

// child is the outcome of one `delta run` child that started.
type child struct {
	text    string      // the final answer, marker removed, trimmed
	charged model.Usage // what was charged to the parent (zero without a valid marker)
	stderr  string      // trimmed
	exitErr error       // nil: exit 0; *exec.ExitError: the child failed
}

// failed reports whether the child exited non-zero.
func (c child) failed() bool { return c.exitErr != nil }

// spawn runs `delta run` with task on stdin in the shared workspace, with the
// given budget and depth+1, and charges the usage its marker reports
// (bounded by that budget) to runID. Cancelling ctx kills the child's whole
// process group; spawn still charges what the child reported and then
// returns ctx's error. Other errors mean the child could not be run at all.
func (o Options) spawn(ctx context.Context, tool, runID, task string, tokens int64, cost float64) (child, error) {
	env := append(append([]string(nil), o.Env...),
		"DELTA_MAX_TOKENS="+strconv.FormatInt(tokens, 10),
		"DELTA_MAX_COST_USD="+strconv.FormatFloat(cost, 'f', -1, 64),
		"DELTA_SUBAGENT_DEPTH="+strconv.Itoa(o.Depth+1),
	)
	// `delta run` reads the task from stdin when given no argument: a task
	// starting with "-" cannot be mistaken for a flag, and its size is not
	// bounded by the argument limit.
	cmd := exec.Command(o.Exe, "run") //nolint:noctx // ctx kills the whole process group below, which CommandContext cannot
	cmd.Stdin = strings.NewReader(task)
	cmd.Dir = o.Dir
	cmd.Env = env
	var stdout, stderr capped
	stdout.max, stderr.max = maxOutput, maxStderr
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Its own process group, and it dies with the daemon (procAttr).
	cmd.SysProcAttr = procAttr()
	cmd.WaitDelay = killGrace
	if err := cmd.Start(); err != nil {
		return child{}, fmt.Errorf("%s: start %s: %w", tool, o.Exe, err)
	}
	pgid := cmd.Process.Pid
	stop := context.AfterFunc(ctx, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	waitErr := cmd.Wait()
	stop()
	// Anything the child left running in its group goes with it.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)

	text, u, ok := ParseOutput(stdout.String())
	var charged model.Usage
	if !ok {
		// Fail open as zero, as the guide says, but say so.
		o.Logger.Warn(tool+": child printed no valid DELTA_USAGE line; charging zero", "run", runID)
	} else {
		charged = Bound(u, tokens, cost)
		if err := o.Charge(context.WithoutCancel(ctx), runID, charged); err != nil {
			o.Logger.Warn(tool+": charge child usage", "run", runID, "err", err)
		}
	}
	if ctx.Err() != nil {
		return child{charged: charged}, fmt.Errorf("%s: %w", tool, ctx.Err())
	}
	c := child{text: strings.TrimSpace(text), charged: charged, stderr: strings.TrimSpace(stderr.String())}
	var exit *exec.ExitError
	switch {
	case waitErr == nil, errors.Is(waitErr, exec.ErrWaitDelay):
	case errors.As(waitErr, &exit):
		c.exitErr = exit
	default:
		return c, fmt.Errorf("%s: wait: %w", tool, waitErr)
	}
	return c, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[truncated: %d of %d bytes shown]", cut, len(s))
}

// capped keeps the first max bytes written, plus the last 4 KiB, so the
// usage line survives a child that floods stdout.
type capped struct {
	buf  bytes.Buffer
	tail []byte
	max  int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	c.tail = append(c.tail, p...)
	if len(c.tail) > 4096 {
		c.tail = append([]byte(nil), c.tail[len(c.tail)-4096:]...)
	}
	return len(p), nil
}

func (c *capped) String() string {
	if c.buf.Len() < c.max {
		return c.buf.String()
	}
	return c.buf.String() + "\n" + string(c.tail)
}
