package api

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/deltaharness/delta/internal/bundle"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/workspace"
)

// Files is the workspace as the inspection API reads and edits it.
type Files interface {
	List(rel string, recursive bool, max int) ([]workspace.Entry, bool, error)
	Stat(rel string) (fs.FileInfo, error)
	OpenFile(rel string) (*os.File, error)
	WriteFile(rel string, data []byte) error
	// CheckOperator refuses the daemon's state and secrets files.
	CheckOperator(rel string) error
}

// fileReadMax bounds one file read or write through inspection.
const fileReadMax = 1 << 20

// usageView is a run's or call's token and dollar counters.
func usageView(in, out, cr, cw int64, usd float64) map[string]any {
	return map[string]any{"input_tokens": in, "output_tokens": out, "cache_read_tokens": cr, "cache_write_tokens": cw, "cost_usd": usd}
}

// runRow is one line of GET /v1/dev/runs.
type runRow struct {
	ID         string         `json:"id"`
	SessionID  string         `json:"session_id"`
	Owner      string         `json:"owner"`
	Status     string         `json:"status"`
	Model      string         `json:"model"`
	Steps      int            `json:"steps"`
	Attempts   int            `json:"attempts"`
	Calls      int            `json:"calls"`
	Usage      map[string]any `json:"usage"`
	Input      string         `json:"input"`
	Error      string         `json:"error,omitempty"`
	CreatedAt  *string        `json:"created_at"`
	StartedAt  *string        `json:"started_at"`
	FinishedAt *string        `json:"finished_at"`
}

// inputPreview is the first user text of a stored request, cut to 200
// characters, so a list row says what the run was asked.
func inputPreview(req json.RawMessage) string {
	var r struct {
		Input []struct {
			Content string `json:"content"`
		} `json:"input"`
	}
	if json.Unmarshal(req, &r) != nil || len(r.Input) == 0 {
		return ""
	}
	s := r.Input[0].Content
	if utf8.RuneCountInString(s) > 200 {
		s = string([]rune(s)[:200]) + "…"
	}
	return s
}

func rowOf(r store.Run, calls int) runRow {
	return runRow{ID: r.ID, SessionID: r.SessionID, Owner: r.Owner, Status: r.Status, Model: r.Model, Steps: r.Steps,
		Attempts: r.Attempts, Calls: calls, Input: inputPreview(r.Request), Error: r.Error,
		Usage:     usageView(r.Usage.InputTokens, r.Usage.OutputTokens, r.Usage.CacheReadTokens, r.Usage.CacheWriteTokens, r.Usage.CostUSD),
		CreatedAt: stamp(r.CreatedAt), StartedAt: stamp(r.StartedAt), FinishedAt: stamp(r.FinishedAt)}
}

// cursorParam reads ?cursor= (an opaque position a previous page named)
// and ?limit= (1..200, default 50).
func cursorParam(r *http.Request) (cursor int64, limit int, err error) {
	q := r.URL.Query()
	if v := q.Get("cursor"); v != "" {
		cursor, err = strconv.ParseInt(v, 10, 64)
		if err != nil || cursor <= 0 {
			return 0, 0, badRequest("cursor must be a next_cursor a previous page returned")
		}
	}
	limit = 50
	if v := q.Get("limit"); v != "" {
		limit, err = strconv.Atoi(v)
		if err != nil || limit < 1 || limit > 200 {
			return 0, 0, badRequest("limit must be an integer from 1 to 200")
		}
	}
	return cursor, limit, nil
}

// page is the paged list envelope: next_cursor is null on the last page.
func page(data any, more bool, next int64) map[string]any {
	var cur any
	if more {
		cur = strconv.FormatInt(next, 10)
	}
	return map[string]any{"object": "list", "data": data, "next_cursor": cur}
}

var runStatuses = map[string]bool{store.StatusQueued: true, store.StatusRunning: true, store.StatusDone: true, store.StatusFailed: true, store.StatusCancelled: true}

