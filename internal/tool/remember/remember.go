// Package remember is the agent's write path to its self-file, DELTA.md:
// the remember tool, and the revision history an operator compares and
// restores through the inspection API.
//
// A write replaces the whole file. It is refused, with the current file
// handed back as the merge base, when it is over the byte cap (the refusal
// says by how many bytes) or when the version it names as its base is not
// the file on disk any more (another run, a child process or an operator
// changed it since the run read it): the run merges and retries once,
// informed, instead of guessing. Writes within this process are serialised,
// so the base check and the rename are one step for them; a write from
// another process (a spawn_subagent child) is last-writer-wins against it.
//
// A content-changing write renames the new file into place first and then
// records the content it replaced as a revision row (the newest 20 are
// kept); the first write and a write of unchanged content record none. A
// crash between the rename and the row leaves the new file without a
// revision of the one before it. Every write, refusal and restore is a
// durable event.
//
// A spawn_subagent or eval_n child is a separate `delta run` process with
// its own in-memory database: it shares DELTA.md through the workspace, and
// the revisions of its writes live in that temporary database and end with
// it. The parent's next write from an older snapshot is refused as
// diverged, so the child's lesson is merged rather than lost.
package remember

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/deltaharness/delta/internal/bundle"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool"
)

// Name is the tool's name.
const Name = "remember"

// Sources of a revision: what wrote over the content it keeps.
const (
	SourceRemember = "remember"
	SourceRestore  = "restore"
	SourceOperator = "operator"
)

// Store keeps the revisions.
type Store interface {
	AddSelfRevision(ctx context.Context, rev store.SelfRevision) (int64, error)
	SelfRevisions(ctx context.Context) ([]store.SelfRevision, error)
	SelfRevisionByID(ctx context.Context, id int64) (store.SelfRevision, error)
}

// Files is the workspace as the self-file needs it: atomic replacement and
// confined reads.
type Files interface {
	ReadFile(rel string) ([]byte, error)
	Stat(rel string) (fs.FileInfo, error)
	WriteFile(rel string, data []byte) error
}

// Options configures a File.
type Options struct {
	Files    Files
	Store    Store
	MaxBytes int                                      // the write cap (DELTA_SELF_MAX_TOKENS × 4)
	Record   func(ctx context.Context, e event.Event) // durable events; nil = none
	Logger   *slog.Logger
	Now      func() time.Time
}

// File is DELTA.md with its revisions. It is safe for concurrent use.
type File struct {
	o  Options
	mu sync.Mutex // serialises this process's writes: base check, rename, revision
}

// New returns the self-file over o.
func New(o Options) *File {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = bundle.DefaultSelfMaxTokens * bundle.BytesPerToken
	}
	return &File{o: o}
}

// Errors a write can be refused with; *Refusal wraps them.
var (
	ErrTooLarge = errors.New("over the self-file cap")
	ErrDiverged = errors.New("the self-file changed since its base")
	ErrEmpty    = errors.New("empty self-file")
)

// Refusal is a write that was not made, with the file as it is now.
type Refusal struct {
	Err      error
	Over     int    // ErrTooLarge: bytes over the cap
	Current  string // the file on disk, the merge base
	Version  string // its version
	MaxBytes int
}

func (r *Refusal) Error() string { return r.Err.Error() }
func (r *Refusal) Unwrap() error { return r.Err }

// Written is a write that was made (or found unchanged).
type Written struct {
	Version    string // of the file now on disk
	Prior      string // version of the file it replaced
	Unchanged  bool   // the content was already the file: nothing written
	RevisionID int64  // the revision row of the replaced content; 0 = none
	Bytes      int
}

// operatorReadMax bounds what an operator's view and a restore read of
// the current file: far past the load ceiling, so a file blown up beyond
// what the agent can load can still be compared and kept as a revision.
const operatorReadMax = 64 << 20

// ErrUnloadable: DELTA.md is over the size it can be loaded at, so the
// agent never saw it and cannot merge into it.
var ErrUnloadable = errors.New("the self-file is over its load ceiling")

// Current reads the file on disk as an operator sees it ("" when it is
// absent), up to 64 MiB.
func (f *File) Current() (string, error) { return f.read(operatorReadMax) }

// read reads the file on disk ("" when it is absent); a file over limit
// bytes is ErrUnloadable.
func (f *File) read(limit int64) (string, error) {
	fi, err := f.o.Files.Stat(bundle.SelfFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", bundle.SelfFile, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("read %s: not a regular file", bundle.SelfFile)
	}
	if fi.Size() > limit {
		return "", fmt.Errorf("read %s: %d bytes, over %d: %w", bundle.SelfFile, fi.Size(), limit, ErrUnloadable)
	}
	b, err := f.o.Files.ReadFile(bundle.SelfFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", bundle.SelfFile, err)
	}
	return string(b), nil
}

