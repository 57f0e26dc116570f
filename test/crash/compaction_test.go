package crash

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/crashpoint"
	"github.com/deltaharness/delta/internal/model/modeltest"
)

// TestCrashMidCompaction kills the tagged binary inside the transaction
// that applies a compaction. The database must hold the old window whole —
// no summary row, no message marked inactive — and after a restart the run
// compacts again and finishes, with every inactive message accounted for by
// a summary.
func TestCrashMidCompaction(t *testing.T) {
	var mu sync.Mutex
	mainCalls := 0
	fake, err := modeltest.Start(func(req modeltest.ChatRequest) modeltest.Reply {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range req.Messages {
			if strings.Contains(m.Content, "You compact the history") {
				return modeltest.TextReply("Note: big.txt was read several times; nothing new in it.")
			}
		}
		mainCalls++
		if mainCalls > 10 {
			return modeltest.TextReply("read it enough")
		}
		return modeltest.ToolReply(modeltest.ToolCall{ID: fmt.Sprintf("call_%d", mainCalls), Name: "read_file", Arguments: `{"path":"big.txt"}`})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	d := newDaemon(t, crashBin, fake, "DELTA_COMPACT_AT_TOKENS=24000")
	if err := os.WriteFile(filepath.Join(d.dir, "ws", "big.txt"), []byte(strings.Repeat("a line of the big file\n", 700)), 0o644); err != nil {
		t.Fatal(err)
	}
	d.start("DELTA_CRASH_AT=" + crashpoint.MidCompaction)
	id, acked := d.submit(&http.Client{Timeout: 30 * time.Second}, "Read big.txt until you are sure.")
	if !acked {
		t.Fatal("the task was not acknowledged")
	}
	if code := d.waitExit(60 * time.Second); code != 137 {
		t.Fatalf("exit code %d, want 137 from the crash point; log:\n%s", code, tail(d.logText(), 3000))
	}
	db := d.openDB()
	var summaries, inactive, active int
	if err := db.QueryRow("SELECT count(*) FROM compactions").Scan(&summaries); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT count(*) FROM messages WHERE active = 0").Scan(&inactive); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT count(*) FROM messages WHERE active = 1").Scan(&active); err != nil {
		t.Fatal(err)
	}
	if summaries != 0 || inactive != 0 || active < 3 {
		t.Fatalf("after a crash mid-compaction: %d summaries, %d inactive and %d active messages; want the old window whole", summaries, inactive, active)
	}

	d.start() // without DELTA_CRASH_AT
	runs := waitAllTerminal(t, d, db, 60*time.Second)
	if f := runs[id]; f == nil || f.status != "done" || f.finished != 1 {
		t.Fatalf("run %s after the restart: %+v; log:\n%s", id, f, tail(d.logText(), 3000))
	}
	var covered int
	if err := db.QueryRow("SELECT count(*), coalesce(sum(covered), 0) FROM compactions").Scan(&summaries, &covered); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT count(*) FROM messages WHERE active = 0").Scan(&inactive); err != nil {
		t.Fatal(err)
	}
	if summaries == 0 || inactive != covered {
		t.Fatalf("after the restart: %d summaries covering %d messages, %d inactive; want them to agree", summaries, covered, inactive)
	}
	var events int
	if err := db.QueryRow("SELECT count(*) FROM events WHERE name = 'compaction'").Scan(&events); err != nil {
		t.Fatal(err)
	}
	if events != summaries {
		t.Fatalf("%d compaction events for %d summaries (each is written with its state change)", events, summaries)
	}
}
