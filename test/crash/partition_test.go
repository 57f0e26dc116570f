package crash

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// cutProxy forwards TCP connections to target until Cut, which closes the
// listener and every connection: the far side of a network partition.
type cutProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	cut   bool
}

func startProxy(t testing.TB, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln}
	t.Cleanup(p.Cut)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			if p.cut {
				p.mu.Unlock()
				c.Close()
				up.Close()
				return
			}
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

// Cut ends every connection through the proxy and refuses new ones.
func (p *cutProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
}

// TestWorkerCutFromTheDatabaseStopsItsRuns: a worker that loses the
// database while its runs wait on the model stops each run at its next
// check (it cannot confirm its session lease), so it executes no tool and
// writes nothing; once the leases expire, the other worker resumes every
// run and finishes it, each write_file executed exactly once. The cut
// worker stays up.
func TestWorkerCutFromTheDatabaseStopsItsRuns(t *testing.T) {
	const tasks = 6
	c := newCluster(t)
	direct := strings.TrimPrefix(strings.SplitN(strings.TrimPrefix(c.url, "postgres://"), "/", 2)[0], "postgres@")
	proxy := startProxy(t, direct)
	cutURL := strings.Replace(c.url, direct, proxy.addr(), 1)
	cut := c.worker(plainBin, c.ws, "DELTA_DB="+cutURL, "DELTA_LEASE_HOLDER=cut")
	cut.start()
	ids := submitHeld(t, c, cut, "part", tasks)
	other := c.worker(plainBin, c.ws, "DELTA_LEASE_HOLDER=other")
	other.start()
	proxy.Cut()
	c.fake.Release()
	tookOver(t, c, cut, other, "cut", "part", ids)
}

// TestFrozenWorkerDoesNotFireAfterTakeover: a worker frozen (SIGSTOP)
// longer than the lease TTL while its runs wait on the model loses its
// sessions to another worker, which resumes the runs. Thawed, with the
// model's answers (a write_file each) arriving at both, the first worker
// finds at its checkpoint that it no longer holds the sessions and stops:
// every write_file runs exactly once, on the worker holding the session.
func TestFrozenWorkerDoesNotFireAfterTakeover(t *testing.T) {
	const tasks = 4
	c := newCluster(t)
	frozen := c.worker(plainBin, c.ws, "DELTA_LEASE_HOLDER=frozen")
	frozen.start()
	ids := submitHeld(t, c, frozen, "thaw", tasks)
	pid := frozen.proc.Cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	defer thaw()
	other := c.worker(plainBin, c.ws, "DELTA_LEASE_HOLDER=other")
	other.start()
	// The other worker resumes every run once the frozen one's leases
	// expire, and its own model calls are held too.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.fake.WaitCalls(ctx, 2*tasks); err != nil {
		t.Fatalf("the other worker did not take the runs over: %d model calls: %v\n%s", c.fake.Calls(), err, tail(other.logText(), 3000))
	}
	thaw()
	time.Sleep(200 * time.Millisecond) // let the thawed process run before the answers arrive
	c.fake.Release()
	tookOver(t, c, frozen, other, "thawed", "thaw", ids)
}

// tookOver asserts what a user checks after worker stopped lost its
// sessions to other: every acknowledged task ran to done with exactly one
// run.finished, its write_file ran once (one tool result, one journal row,
// no interruption recorded), every file (prefix-i.md) is on disk, and the
// stopped worker is still up and logged one stopped run per task.
func tookOver(t *testing.T, c *cluster, stopped, other *daemon, name, prefix string, ids []string) {
	t.Helper()
	db := c.openDB()
	logs := func() string {
		return "--- " + name + " worker\n" + tail(stopped.logText(), 3000) + "\n--- other worker\n" + tail(other.logText(), 3000)
	}
	runs := waitTerminalPG(t, db, 60*time.Second, logs)
	for _, id := range ids {
		f := runs[id]
		if f == nil {
			t.Fatalf("acknowledged task %s lost", id)
		}
		if f.status != "done" || f.finished != 1 {
			t.Errorf("run %s: status %s with %d run.finished, want done with exactly 1", id, f.status, f.finished)
		}
		if f.toolResults != 1 || f.journal != 1 || f.interrupted != 0 {
			t.Errorf("run %s: %d tool.result events, %d journal rows, %d interrupted; want one write_file, run once, by the worker holding the session\n%s",
				id, f.toolResults, f.journal, f.interrupted, logs())
		}
	}
	for i := range ids {
		if _, err := os.Stat(filepath.Join(c.ws, fmt.Sprintf("%s-%d.md", prefix, i))); err != nil {
			t.Errorf("%s-%d.md: %v", prefix, i, err)
		}
	}
	if stopped.proc.Exited() {
		t.Fatalf("the %s worker exited; log:\n%s", name, tail(stopped.logText(), 3000))
	}
	if n := strings.Count(stopped.logText(), "no longer holds its session"); n != len(ids) {
		t.Errorf("the %s worker logged %d stopped runs, want %d; log:\n%s", name, n, len(ids), tail(stopped.logText(), 3000))
	}
}

// submitHeld holds the cluster's model, submits n write_file tasks (files
// named prefix-i.md) to w, and waits until every one of them is in its model
// call on w, so the test can cut or freeze w with all n runs in flight.
func submitHeld(t *testing.T, c *cluster, w *daemon, prefix string, n int) []string {
	t.Helper()
	c.fake.Hold()
	client := &http.Client{Timeout: 10 * time.Second}
	var ids []string
	for i := range n {
		id, ok := w.submit(client, fmt.Sprintf("Write %s-%d.md about the otter survey.", prefix, i))
		if !ok {
			t.Fatalf("task %d not acknowledged", i)
		}
		ids = append(ids, id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.fake.WaitCalls(ctx, n); err != nil {
		t.Fatalf("only %d of %d runs reached the model on %s: %v", c.fake.Calls(), n, prefix, err)
	}
	return ids
}
