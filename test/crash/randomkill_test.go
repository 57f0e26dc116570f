package crash

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRandomKill submits write_file tasks from several clients while the
// ordinary binary is killed with SIGKILL at random moments, then checks on
// the final start: no acknowledged task lost, no write_file executed twice in
// a run, every run terminal with exactly one run.finished.
func TestRandomKill(t *testing.T) {
	const want = 200
	d := newDaemon(t, plainBin, startFake(t), "DELTA_MAX_CONCURRENCY=16")
	deadline := time.Now().Add(60 * time.Second)
	var acked []string
	var mu sync.Mutex
	var seq atomic.Int64
	kills := 0
	for len(acked) < want && time.Now().Before(deadline) {
		d.start()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				client := &http.Client{Timeout: 5 * time.Second}
				for {
					select {
					case <-stop:
						return
					default:
					}
					n := seq.Add(1)
					if id, ok := d.submit(client, fmt.Sprintf("Write brief-%d.md about the otter survey.", n)); ok {
						mu.Lock()
						acked = append(acked, id)
						mu.Unlock()
					}
				}
			}()
		}
		time.Sleep(time.Duration(50+rand.IntN(400)) * time.Millisecond)
		d.kill9()
		kills++
		close(stop)
		wg.Wait()
	}
	if len(acked) < want {
		t.Fatalf("only %d tasks acknowledged before the deadline", len(acked))
	}
	d.start()
	runs := waitAllTerminal(t, d, d.openDB(), 60*time.Second)
	var done, interrupted int
	for _, id := range acked {
		if runs[id] == nil {
			t.Fatalf("acknowledged task %s lost", id)
		}
	}
	for id, f := range runs {
		if f.finished != 1 {
			t.Fatalf("run %s (%s): %d run.finished events, want 1", id, f.status, f.finished)
		}
		if f.toolResults > 1 || f.journal > 1 {
			t.Fatalf("run %s: %d tool.result events, %d journal rows: write_file ran more than once", id, f.toolResults, f.journal)
		}
		if f.status == "done" {
			done++
		}
		interrupted += f.interrupted
	}
	t.Logf("%d kills, %d acknowledged, %d runs, %d done, %d interrupted write_file calls settled", kills, len(acked), len(runs), done, interrupted)
}
