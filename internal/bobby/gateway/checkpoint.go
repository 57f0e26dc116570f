package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Checkpoints live under bobby's state directory ([browser] data_dir, the
// system temporary directory when that is empty) so that they outlast the
// process: a retry with the same commandId and attemptId replays the
// recorded outcome after a restart too, and bobby://checkpoints/{commandId}
// reads them back.
const (
	checkpointDirName  = "checkpoints"
	checkpointTTL      = 7 * 24 * time.Hour // older records are pruned when the gateway opens
	checkpointScheme   = "bobby://checkpoints/"
	checkpointTemplate = checkpointScheme + "{commandId}"
	maxCheckpointBytes = 1 << 20 // a recorded outcome larger than this is not read back
)

// checkpointRecord is one checkpointed command's outcome as stored.
type checkpointRecord struct {
	CommandID string `json:"commandId"`
	AttemptID string `json:"attemptId"`
	Kind      string `json:"kind"`
	// Fingerprint is the sha256 of the kind and its input: the same ids
	// pinned on a different request are refused, not replayed.
	Fingerprint string    `json:"fingerprint"`
	RecordedAt  time.Time `json:"recordedAt"`
	Outcome     *Outcome  `json:"outcome"`
}

// checkpointStore keeps records as one JSON file each:
// <dir>/<principal>/<commandId>/<attemptId>.json, every name a hash of the
// id, so that no caller-chosen id ever becomes a path.
type checkpointStore struct {
	dir string
}

func newCheckpointStore(stateDir string) *checkpointStore {
	if stateDir == "" {
		stateDir = os.TempDir()
	}
	return &checkpointStore{dir: filepath.Join(stateDir, checkpointDirName)}
}

func hashName(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}

func (s *checkpointStore) commandDir(principal, commandID string) string {
	return filepath.Join(s.dir, hashName(principal), hashName(commandID))
}

func (s *checkpointStore) path(principal, commandID, attemptID string) string {
	return filepath.Join(s.commandDir(principal, commandID), hashName(attemptID)+".json")
}

// load returns the principal's record for the ids, or nil when there is none.
func (s *checkpointStore) load(principal, commandID, attemptID string) (*checkpointRecord, error) {
	rec, err := readCheckpoint(s.path(principal, commandID, attemptID))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return rec, err
}

func readCheckpoint(path string) (*checkpointRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rec checkpointRecord
	dec := json.NewDecoder(io.LimitReader(f, maxCheckpointBytes))
	if err := dec.Decode(&rec); err != nil || rec.Outcome == nil {
		return nil, fmt.Errorf("read checkpoint %s: unreadable record (%v)", filepath.Base(path), err)
	}
	return &rec, nil
}

// save writes the record atomically (a temporary file renamed into place)
// and syncs it, so a record is either whole or absent after a crash.
func (s *checkpointStore) save(principal string, rec checkpointRecord) error {
	dir := s.commandDir(principal, rec.CommandID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	_, werr := tmp.Write(b)
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), s.path(principal, rec.CommandID, rec.AttemptID))
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("save checkpoint: %w", werr)
	}
	return nil
}

// list returns the principal's records of a commandId, oldest first.
func (s *checkpointStore) list(principal, commandID string) ([]checkpointRecord, error) {
	dir := s.commandDir(principal, commandID)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list checkpoints: %w", err)
	}
	var out []checkpointRecord
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		rec, err := readCheckpoint(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		if rec.CommandID == commandID { // guards against a hash collision
			out = append(out, *rec)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RecordedAt.Before(out[j].RecordedAt) })
	return out, nil
}

// prune removes records last written before cutoff and the directories it
// leaves empty. It reports how many records it removed.
func (s *checkpointStore) prune(cutoff time.Time) (int, error) {
	n := 0
	var dirs []string
	err := filepath.WalkDir(s.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			if path != s.dir {
				dirs = append(dirs, path)
			}
			return nil
		}
		if info, err := d.Info(); err == nil && info.ModTime().Before(cutoff) && os.Remove(path) == nil {
			n++
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = os.Remove(dirs[i]) // only succeeds when empty
	}
	if err != nil {
		return n, fmt.Errorf("prune checkpoints: %w", err)
	}
	return n, nil
}

