package gateway

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// hashedPath is what the store may create: hashes under checkpoints/.
var hashedPath = regexp.MustCompile(`^checkpoints(/[0-9a-f]{32}){0,2}(/[0-9a-f]{32}\.json)?$`)

// TestCheckpointStore: records are per principal and commandId, every
// attempt kept; caller-chosen ids never become paths; prune drops records
// older than the cutoff and the directories they leave empty.
func TestCheckpointStore(t *testing.T) {
	dir := t.TempDir()
	s := newCheckpointStore(dir)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rec := func(cmd, attempt string, n int) checkpointRecord {
		return checkpointRecord{CommandID: cmd, AttemptID: attempt, Kind: "click_and_wait_for_popup", Fingerprint: "fp",
			RecordedAt: at.Add(time.Duration(n) * time.Second), Outcome: &Outcome{Status: StatusCompleted, CommandID: cmd, Evidence: map[string]any{"n": n}}}
	}
	evil := "../../etc/passwd"
	for i, r := range []checkpointRecord{rec("c1", "a1", 1), rec("c1", "a2", 2), rec(evil, "", 3)} {
		if err := s.save("alice", r); err != nil {
			t.Fatalf("save %d: %v", i, err)
		}
	}
	got, err := s.list("alice", "c1")
	if err != nil || len(got) != 2 || got[0].AttemptID != "a1" || got[1].AttemptID != "a2" || got[1].Outcome.Evidence["n"] != 2.0 {
		t.Fatalf("list alice c1 = %+v, %v", got, err)
	}
	if got, err := s.list("bob", "c1"); err != nil || len(got) != 0 {
		t.Errorf("bob sees alice's records: %+v, %v", got, err)
	}
	if r, err := s.load("alice", evil, ""); err != nil || r == nil || r.CommandID != evil {
		t.Errorf("load by an id shaped like a path = %+v, %v", r, err)
	}
	if r, err := s.load("alice", "c1", "a3"); err != nil || r != nil {
		t.Errorf("an unknown attempt = %+v, %v", r, err)
	}
	// Nothing outside the checkpoints folder, no id in a file name.
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if rel != "." && !hashedPath.MatchString(filepath.ToSlash(rel)) {
			t.Errorf("unexpected path %s", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// Prune by modification time.
	old := s.path("alice", "c1", "a1")
	if err := os.Chtimes(old, time.Now().Add(-8*24*time.Hour), time.Now().Add(-8*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n, err := s.prune(time.Now().Add(-checkpointTTL)); err != nil || n != 1 {
		t.Errorf("prune = %d, %v; want 1", n, err)
	}
	if got, _ := s.list("alice", "c1"); len(got) != 1 || got[0].AttemptID != "a2" {
		t.Errorf("after prune = %+v", got)
	}
	if n, err := s.prune(time.Now().Add(time.Hour)); err != nil || n != 2 {
		t.Errorf("prune everything = %d, %v", n, err)
	}
	if entries, err := os.ReadDir(filepath.Join(dir, checkpointDirName)); err != nil || len(entries) != 0 {
		t.Errorf("empty directories left: %v, %v", entries, err)
	}
	// A store whose folder does not exist yet lists and prunes nothing.
	fresh := newCheckpointStore(filepath.Join(dir, "nowhere"))
	if n, err := fresh.prune(time.Now()); err != nil || n != 0 {
		t.Errorf("prune of a missing folder = %d, %v", n, err)
	}
	// A corrupt record is an error, not a replay.
	if err := s.save("alice", rec("c2", "a1", 4)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.path("alice", "c2", "a1"), []byte(`{"commandId":`), 0o600); err != nil {
		t.Fatal(err)
	}
	if r, err := s.load("alice", "c2", "a1"); err == nil || r != nil {
		t.Errorf("corrupt record = %+v, %v", r, err)
	}
}
