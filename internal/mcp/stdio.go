package mcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/deltaharness/delta/internal/clip"
)

// MaxMessageBytes bounds one message from a server, on either transport: a
// stdio line, an HTTP response body. Past it the message is refused rather
// than buffered, so a server that answers with gigabytes (or never stops)
// cannot exhaust the daemon's memory.
const MaxMessageBytes = 16 << 20

// errTooLarge is the read error of a message past MaxMessageBytes.
var errTooLarge = fmt.Errorf("a message from the server exceeded %d MiB", MaxMessageBytes>>20)

// terminateAfter is how long a stdio server has to exit after its stdin
// closes, and again after SIGTERM, before it is killed.
func terminateAfter() time.Duration {
	if d := terminateAfterTest.Load(); d > 0 {
		return time.Duration(d)
	}
	return 2 * time.Second
}

// terminateAfterTest, when set, replaces terminateAfter's 2 s in tests of
// servers that ignore the first steps; atomic, since stops run in the
// background.
var terminateAfterTest atomic.Int64

// stdioTransport runs a stdio server as the leader of its own process
// group, so that stopping it stops everything it started: a wrapper
// script's real server, a helper that inherited its pipes. Stopping is the
// spec's sequence — stdin closed, then SIGTERM, then SIGKILL, each after
// terminateAfter — sent to the whole group, and the group is killed once
// the leader has exited, so no process outlives the session.
type stdioTransport struct {
	cmd  *exec.Cmd
	proc *proc // what this connection's process showed
}

// proc is what an operator needs to know of why a stdio server's
// connection ended: how the process exited, what it last wrote on stderr,
// and a line on stdout that was not a protocol message.
type proc struct {
	stderr    *stderrLog
	stderrEOF chan struct{}
	out       frameReader
	child     atomic.Pointer[child]
}

func newProc(stderr *stderrLog) *proc {
	return &proc{stderr: stderr, stderrEOF: make(chan struct{})}
}