// checkpointFingerprint identifies the request a checkpoint was recorded for.
func checkpointFingerprint(kind string, input map[string]any) string {
	b, _ := json.Marshal(map[string]any{"kind": kind, "input": input})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// recordCheckpoint persists a completed checkpointed outcome and reports
// in its evidence whether that worked. A failed command is not recorded:
// its retry runs again.
func (g *Gateway) recordCheckpoint(principal string, env envelope, commandID, attemptID string, out *Outcome) {
	if out.Status != StatusCompleted {
		return
	}
	cp := map[string]any{"persisted": true, "commandId": commandID, "resource": checkpointScheme + commandID}
	if attemptID != "" {
		cp["attemptId"] = attemptID
	}
	out.Evidence["checkpoint"] = cp
	rec := checkpointRecord{
		CommandID: commandID, AttemptID: attemptID, Kind: env.Kind,
		Fingerprint: checkpointFingerprint(env.Kind, env.Input), RecordedAt: g.now().UTC(), Outcome: out,
	}
	if err := g.checkpoints.save(principal, rec); err != nil {
		g.log.Warn("checkpoint not persisted", "kind", env.Kind, "commandId", commandID, "err", err)
		delete(cp, "resource")
		cp["persisted"] = false
		cp["reason"] = "bobby could not write its state directory ([browser] data_dir); the checkpoint lasts only as long as this session"
	}
}

// replayCheckpoint returns the recorded outcome of the ids, if any: a
// retry after a restart (or from another session) replays it instead of
// running the command again.
func (g *Gateway) replayCheckpoint(principal string, env envelope, commandID, attemptID string) (*Outcome, *toolError) {
	rec, err := g.checkpoints.load(principal, commandID, attemptID)
	if err != nil {
		g.log.Warn("checkpoint unreadable", "commandId", commandID, "err", err)
		return nil, errorf(CodeNeedsReconciliation, "the checkpoint of commandId %s could not be read back; read %s%s and reconcile before retrying with new ids", quote(commandID), checkpointScheme, commandID)
	}
	if rec == nil {
		return nil, nil
	}
	if rec.Fingerprint != checkpointFingerprint(env.Kind, env.Input) {
		return nil, errorf(CodeIdempotencyKeyReused, "commandId %s with this attemptId was checkpointed for a different request; pin a new attemptId", quote(commandID))
	}
	return rec.Outcome, nil
}

// readCheckpoints serves bobby://checkpoints/{commandId}: the caller's
// own records of that commandId, every attempt. Another principal's
// records are "not found".
func (cs *clientSession) readCheckpoints(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	commandID := strings.TrimPrefix(uri, checkpointScheme)
	principal := cs.principal.Name
	if req.Extra != nil && req.Extra.TokenInfo != nil {
		principal = req.Extra.TokenInfo.UserID // the bearer of this very request
	}
	if commandID == "" || strings.Contains(commandID, "/") {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	recs, err := cs.g.checkpoints.list(principal, commandID)
	if err != nil {
		cs.g.log.Warn("read checkpoints", "commandId", commandID, "err", err)
		return nil, fmt.Errorf("read %s: the checkpoint records are unreadable (see the server log)", uri)
	}
	if len(recs) == 0 {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	attempts := make([]map[string]any, 0, len(recs))
	for _, r := range recs {
		attempts = append(attempts, map[string]any{
			"attemptId": r.AttemptID, "kind": r.Kind, "recordedAt": r.RecordedAt.Format(time.RFC3339Nano), "outcome": r.Outcome,
		})
	}
	b, err := json.MarshalIndent(map[string]any{"commandId": commandID, "attempts": attempts}, "", " ")
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", uri, err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
}