// Remember replaces the file with content if base is the version of the
// file on disk ("" or the version of "" when there is none yet). A refusal
// is a *Refusal; any other error is a fault.
func (f *File) Remember(ctx context.Context, runID, sessionID, base, content string) (Written, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, err := f.read(bundle.SelfMaxFileBytes)
	if errors.Is(err, ErrUnloadable) {
		// The agent was shown an empty self-file and has nothing to merge
		// into; an operator restores or shortens it.
		r := &Refusal{Err: err, MaxBytes: f.o.MaxBytes, Version: "unloadable"}
		f.record(ctx, runID, sessionID, map[string]any{"outcome": "refused", "reason": "unloadable", "bytes": len(content), "base": base})
		return Written{}, r
	}
	if err != nil {
		return Written{}, err
	}
	curVersion := bundle.SelfVersion(cur)
	refuse := func(r *Refusal, reason string) (Written, error) {
		r.Current, r.Version, r.MaxBytes = cur, curVersion, f.o.MaxBytes
		f.record(ctx, runID, sessionID, map[string]any{"outcome": "refused", "reason": reason, "bytes": len(content),
			"max_bytes": f.o.MaxBytes, "over": r.Over, "version": curVersion, "base": base})
		return Written{}, r
	}
	if strings.TrimSpace(content) == "" {
		return refuse(&Refusal{Err: ErrEmpty}, "empty")
	}
	if !utf8.ValidString(content) {
		return refuse(&Refusal{Err: fmt.Errorf("%w: content is not valid UTF-8", ErrEmpty)}, "invalid")
	}
	if over := len(content) - f.o.MaxBytes; over > 0 {
		return refuse(&Refusal{Err: ErrTooLarge, Over: over}, "too_large")
	}
	if base == "" {
		base = bundle.SelfVersion("")
	}
	if base != curVersion {
		return refuse(&Refusal{Err: ErrDiverged}, "diverged")
	}
	w, err := f.replace(ctx, cur, content, SourceRemember, runID)
	if err != nil {
		return Written{}, err
	}
	f.record(ctx, runID, sessionID, map[string]any{"outcome": outcome(w), "bytes": w.Bytes, "version": w.Version,
		"prior": w.Prior, "revision_id": w.RevisionID})
	return w, nil
}

func outcome(w Written) string {
	if w.Unchanged {
		return "unchanged"
	}
	return "written"
}

// replace writes content over cur (the file as read under f.mu) and keeps
// cur as a revision when there was one and it differs.
func (f *File) replace(ctx context.Context, cur, content, source, runID string) (Written, error) {
	w := Written{Version: bundle.SelfVersion(content), Prior: bundle.SelfVersion(cur), Bytes: len(content)}
	if content == cur {
		w.Unchanged = true
		return w, nil
	}
	if err := f.o.Files.WriteFile(bundle.SelfFile, []byte(content)); err != nil {
		return Written{}, fmt.Errorf("write %s: %w", bundle.SelfFile, err)
	}
	if cur == "" {
		return w, nil // the first write: nothing to keep
	}
	id, err := f.o.Store.AddSelfRevision(ctx, store.SelfRevision{Content: cur, Version: w.Prior, ReplacedBy: w.Version,
		Source: source, RunID: runID, Created: f.o.Now()})
	if err != nil {
		// The file is written; only the history of the one before is lost.
		f.o.Logger.Warn("self-file written but its earlier content was not kept as a revision", "err", err)
		return w, nil
	}
	w.RevisionID = id
	return w, nil
}

// Revisions lists the kept revisions, newest first.
func (f *File) Revisions(ctx context.Context) ([]store.SelfRevision, error) {
	return f.o.Store.SelfRevisions(ctx)
}

// Revision returns one kept revision (store.ErrNotFound when it is not kept).
func (f *File) Revision(ctx context.Context, id int64) (store.SelfRevision, error) {
	return f.o.Store.SelfRevisionByID(ctx, id)
}