// devRuns is GET /v1/dev/runs: every owner's runs, newest first, filtered
// by ?status=, ?session= and ?owner= (present and empty = unowned runs).
func (s *Server) devRuns(w http.ResponseWriter, r *http.Request) {
	cursor, limit, err := cursorParam(r)
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	q := r.URL.Query()
	f := store.RunFilter{Status: q.Get("status"), SessionID: q.Get("session"), Before: cursor, Limit: limit}
	if f.Status != "" && !runStatuses[f.Status] {
		writeError(w, s.o.Logger, badRequest("status must be one of queued, running, done, failed, cancelled"))
		return
	}
	if q.Has("owner") {
		o := q.Get("owner")
		f.Owner = &o
	}
	rows, more, err := s.o.Service.InspectRuns(r.Context(), f)
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	out := make([]runRow, 0, len(rows))
	for _, rr := range rows {
		out = append(out, rowOf(rr.Run, rr.Calls))
	}
	var next int64
	if len(rows) > 0 {
		next = rows[len(rows)-1].Seq
	}
	ids := make([]string, len(rows))
	for i, rr := range rows {
		ids[i] = rr.ID
	}
	first, err := s.o.Service.InspectFirstEvent(r.Context(), ids)
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	p := page(out, more, next)
	// events_since is where /v1/dev/stream?since= gives these runs' whole
	// timelines and nothing older: a page opening on a database of months
	// of events reads only its runs'.
	p["events_since"] = max(first-1, 0)
	writeJSON(w, http.StatusOK, p)
}

// devSessions is GET /v1/dev/sessions, most recently active first.
func (s *Server) devSessions(w http.ResponseWriter, r *http.Request) {
	cursor, limit, err := cursorParam(r)
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	rows, more, err := s.o.Service.InspectSessions(r.Context(), cursor, limit)
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	out := make([]map[string]any, 0, len(rows))
	for _, sr := range rows {
		out = append(out, map[string]any{"id": sr.ID, "owner": sr.Owner, "created_at": stamp(sr.CreatedAt), "runs": sr.Runs, "last_run_id": sr.LastRunID})
	}
	var next int64
	if len(rows) > 0 {
		next = rows[len(rows)-1].LastSeq
	}
	writeJSON(w, http.StatusOK, page(out, more, next))
}

// callView is one captured call as the Cockpit reads it.
func callView(c store.Call) map[string]any {
	return map[string]any{"id": c.ID, "step": c.Step, "turn": c.Turn, "model": c.Model, "provider": c.Provider,
		"usage":      usageView(c.Usage.InputTokens, c.Usage.OutputTokens, c.Usage.CacheReadTokens, c.Usage.CacheWriteTokens, c.Usage.CostUSD),
		"latency_ms": c.LatencyMS, "created_at": stamp(c.CreatedAt), "request": c.Request, "response": c.Response}
}