// note describes the process for an error message, "" when it has nothing
// to add. It waits up to wait for the process to exit and its stderr to
// end, since the connection usually fails a moment before both.
func (p *proc) note(wait time.Duration) string {
	var parts []string
	if line := p.out.stray.Load(); line != nil {
		parts = append(parts, fmt.Sprintf("it wrote %q on stdout, which must carry only JSON-RPC messages (logs belong on stderr; such lines are skipped)", *line))
	}
	timeout := time.After(wait)
	if c := p.child.Load(); c != nil {
		select {
		case <-c.exited:
			// An exit Delta asked for is no news; a signal Delta sent says
			// only that it had to be killed.
			var ee *exec.ExitError
			signalled := errors.As(c.err, &ee) && !ee.Exited()
			switch {
			case c.asked && (c.err == nil || signalled):
			case c.err == nil:
				parts = append(parts, "it exited")
			default:
				parts = append(parts, "it exited: "+c.err.Error())
			}
		case <-timeout:
		}
	}
	select {
	case <-p.stderrEOF:
	case <-timeout:
	}
	if tail := p.stderr.tail(); tail != "" {
		parts = append(parts, "its last stderr: "+tail)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

func (t *stdioTransport) Connect(context.Context) (sdk.Connection, error) {
	cmd := t.cmd
	// Its own process group, so stopping it stops what it started; and
	// killed by the kernel when the daemon dies, so a daemon ended by
	// SIGKILL (which runs no stop sequence) leaves no server behind, even
	// one that ignores its closed stdin. Helpers the server started see
	// their stdin close.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// stdout and stderr are pipes Delta owns and reads to their end. With
	// StdoutPipe, exec.Cmd.Wait would close stdout as soon as the server
	// exits, dropping an answer it wrote just before; with a plain
	// io.Writer for stderr, Wait would wait for every holder of the pipe
	// — a grandchild too — before reporting the exit.
	or, ow, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	er, ew, err := os.Pipe()
	if err != nil {
		or.Close()
		ow.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = ow, ew
	err = cmd.Start()
	ow.Close()
	ew.Close()
	if err != nil {
		or.Close()
		er.Close()
		return nil, err
	}
	stdout := or
	c := &child{cmd: cmd, stdin: stdin, stdout: or, exited: make(chan struct{})}
	t.proc.child.Store(c)
	go func() {
		_, _ = io.Copy(t.proc.stderr, er)
		t.proc.stderr.flush()
		er.Close()
		close(t.proc.stderrEOF)
	}()
	go func() {
		err := cmd.Wait()
		c.err, c.asked = err, c.stopping.Load()
		// The server is gone; what it started goes too, which also closes
		// the last writers of its pipes, so reading them ends (after
		// whatever it wrote last) instead of waiting on a helper.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		close(c.exited)
	}()
	// The SDK's own line cap is off: frameReader enforces MaxMessageBytes
	// with an error Delta recognises (errTooLarge).
	t.proc.out.r = stdout
	return (&sdk.IOTransport{Reader: io.NopCloser(&t.proc.out), Writer: c, MaxLineLength: -1}).Connect(context.Background())
}

// child is a started stdio server: writes go to its stdin, and Close stops
// its process group.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *os.File
	exited chan struct{}
	err    error // Wait's, once exited is closed
	asked  bool  // … and whether Close had begun by then

	stopping atomic.Bool

	once     sync.Once
	closeErr error
}

func (c *child) Write(p []byte) (int, error) { return c.stdin.Write(p) }

func (c *child) Close() error {
	c.once.Do(func() { c.closeErr = c.stop() })
	return c.closeErr
}

func (c *child) stop() error {
	c.stopping.Store(true)
	_ = c.stdin.Close()
	pgid := c.cmd.Process.Pid
	for _, sig := range []syscall.Signal{0, syscall.SIGTERM, syscall.SIGKILL} {
		if sig != 0 {
			_ = syscall.Kill(-pgid, sig)
		}
		select {
		case <-c.exited: // and its group was killed
			_ = c.stdout.Close()
			var ee *exec.ExitError
			if c.err != nil && !errors.As(c.err, &ee) {
				return c.err
			}
			return nil // an exit status, even a signal, is how a server stops
		case <-time.After(terminateAfter()):
		}
	}
	return fmt.Errorf("stdio server (pid %d) still running after SIGKILL", pgid)
}

// frameReader passes the server's stdout to the SDK one JSON-RPC line at
// a time. A line that cannot be a message (it starts with neither '{' nor
// '[' after blanks: a banner, a log line a server printed on the wrong
// stream) is skipped instead of ending the connection, since many servers
// print one at start; the first is kept, clipped, for the operator (and
// onStray told of the first few). A message line longer than
// MaxMessageBytes fails with errTooLarge (lines end with '\n').
type frameReader struct {
	r         io.Reader
	br        *bufio.Reader
	started   bool // inside a line (a message being passed, or a stray being skipped)
	keep      bool // the current line is a message
	line      int  // bytes of the current line so far
	over      bool
	strays    int
	strayHead []byte // the start of the stray line being skipped
	stray     atomic.Pointer[string]
	onStray   func(line string) // told of the first strayLogged stray lines
}

// strayLogged is how many skipped stdout lines a connection reports, and
// strayHeadBytes how much of each it keeps.
const (
	strayLogged    = 3
	strayHeadBytes = 512
)

func (f *frameReader) Read(p []byte) (int, error) {
	if f.over {
		return 0, errTooLarge
	}
	if f.br == nil {
		f.br = bufio.NewReaderSize(f.r, 64<<10)
	}
	for {
		if !f.started {
			b, err := f.br.ReadByte()
			if err != nil {
				return 0, err
			}
			switch b {
			case ' ', '\t', '\r', '\n': // blank lines and leading blanks carry nothing
				continue
			}
			_ = f.br.UnreadByte()
			f.started, f.keep, f.line = true, b == '{' || b == '[', 0
			if !f.keep {
				f.strays++
				f.strayHead = f.strayHead[:0]
			}
		}
		if _, err := f.br.Peek(1); err != nil {
			return 0, err
		}
		data, _ := f.br.Peek(f.br.Buffered())
		take, ends := len(data), false
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			take, ends = i+1, true
		}
		if !f.keep {
			if f.strays <= strayLogged && len(f.strayHead) < strayHeadBytes {
				f.strayHead = append(f.strayHead, data[:min(take, strayHeadBytes-len(f.strayHead))]...)
			}
			_, _ = f.br.Discard(take)
			if f.started = !ends; ends {
				f.noteStray()
			}
			continue
		}
		if take > len(p) {
			take, ends = len(p), false
		}
		if f.line += take; f.line > MaxMessageBytes+1 { // +1: the newline
			f.over = true
			return 0, errTooLarge
		}
		n := copy(p, data[:take])
		_, _ = f.br.Discard(n)
		f.started = !ends
		return n, nil
	}
}

// noteStray records the start of a skipped line, clipped, once the line
// has ended.
func (f *frameReader) noteStray() {
	if f.strays > strayLogged {
		return
	}
	line, _, _ := bytes.Cut(f.strayHead, []byte("\n"))
	s := strings.ToValidUTF8(clip.Bytes(string(bytes.TrimSpace(line)), 120), "")
	f.stray.CompareAndSwap(nil, &s)
	if f.onStray != nil {
		f.onStray(s)
	}
}
