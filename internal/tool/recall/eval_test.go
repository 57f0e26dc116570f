package recall_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/model"
	"github.com/deltaharness/delta/internal/store"
)

// evalSet is testdata/eval.json: facts planted in a long session and the
// queries an agent would send to find them again.
type evalSet struct {
	Facts []struct {
		ID     string `json:"id"`
		Source string `json:"source"` // agent: the assistant's own text or arguments; tool: a tool result
		Kind   string `json:"kind"`   // text, write (write_file arguments) or tool
		Text   string `json:"text"`
	} `json:"facts"`
	Questions []struct {
		Query string `json:"query"`
		Fact  string `json:"fact"`
	} `json:"questions"`
	// Distractors share words with the facts but answer none of the
	// questions: the ranking has to put the fact above them.
	Distractors []string `json:"distractors"`
}

var fillerWords = []string{"the", "order", "plan", "budget", "service", "report", "meeting", "date", "price", "user",
	"login", "file", "team", "customer", "project", "update", "review", "status", "data", "api", "result", "search",
	"page", "check", "next", "week", "call", "email", "change", "issue", "version", "deploy", "test", "note"}

// filler is a plausible, fact-free message: common words only.
func filler(r *rand.Rand) model.Message {
	n := 8 + r.IntN(30)
	text := ""
	for i := 0; i < n; i++ {
		text += fillerWords[r.IntN(len(fillerWords))] + " "
	}
	switch r.IntN(3) {
	case 0:
		return model.Message{Role: model.RoleAssistant, Content: text}
	case 1:
		return model.Message{Role: model.RoleTool, ToolCallID: fmt.Sprintf("c%d", r.Int()), Name: "web_fetch", Content: text}
	}
	return model.Message{Role: model.RoleUser, Content: text}
}

func factMessage(kind, text string, i int) model.Message {
	switch kind {
	case "write":
		args, _ := json.Marshal(map[string]string{"path": fmt.Sprintf("notes/%d.md", i), "content": text})
		return model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: fmt.Sprintf("w%d", i), Name: "write_file", Arguments: args}}}
	case "tool":
		return model.Message{Role: model.RoleTool, ToolCallID: fmt.Sprintf("t%d", i), Name: "web_fetch", Content: text}
	}
	return model.Message{Role: model.RoleAssistant, Content: text}
}

// buildEval stores the evaluation session (facts spread through filler
// rows) and a second session holding the same facts, and returns the store,
// its path and each fact's message id in the first session.
func buildEval(t testing.TB, rows int) (*store.Store, string, map[string]int64, evalSet) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "eval.json"))
	if err != nil {
		t.Fatal(err)
	}
	var set evalSet
	if err := json.Unmarshal(raw, &set); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "delta.db")
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := rand.New(rand.NewPCG(1, 2))
	for _, sid := range []string{"s_other", "s_eval"} {
		var msgs []model.Message
		every := rows / (len(set.Facts) + 1)
		f := 0
		for i := 0; i < rows; i++ {
			if d := i - every/2; d > 0 && d%every == 0 && d/every-1 < len(set.Distractors) {
				msgs = append(msgs, model.Message{Role: model.RoleAssistant, Content: set.Distractors[d/every-1]})
				continue
			}
			if i > 0 && i%every == 0 && f < len(set.Facts) {
				msgs = append(msgs, factMessage(set.Facts[f].Kind, set.Facts[f].Text, f))
				f++
				continue
			}
			msgs = append(msgs, filler(r))
		}
		session(t, st, "resp_"+sid, sid, msgs)
	}
	ids := map[string]int64{}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i, f := range set.Facts {
		var id int64
		err := db.QueryRow(`SELECT id FROM messages WHERE session_id = 's_eval' AND (content = ? OR instr(tool_calls, ?) > 0)`,
			f.Text, fmt.Sprintf(`"w%d"`, i)).Scan(&id)
		if err != nil {
			t.Fatalf("fact %s: %v", f.ID, err)
		}
		ids[f.ID] = id
	}
	return st, path, ids, set
}

