package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/deltaharness/delta/internal/engine"
	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/store"
)

// submission validates a create body and turns it into a Submission.
func (s *Server) submission(r *http.Request) (engine.Submission, *createRequest, error) {
	var body createRequest
	// Keep the bytes as read: the typed decode knows only the metadata keys
	// Delta acts on, and the run keeps all of them (keptMetadata).
	var raw bytes.Buffer
	r.Body = io.NopCloser(io.TeeReader(r.Body, &raw))
	if err := decodeBody(r, &body); err != nil {
		return engine.Submission{}, nil, err
	}
	msgs, sys, err := inputMessages(body.Input)
	if err != nil {
		return engine.Submission{}, nil, err
	}
	req := engine.Request{Input: msgs, Store: body.Store == nil || *body.Store}
	var parts []string
	if body.Instructions != nil && strings.TrimSpace(*body.Instructions) != "" {
		parts = append(parts, *body.Instructions)
	}
	if sys != "" {
		parts = append(parts, sys)
	}
	req.Instructions = strings.Join(parts, "\n\n")
	requested := ""
	if md := body.Metadata; md != nil {
		req.Context = md.Context
		if md.Profile != nil {
			requested = *md.Profile
		}
		if md.ReasoningEffort != nil {
			req.ReasoningEffort = strings.ToLower(strings.TrimSpace(*md.ReasoningEffort))
		}
	}
	authToken := ""
	if body.Metadata != nil && body.Metadata.AuthToken != nil {
		authToken = *body.Metadata.AuthToken
	}
	req.Profile = s.o.Placement(requested)
	if req.Metadata, err = keptMetadata(raw.Bytes(), s.o.TrustReviewMetadata); err != nil {
		return engine.Submission{}, nil, err
	}
	sub := engine.Submission{Owner: owner(r), Request: req, AuthToken: authToken}
	if s.o.StrictTenant && sub.Owner == "" {
		return engine.Submission{}, nil, &requestError{status: http.StatusUnauthorized, msg: "x-delta-user is required (DELTA_STRICT_TENANT=1)"}
	}
	if body.PreviousResponseID != nil {
		sub.PreviousID = strings.TrimSpace(*body.PreviousResponseID)
		if sub.PreviousID == "" {
			return engine.Submission{}, nil, badRequest("field previous_response_id is empty")
		}
	}
	if body.IdempotencyKey != nil {
		sub.IdempotencyKey = *body.IdempotencyKey
	}
	if k := r.Header.Get("Idempotency-Key"); k != "" && sub.IdempotencyKey == "" {
		sub.IdempotencyKey = k
	}
	if len(sub.IdempotencyKey) > 256 {
		return engine.Submission{}, nil, badRequest("idempotency key is longer than 256 characters")
	}
	sub.IdempotencyTerminal = body.IdempotencyTerminal != nil && *body.IdempotencyTerminal
	return sub, &body, nil
}

// Request metadata keys the run does not keep as sent.
const (
	// metaAuthToken is a per-run credential: held in memory for the run's
	// tool calls, never stored or echoed.
	metaAuthToken = "authToken"
	// metaReviewKind and metaWidenAuthorized claim a human review. A
	// shared control token is no proof of one, so they are dropped unless
	// the operator trusts its callers (DELTA_TRUST_REVIEW_METADATA).
	metaReviewKind      = "review_kind"
	metaWidenAuthorized = "widen_authorized"
)

// keptMetadata is the request's metadata object as the run stores it and
// the response echoes it: every key as sent, minus authToken and, unless
// trustReview, the review keys. Keys are compared case-insensitively, as
// the typed decode matches them, so "AuthToken" is a credential too. It is
// nil when nothing is left. body has already decoded as a JSON object.
func keptMetadata(body []byte, trustReview bool) (json.RawMessage, error) {
	var doc struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, badRequest("field metadata must be an object")
	}
	for k := range doc.Metadata {
		drop := strings.EqualFold(k, metaAuthToken)
		if !trustReview {
			drop = drop || strings.EqualFold(k, metaReviewKind) || strings.EqualFold(k, metaWidenAuthorized)
		}
		if drop {
			delete(doc.Metadata, k)
		}
	}
	if len(doc.Metadata) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(doc.Metadata)
	if err != nil {
		return nil, badRequest("field metadata: " + err.Error())
	}
	return b, nil
}

// createResponse runs a request synchronously (or streams it).
func (s *Server) createResponse(w http.ResponseWriter, r *http.Request) {
	sub, body, err := s.submission(r)
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	if body.Stream != nil && *body.Stream {
		s.streamResponse(w, r, sub)
		return
	}
	run, err := s.o.Service.Submit(r.Context(), sub)
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	// The run is durable: if this client goes away it still finishes.
	run, err = s.o.Service.Wait(r.Context(), run.ID)
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	writeRaw(w, http.StatusOK, run.Result)
}

func writeRaw(w http.ResponseWriter, status int, b json.RawMessage) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
	_, _ = w.Write([]byte("\n"))
}

// streamResponse sends response.output_text.delta frames, then one
// authoritative response.completed with the full response.
func (s *Server) streamResponse(w http.ResponseWriter, r *http.Request, sub engine.Submission) {
	var runID atomic.Value
	runID.Store("")
	// Subscribe before submitting so no delta is missed; events of other
	// runs that arrive before the id is known are filtered below.
	bsub := s.o.Service.Broker().Subscribe(4096, func(e event.Event) bool {
		id := runID.Load().(string)
		return (id == "" || e.RunID == id) && (e.Name == event.TextDelta || e.Terminal())
	})
	defer s.o.Service.Broker().Unsubscribe(bsub)
	run, err := s.o.Service.Submit(r.Context(), sub)
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	runID.Store(run.ID)
	sse := newSSE(w)
	seq := 0
	itemID := "msg_" + strings.TrimPrefix(run.ID, "resp_")
	created := engine.BuildResponse(run, "", "", "")
	created.Status = "in_progress"
	created.Output = []engine.OutputItem{}
	sse.send("response.created", map[string]any{"type": "response.created", "sequence_number": seq, "response": created})
	finish := func() {
		final, err := s.o.Service.Store.Run(r.Context(), run.ID)
		if err != nil {
			return
		}
		seq++
		sse.send("response.completed", map[string]any{"type": "response.completed", "sequence_number": seq, "response": json.RawMessage(final.Result)})
	}
	// A run already terminal (idempotent re-attach) completes at once.
	if cur, err := s.o.Service.Store.Run(r.Context(), run.ID); err == nil && store.Terminal(cur.Status) {
		finish()
		return
	}
	hb := time.NewTicker(s.o.Heartbeat)
	defer hb.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-hb.C:
			sse.comment("ping")
		case e, ok := <-bsub.C:
			if !ok {
				// Dropped as a slow consumer: deltas are lost, the final answer is not.
				if _, err := s.o.Service.Wait(r.Context(), run.ID); err == nil {
					finish()
				}
				return
			}
			if e.RunID != run.ID {
				continue
			}
			if e.Terminal() {
				finish()
				return
			}
			var d struct {
				Delta string `json:"delta"`
			}
			_ = json.Unmarshal(e.Data, &d)
			seq++
			sse.send("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "sequence_number": seq,
				"item_id": itemID, "output_index": 0, "content_index": 0, "delta": d.Delta})
		}
	}
}
