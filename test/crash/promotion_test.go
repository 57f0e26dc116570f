package crash

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/crashpoint"
	"github.com/deltaharness/delta/internal/mcp/mcptest"
	"github.com/deltaharness/delta/internal/model/modeltest"
)

const lesson = "Check the survey's sampling dates before summarising it."

// lessonScript answers every reflection with the same lesson and every
// main-loop call with a short reply.
func lessonScript(req modeltest.ChatRequest) modeltest.Reply {
	if len(req.Messages) > 0 && req.Messages[0].Role == "system" && strings.Contains(req.Messages[0].Content, "reusable lesson") {
		b, _ := json.Marshal(map[string]any{"kind": "pitfall", "content": lesson, "confidence": 0.8})
		return modeltest.Reply{Text: string(b)}
	}
	return modeltest.TextReply("Summary written.")
}

// learningDaemon is a daemon with reflection on every run, connected to
// the test product whose learning_write tool is the curated store. The
// product lives in the test process, so it outlives every daemon process.
func learningDaemon(t *testing.T) (*daemon, *mcptest.Product) {
	t.Helper()
	product := mcptest.NewProduct()
	srv := httptest.NewServer(mcptest.NewHTTP(mcptest.Options{Product: product}))
	t.Cleanup(srv.Close)
	fake, err := modeltest.Start(lessonScript)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	servers, _ := json.Marshal([]map[string]any{{"name": "product", "url": srv.URL}})
	d := newDaemon(t, crashBin, fake, "DELTA_REFLECT=1", "DELTA_MCP_SERVERS="+string(servers),
		`DELTA_VOCAB={"writeVerbSuffix":"learning_write"}`)
	return d, product
}

// waitFor polls q (one integer) until it equals want.
func waitFor(t *testing.T, d *daemon, db *sql.DB, q string, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := db.QueryRowContext(context.Background(), q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %d, want %d; log tail:\n%s", q, n, want, tail(d.logText(), 3000))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

const (
	qMemoryRuns = "SELECT COALESCE(MAX(runs), 0) FROM memories"
	qOwed       = "SELECT COUNT(*) FROM reflection_outbox"
	qSent       = "SELECT COUNT(*) FROM promotion_outbox WHERE state = 'sent'"
)

// TestCrashBeforeReflectionDrainPromotesOnce: the lesson's second run is
// killed after its terminal state and reflection outbox row are committed,
// before the reflection is drained. After the restart the reflection
// confirms the lesson, stages its promotion and sends it: one call, one
// proposal.
func TestCrashBeforeReflectionDrainPromotesOnce(t *testing.T) {
	d, product := learningDaemon(t)
	client := &http.Client{Timeout: 30 * time.Second}
	d.start()
	db := d.openDB()
	if _, ok := d.submit(client, "Summarise the otter survey."); !ok {
		t.Fatal("first job not acknowledged")
	}
	waitFor(t, d, db, qMemoryRuns, 1)
	waitFor(t, d, db, qOwed, 0)
	d.stop()

	d.start("DELTA_CRASH_AT=" + crashpoint.AfterFinish)
	if _, ok := d.submit(client, "Summarise the heron survey."); !ok {
		t.Fatal("second job not acknowledged")
	}
	if code := d.waitExit(30 * time.Second); code != 137 {
		t.Fatalf("exit code %d, want 137; log:\n%s", code, d.logText())
	}
	var owed, staged int
	if err := db.QueryRow("SELECT (SELECT COUNT(*) FROM reflection_outbox), (SELECT COUNT(*) FROM promotion_outbox)").Scan(&owed, &staged); err != nil {
		t.Fatal(err)
	}
	if owed != 1 || staged != 0 || len(product.Calls("learning_write")) != 0 {
		t.Fatalf("at the crash: %d reflections owed, %d promotions, %d calls; want 1, 0, 0", owed, staged, len(product.Calls("learning_write")))
	}

	d.start()
	waitFor(t, d, db, qSent, 1)
	waitFor(t, d, db, qOwed, 0)
	d.stop()
	if calls, props := product.Calls("learning_write"), product.Proposals(); len(calls) != 1 || len(props) != 1 {
		t.Fatalf("%d calls and %d proposals after the restart, want exactly one each", len(calls), len(props))
	}
	var runs int
	if err := db.QueryRow(qMemoryRuns).Scan(&runs); err != nil || runs != 2 {
		t.Fatalf("memory runs %d (%v), want 2", runs, err)
	}
}

// TestCrashDuringPromotionPromotesOnce: the process is killed after the
// product answered the promotion call and before the answer was recorded.
// After the restart the claimed row is sent again with the same
// idempotency key in _meta; the product recognises it, so there is exactly
// one proposal, and the row is sent with both attempts counted.
func TestCrashDuringPromotionPromotesOnce(t *testing.T) {
	d, product := learningDaemon(t)
	client := &http.Client{Timeout: 30 * time.Second}
	d.start("DELTA_CRASH_AT=" + crashpoint.PromotionAfterCall)
	db := d.openDB()
	if _, ok := d.submit(client, "Summarise the otter survey."); !ok {
		t.Fatal("first job not acknowledged")
	}
	waitFor(t, d, db, qMemoryRuns, 1)
	waitFor(t, d, db, qOwed, 0)
	if _, ok := d.submit(client, "Summarise the heron survey."); !ok {
		t.Fatal("second job not acknowledged")
	}
	if code := d.waitExit(30 * time.Second); code != 137 {
		t.Fatalf("exit code %d, want 137; log:\n%s", code, d.logText())
	}
	var state string
	var attempts int
	if err := db.QueryRow("SELECT state, attempts FROM promotion_outbox").Scan(&state, &attempts); err != nil {
		t.Fatal(err)
	}
	if state != "claimed" || attempts != 1 || len(product.Calls("learning_write")) != 1 {
		t.Fatalf("at the crash: row %s after %d attempts, %d calls; want claimed, 1, 1", state, attempts, len(product.Calls("learning_write")))
	}

	d.start()
	waitFor(t, d, db, qSent, 1)
	d.stop()
	calls := product.Calls("learning_write")
	if len(calls) != 2 || calls[0].Key == "" || calls[0].Key != calls[1].Key {
		t.Fatalf("calls %+v, want the in-doubt call repeated once with the same idempotency key", calls)
	}
	if props := product.Proposals(); len(props) != 1 {
		t.Fatalf("%d proposals, want exactly one", len(props))
	}
	var sent, attemptsAfter int
	if err := db.QueryRow("SELECT (SELECT COUNT(*) FROM events WHERE name = 'promotion.sent'), (SELECT attempts FROM promotion_outbox)").Scan(&sent, &attemptsAfter); err != nil {
		t.Fatal(err)
	}
	if sent != 1 || attemptsAfter != 2 {
		t.Fatalf("%d promotion.sent events, %d attempts; want 1 and 2", sent, attemptsAfter)
	}
}