// TestRecallEvaluation measures recall's hit rate (the planted message among
// the first five answers) against a whole-phrase LIKE search over the same
// session, the way a transcript search without an index works.
//
// The session is compacted first, as a long run leaves it: every planted
// fact is out of the active window, and recall still reads it back.
func TestRecallEvaluation(t *testing.T) {
	st, path, ids, set := buildEval(t, 3000)
	compactOut(t, st, "resp_s_eval", "s_eval")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	source := map[string]string{}
	for _, f := range set.Facts {
		source[f.ID] = f.Source
	}
	var hits, baseline, agentHits, agentTotal int
	for _, q := range set.Questions {
		want := ids[q.Fact]
		got, err := st.Recall(context.Background(), store.RecallQuery{SessionID: "s_eval", Text: q.Query, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		found := slices.ContainsFunc(got, func(h store.RecallHit) bool { return h.ID == want })
		for _, h := range got {
			if h.ID < ids["f0"]-100 || h.RunID != "resp_s_eval" {
				t.Fatalf("query %q returned message %d of run %s: not this session", q.Query, h.ID, h.RunID)
			}
		}
		if found {
			hits++
		}
		if source[q.Fact] == "agent" {
			agentTotal++
			if found {
				agentHits++
			}
		}
		if likeFinds(t, db, q.Query, want) {
			baseline++
		}
		if !found {
			t.Logf("miss: %q (fact %s)", q.Query, q.Fact)
		}
	}
	n := len(set.Questions)
	rate := float64(hits) / float64(n)
	base := float64(baseline) / float64(n)
	agent := float64(agentHits) / float64(agentTotal)
	t.Logf("recall %d/%d = %.0f%%; whole-phrase LIKE %d/%d = %.0f%%; agent-written facts %d/%d = %.0f%%",
		hits, n, 100*rate, baseline, n, 100*base, agentHits, agentTotal, 100*agent)
	if rate < 2.5*base {
		t.Errorf("recall hit rate %.0f%% is under 2.5× the LIKE baseline's %.0f%%", 100*rate, 100*base)
	}
	if agent < 0.8 {
		t.Errorf("recall found %.0f%% of agent-written facts, want at least 80%%", 100*agent)
	}
}

// compactOut marks all but the newest few messages of a session inactive,
// as a compaction does.
func compactOut(t *testing.T, st *store.Store, runID, sessionID string) {
	t.Helper()
	ctx := context.Background()
	msgs, err := st.Messages(ctx, sessionID)
	if err != nil {
		t.Fatal(err)
	}
	for keep := 8; keep < len(msgs); keep++ {
		_, err := st.CommitCompaction(ctx, store.Compact{RunID: runID, SessionID: sessionID, Covered: len(msgs) - keep, Summary: "a note"})
		if errors.Is(err, store.ErrSplitTurn) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		active, _ := st.Messages(ctx, sessionID)
		if len(active) != keep {
			t.Fatalf("%d active messages after the compaction, want %d", len(active), keep)
		}
		return
	}
	t.Fatal("no cut of the session is a turn boundary")
}

// likeFinds reports whether the whole-phrase LIKE baseline's five newest
// matches hold the message want.
func likeFinds(t *testing.T, db *sql.DB, query string, want int64) bool {
	t.Helper()
	rows, err := db.Query(`SELECT id FROM messages WHERE session_id = 's_eval'
			AND (content LIKE '%' || ?1 || '%' OR tool_calls LIKE '%' || ?1 || '%') ORDER BY id DESC LIMIT 5`, query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	found := false
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		found = found || id == want
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return found
}

// BenchmarkRecall searches a 5,000-row session whose rows are interleaved
// with 50,000 rows of ten other sessions (the index's worst case: every
// other session's rows lie inside this one's id range) and reports the 95th
// percentile of one search.
func BenchmarkRecall(b *testing.B) {
	st, path, _, set := buildEval(b, 5000)
	for i := 0; i < 10; i++ {
		session(b, st, fmt.Sprintf("resp_bulk%d", i), fmt.Sprintf("s_bulk%d", i), nil)
	}
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	// Re-insert the evaluation session's rows with 10 foreign rows after each.
	r := rand.New(rand.NewPCG(3, 4))
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Exec(`CREATE TEMP TABLE eval_rows AS SELECT * FROM messages WHERE session_id = 's_eval' ORDER BY id`); err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Exec(`DELETE FROM messages WHERE session_id = 's_eval'`); err != nil {
		b.Fatal(err)
	}
	rows, err := tx.Query(`SELECT role, content, tool_calls, tool_call_id, name FROM eval_rows ORDER BY id`)
	if err != nil {
		b.Fatal(err)
	}
	type row struct{ role, content, calls, callID, name sql.NullString }
	defer rows.Close() // for b.Fatal below; closed before the inserts too
	var evalRows []row
	for rows.Next() {
		var x row
		if err := rows.Scan(&x.role, &x.content, &x.calls, &x.callID, &x.name); err != nil {
			b.Fatal(err)
		}
		evalRows = append(evalRows, x)
	}
	if err := rows.Close(); err != nil {
		b.Fatal(err)
	}
	ins := `INSERT INTO messages (session_id, run_id, role, content, tool_calls, tool_call_id, name, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 0)`
	for i, x := range evalRows {
		if _, err := tx.Exec(ins, "s_eval", "resp_s_eval", x.role, x.content, x.calls, x.callID, x.name); err != nil {
			b.Fatal(err)
		}
		for k := 0; k < 10; k++ {
			m := filler(r)
			sid := fmt.Sprintf("s_bulk%d", (i+k)%10)
			if _, err := tx.Exec(ins, sid, "resp_"+sid, string(m.Role), m.Content, nil, nil, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := set.Questions[i%len(set.Questions)].Query
		start := time.Now()
		if _, err := st.Recall(context.Background(), store.RecallQuery{SessionID: "s_eval", Text: q, Limit: 5}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	if os.Getenv("RECALL_BENCH_SLOWEST") != "" {
		per := map[string]time.Duration{}
		for i, d := range lat {
			per[set.Questions[i%len(set.Questions)].Query] += d
		}
		for q, d := range per {
			b.Logf("%8.2f ms total  %q", float64(d.Microseconds())/1000, q)
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
}