// Restore writes revision id back as the file, an operator's action: no
// base check and no cap beyond the load ceiling. What it replaces becomes a
// revision like any other write, so a restore can itself be undone.
func (f *File) Restore(ctx context.Context, id int64) (Written, store.SelfRevision, error) {
	rev, err := f.o.Store.SelfRevisionByID(ctx, id)
	if err != nil {
		return Written{}, store.SelfRevision{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, err := f.Current()
	if err != nil {
		return Written{}, rev, err
	}
	w, err := f.replace(ctx, cur, rev.Content, SourceRestore, "")
	if err != nil {
		return Written{}, rev, err
	}
	if f.o.Record != nil {
		f.o.Record(ctx, event.New("", "", event.SelfRestore, map[string]any{"outcome": outcome(w), "restored": id,
			"version": w.Version, "prior": w.Prior, "revision_id": w.RevisionID, "bytes": w.Bytes}))
	}
	return w, rev, nil
}

// Edit is an operator's save of DELTA.md (the Cockpit's Files tab): the
// whole new text, written like any other write, so what it replaced is kept
// as a revision that can be compared and restored. No cap or base check:
// the operator is not the agent writing to itself.
func (f *File) Edit(ctx context.Context, content string) (Written, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, err := f.Current()
	if err != nil {
		return Written{}, err
	}
	w, err := f.replace(ctx, cur, content, SourceOperator, "")
	if err != nil {
		return Written{}, err
	}
	if f.o.Record != nil {
		f.o.Record(ctx, event.New("", "", event.SelfEdit, map[string]any{"outcome": outcome(w),
			"version": w.Version, "prior": w.Prior, "revision_id": w.RevisionID, "bytes": w.Bytes}))
	}
	return w, nil
}

func (f *File) record(ctx context.Context, runID, sessionID string, data map[string]any) {
	if f.o.Record != nil {
		f.o.Record(ctx, event.New(runID, sessionID, event.Remember, data))
	}
}

type params struct {
	Content string `json:"content" jsonschema:"the complete new DELTA.md: every section you keep, not only the new lesson"`
	Base    string `json:"base,omitempty" jsonschema:"the version of the DELTA.md you edited, as shown in your self-file block or returned by the last remember call; omit only when there is no DELTA.md yet"`
}

// Tool is the remember tool over f. It is not read-only: re-running an
// interrupted write could overwrite a newer one, so the journal never
// replays it.
func (f *File) Tool() tool.Tool {
	desc := fmt.Sprintf("Rewrite your self-file DELTA.md (identity and durable lessons, shown in every future run) with the "+
		"complete new file. At most %d bytes. Give base, the version of the file you edited. If the file changed since, "+
		"or your text is too long, nothing is written and you get the current file back to merge into and retry. "+
		"Use it sparingly: only for a lesson or preference that should shape every future run.", f.o.MaxBytes)
	return tool.Func(Name, desc, false, func(ctx context.Context, c tool.Call, p params) (tool.Result, error) {
		w, err := f.Remember(ctx, c.RunID, c.SessionID, strings.TrimSpace(p.Base), p.Content)
		var r *Refusal
		if errors.As(err, &r) {
			return refusal(r, len(p.Content)), nil
		}
		if err != nil {
			return tool.Result{}, err
		}
		if w.Unchanged {
			return tool.Text(fmt.Sprintf("DELTA.md already has exactly this content (version %s); nothing was written.", w.Version)), nil
		}
		return tool.Text(fmt.Sprintf("DELTA.md rewritten: %d bytes, version %s (use it as base for another change in this run). "+
			"Future runs see the new file; this run keeps the snapshot it started with.", w.Bytes, w.Version)), nil
	})
}

// refusal tells the model what to fix and hands it the merge base.
func refusal(r *Refusal, size int) tool.Result {
	var head string
	switch {
	case errors.Is(r.Err, ErrTooLarge):
		head = fmt.Sprintf("Not written: your DELTA.md is %d bytes, %d bytes over the %d-byte cap. Shorten it by at least %d bytes "+
			"(merge or drop the least useful lessons) and call remember again with base %s.", size, r.Over, r.MaxBytes, r.Over, r.Version)
	case errors.Is(r.Err, ErrUnloadable):
		return tool.Result{IsError: true, Text: fmt.Sprintf("Not written: %v. It is not loaded into your prompt and cannot be merged; "+
			"the operator has to restore an earlier revision or shorten it. Do not retry.", r.Err)}
	case errors.Is(r.Err, ErrDiverged):
		head = fmt.Sprintf("Not written: DELTA.md changed since the version you edited (it is now version %s). Merge your change "+
			"into the current file below and call remember again with base %s.", r.Version, r.Version)
	default:
		head = fmt.Sprintf("Not written: %v. Send the complete file, with base %s.", r.Err, r.Version)
	}
	cur := r.Current
	if cur == "" {
		cur = "(DELTA.md is empty or absent)"
	}
	return tool.Result{IsError: true, Text: head + "\n\nCurrent DELTA.md (version " + r.Version + ", " +
		fmt.Sprint(len(r.Current)) + " bytes):\n<<<\n" + cur + "\n>>>"}
}