// devCalls is GET /v1/dev/runs/{id}/calls: the run's captured calls.
func (s *Server) devCalls(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := s.o.Service.InspectRun(r.Context(), id); err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	calls, err := s.o.Service.InspectCalls(r.Context(), id)
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	out := make([]map[string]any, 0, len(calls))
	for _, c := range calls {
		out = append(out, callView(c))
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": out, "capture": s.o.Service.Capturing()})
}

// spillPath finds the spill file a tool result names.
var spillPath = regexp.MustCompile(`\.delta/spill/[A-Za-z0-9._-]+`)

// devRun is GET /v1/dev/runs/{id}: the run's full record for an operator,
// whoever owns it (the inspection gate stands in for the owner check), with
// its stored events after ?since= (one page of up to 500; events_cursor
// names the next), messages, captured calls and tool journal.
func (s *Server) devRun(w http.ResponseWriter, r *http.Request) {
	since, _, err := pageParams(r)
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	ctx := r.Context()
	id := r.PathValue("id")
	run, err := s.o.Service.InspectRun(ctx, id)
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	evs, err := s.o.Service.InspectRunEvents(ctx, id, since, 500)
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	msgs, err := s.o.Service.InspectMessages(ctx, id)
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	calls, err := s.o.Service.InspectCalls(ctx, id)
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	journal, err := s.o.Service.InspectJournal(ctx, id)
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	callOut := make([]map[string]any, 0, len(calls))
	for _, c := range calls {
		callOut = append(callOut, callView(c))
	}
	jOut := make([]map[string]any, 0, len(journal))
	for _, j := range journal {
		class := "mutating"
		if j.ReadOnly {
			class = "read_only"
		}
		var dur any
		if !j.FinishedAt.IsZero() {
			dur = j.FinishedAt.Sub(j.CreatedAt).Milliseconds()
		}
		jOut = append(jOut, map[string]any{"call_id": j.CallID, "name": j.Name, "arguments": j.Args, "class": class,
			"state": map[bool]string{true: "done", false: "in_doubt"}[j.Done], "result": j.Result, "is_error": j.IsError,
			"spill": nonNilStrings(spillPath.FindAllString(j.Result, -1)), "created_at": stamp(j.CreatedAt), "duration_ms": dur})
	}
	var evCursor any
	if len(evs) == 500 {
		evCursor = evs[len(evs)-1].ID
	}
	row := rowOf(run, len(calls))
	writeJSON(w, http.StatusOK, map[string]any{
		"task": viewOf(run), "run": row, "owner": run.Owner, "previous_response_id": run.PreviousID, "model": run.Model,
		"steps": run.Steps, "attempts": run.Attempts, "usage": row.Usage, "request": run.Request,
		"events": orEmpty(evs), "events_cursor": evCursor, "messages": orEmpty(msgs), "calls": callOut, "journal": jOut,
	})
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// fileError maps workspace refusals to 4xx answers that name the path.
// A directory where a file was meant is the client's mistake too: it
// names a path that exists but cannot be read or replaced as one file.
func fileError(err error, path string) error {
	switch {
	case errors.Is(err, syscall.EISDIR):
		return badRequest(path + " is a directory, not a file")
	case errors.Is(err, workspace.ErrProtected):
		return &requestError{status: http.StatusForbidden, msg: err.Error()}
	case errors.Is(err, workspace.ErrOutside), errors.Is(err, workspace.ErrBadPath):
		return badRequest(err.Error())
	case errors.Is(err, fs.ErrNotExist):
		return &requestError{status: http.StatusNotFound, msg: "no file at " + path}
	}
	return err
}

// devFiles is GET /v1/dev/files: the workspace tree (the daemon's .delta
// directory is never listed), or with ?path= one directory's subtree.
func (s *Server) devFiles(w http.ResponseWriter, r *http.Request) {
	if s.o.Files == nil {
		writeError(w, s.o.Logger, &requestError{status: http.StatusNotFound, msg: "files are not available"})
		return
	}
	rel := r.URL.Query().Get("path")
	if rel == "" {
		rel = "."
	} else if err := s.o.Files.CheckOperator(rel); err != nil {
		writeError(w, s.o.Logger, fileError(err, rel))
		return
	}
	entries, truncated, err := s.o.Files.List(rel, true, 2000)
	if err != nil {
		writeError(w, s.o.Logger, fileError(err, rel))
		return
	}
	out := make([]map[string]any, 0, len(entries))
	for _, e := range entries {
		if s.o.Files.CheckOperator(e.Path) != nil {
			continue // secrets files are not shown either, in any folder
		}
		out = append(out, map[string]any{"path": e.Path, "dir": e.IsDir, "size": e.Size})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": out, "truncated": truncated, "writable": s.o.InspectWrite})
}

// operatorFile is the {path...} of a file request when files are served
// and the path is one the operator may see; otherwise it answers the
// request with the reason and ok is false.
func (s *Server) operatorFile(w http.ResponseWriter, r *http.Request) (rel string, ok bool) {
	if s.o.Files == nil {
		writeError(w, s.o.Logger, &requestError{status: http.StatusNotFound, msg: "files are not available"})
		return "", false
	}
	rel = r.PathValue("path")
	if err := s.o.Files.CheckOperator(rel); err != nil {
		writeError(w, s.o.Logger, fileError(err, rel))
		return "", false
	}
	return rel, true
}

// devCancel is POST /v1/dev/runs/{id}/cancel: the operator stops any
// owner's queued or running run (a finished one is answered as it is).
func (s *Server) devCancel(w http.ResponseWriter, r *http.Request) {
	run, err := s.o.Service.InspectCancel(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	writeJSON(w, http.StatusOK, viewOf(run))
}

// devFile is GET /v1/dev/files/{path...}: one file's text.
func (s *Server) devFile(w http.ResponseWriter, r *http.Request) {
	rel, ok := s.operatorFile(w, r)
	if !ok {
		return
	}
	b, err := s.readCapped(rel)
	if err != nil {
		writeError(w, s.o.Logger, fileError(err, rel))
		return
	}
	if !utf8.Valid(b) {
		writeError(w, s.o.Logger, &requestError{status: http.StatusUnsupportedMediaType, msg: "file is not UTF-8 text"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"path": rel, "size": len(b), "content": string(b), "writable": s.o.InspectWrite, "sha256": contentHash(b)})
}

// contentHash names a file's content, so a save can say which content it
// replaces (base_sha256).
func contentHash(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// errChanged refuses a save whose base is not what is on disk.
var errChanged = &requestError{status: http.StatusConflict,
	msg: "the file changed on disk since it was opened (the agent or another operator wrote it): reload it and apply your edit again, or save without base_sha256 to overwrite"}

// checkBase refuses a save based on content other than rel's current
// content; a file that is gone counts as changed.
func (s *Server) checkBase(rel, base string) error {
	b, err := s.readCapped(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errChanged
	case err != nil:
		return err
	case contentHash(b) != base:
		return errChanged
	}
	return nil
}

// errTooLarge refuses a file over fileReadMax.
var errTooLarge = &requestError{status: http.StatusRequestEntityTooLarge, msg: "file is larger than 1 MiB; read it on disk"}

// readCapped reads rel only when it is a regular file of at most
// fileReadMax bytes. The size is checked before any byte is read, so a
// large file costs no memory, and the read stops one byte past the cap,
// so a file that grows after the check is refused as well. A FIFO or
// device is refused before it is opened, since opening one can block.
func (s *Server) readCapped(rel string) ([]byte, error) {
	fi, err := s.o.Files.Stat(rel)
	switch {
	case err != nil:
		return nil, err
	case fi.IsDir():
		return nil, syscall.EISDIR
	case !fi.Mode().IsRegular():
		return nil, badRequest(rel + " is not a regular file")
	case fi.Size() > fileReadMax:
		return nil, errTooLarge
	}
	f, err := s.o.Files.OpenFile(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, fileReadMax+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	if len(b) > fileReadMax {
		return nil, errTooLarge
	}
	return b, nil
}

// putFile is PUT /v1/dev/files/{path...} with {"content": "..."}: the
// bytes go to disk atomically. Only with DELTA_INSPECT_WRITE; the daemon's
// state and secrets files are refused.
func (s *Server) putFile(w http.ResponseWriter, r *http.Request) {
	rel, ok := s.operatorFile(w, r)
	if !ok {
		return
	}
	var body struct {
		Content *string `json:"content"`
		// BaseSHA256, when set, is the sha256 of the content the edit
		// started from (as GET answered it): the save is refused with a
		// 409 if the file holds anything else, so an edit never silently
		// overwrites what the agent or another operator wrote meanwhile.
		BaseSHA256 string `json:"base_sha256"`
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || body.Content == nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, s.o.Logger, err)
			return
		}
		writeError(w, s.o.Logger, badRequest(`body must be {"content": "<the file's text>"} with an optional "base_sha256"`))
		return
	}
	if body.BaseSHA256 != "" {
		if err := s.checkBase(rel, strings.ToLower(body.BaseSHA256)); err != nil {
			writeError(w, s.o.Logger, fileError(err, rel))
			return
		}
	}
	sum := contentHash([]byte(*body.Content))
	if s.o.SelfFile != nil && strings.EqualFold(path.Clean(rel), bundle.SelfFile) {
		// DELTA.md keeps its history: what the save replaced becomes a
		// revision, as a remember write's would.
		wr, err := s.o.SelfFile.Edit(r.Context(), *body.Content)
		if err != nil {
			writeError(w, s.o.Logger, fileError(err, rel))
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"path": rel, "size": len(*body.Content), "saved_at": time.Now().UTC().UnixMilli(),
			"version": wr.Version, "revision_id": wr.RevisionID, "sha256": sum})
		return
	}
	if err := s.o.Files.WriteFile(rel, []byte(*body.Content)); err != nil {
		writeError(w, s.o.Logger, fileError(err, rel))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"path": rel, "size": len(*body.Content), "saved_at": time.Now().UTC().UnixMilli(), "sha256": sum})
}
