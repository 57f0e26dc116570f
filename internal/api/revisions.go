package api

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/deltaharness/delta/internal/bundle"
	"github.com/deltaharness/delta/internal/store"
	"github.com/deltaharness/delta/internal/tool/remember"
)

// SelfFile is DELTA.md and its revisions as the inspection API uses them.
type SelfFile interface {
	Current() (string, error)
	Revisions(ctx context.Context) ([]store.SelfRevision, error)
	Revision(ctx context.Context, id int64) (store.SelfRevision, error)
	Restore(ctx context.Context, id int64) (remember.Written, store.SelfRevision, error)
	Edit(ctx context.Context, content string) (remember.Written, error)
}

type revisionView struct {
	ID         int64     `json:"id"`
	Version    string    `json:"version"`
	ReplacedBy string    `json:"replaced_by"`
	Source     string    `json:"source"`
	RunID      string    `json:"run_id,omitempty"`
	Bytes      int       `json:"bytes"`
	Created    time.Time `json:"created_at"`
	Content    *string   `json:"content,omitempty"`
}

func viewRevision(r store.SelfRevision, withContent bool) revisionView {
	v := revisionView{ID: r.ID, Version: r.Version, ReplacedBy: r.ReplacedBy, Source: r.Source, RunID: r.RunID,
		Bytes: len(r.Content), Created: r.Created}
	if withContent {
		v.Content = &r.Content
	}
	return v
}

func (s *Server) noSelfFile(w http.ResponseWriter) bool {
	if s.o.SelfFile == nil {
		writeError(w, s.o.Logger, &requestError{status: http.StatusNotFound, msg: "self-file revisions are not available"})
		return true
	}
	return false
}

// revisionID is the request's revision id; false once it has answered
// the request (no self-file, or an id that is not a positive integer).
func (s *Server) revisionID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	if s.noSelfFile(w) {
		return 0, false
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		writeError(w, s.o.Logger, badRequest("a revision id is a positive integer, as GET /v1/dev/revisions lists them"))
		return 0, false
	}
	return id, true
}

// listRevisions is GET /v1/dev/revisions: the current file's version and
// size, and the kept revisions, newest first, without their content.
func (s *Server) listRevisions(w http.ResponseWriter, r *http.Request) {
	if s.noSelfFile(w) {
		return
	}
	cur, err := s.o.SelfFile.Current()
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	revs, err := s.o.SelfFile.Revisions(r.Context())
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	out := make([]revisionView, 0, len(revs))
	for _, rev := range revs {
		out = append(out, viewRevision(rev, false))
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"current":   map[string]any{"version": bundle.SelfVersion(cur), "bytes": len(cur)},
		"revisions": out,
	})
}

// compareRevision is GET /v1/dev/revisions/{id}/compare: the revision, the
// current file, and a unified diff from the revision to the current file
// (what a restore would undo).
func (s *Server) compareRevision(w http.ResponseWriter, r *http.Request) {
	id, ok := s.revisionID(w, r)
	if !ok {
		return
	}
	rev, err := s.o.SelfFile.Revision(r.Context(), id)
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	cur, err := s.o.SelfFile.Current()
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"revision": viewRevision(rev, true),
		"current":  map[string]any{"version": bundle.SelfVersion(cur), "bytes": len(cur), "content": cur},
		"diff":     remember.Diff("revision "+strconv.FormatInt(id, 10), rev.Content, "DELTA.md", cur),
	})
}

// restoreRevision is POST /v1/dev/revisions/{id}/restore (inspection
// writes only): the revision becomes DELTA.md, and what it replaced becomes
// a new revision.
func (s *Server) restoreRevision(w http.ResponseWriter, r *http.Request) {
	id, ok := s.revisionID(w, r)
	if !ok {
		return
	}
	wr, _, err := s.o.SelfFile.Restore(r.Context(), id)
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	body := map[string]any{"restored": id, "version": wr.Version, "prior": wr.Prior, "unchanged": wr.Unchanged}
	if wr.RevisionID != 0 {
		body["revision_id"] = wr.RevisionID
	}
	writeJSON(w, http.StatusOK, body)
}
