package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

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
	tier, known := s.o.Placement(requested)
	if !known {
		return engine.Submission{}, nil, badRequest(fmt.Sprintf("metadata.profile %q is not a profile; use \"safe\" (narrows a trusted daemon) or \"trusted\", or leave it out", requested))
	}
	req.Profile = tier
	if req.Metadata, err = keptMetadata(raw.Bytes(), s.o.TrustReviewMetadata); err != nil {
		return engine.Submission{}, nil, err
	}
	o, err := owner(r)
	if err != nil {
		return engine.Submission{}, nil, err
	}
	sub := engine.Submission{Owner: o, Request: req, AuthToken: authToken}
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
		if !acceptsStream(r.Header.Values("Accept")) {
			writeError(w, s.o.Logger, &requestError{status: http.StatusNotAcceptable,
				msg: "stream:true answers text/event-stream, which the Accept header refuses; accept text/event-stream or send stream:false for one JSON response"})
			return
		}
		s.streamResponse(w, r, sub)
		return
	}
	run, err := s.o.Service.Submit(r.Context(), sub)
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	// The run is durable: if this client goes away it still finishes.
	run, err = s.o.Service.Wait(r.Context(), sub.Owner, run.ID)
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
	// Followed from before the durable write, so no delta is missed.
	run, live, err := s.o.Service.SubmitFollow(r.Context(), sub, 4096, func(e event.Event) bool {
		return e.Name == event.TextDelta || e.Terminal()
	})
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	defer live.Close()
	sse := newSSE(w)
	seq := 0
	itemID := "msg_" + strings.TrimPrefix(run.ID, "resp_")
	created := s.o.Service.StartedResponse(run)
	sse.send("response.created", map[string]any{"type": "response.created", "sequence_number": seq, "response": created})
	finish := func() {
		final, err := s.o.Service.Get(r.Context(), sub.Owner, run.ID)
		if err != nil {
			return
		}
		seq++
		sse.send("response.completed", map[string]any{"type": "response.completed", "sequence_number": seq, "response": json.RawMessage(final.Result)})
	}
	on := func(e event.Event) bool {
		if e.Terminal() {
			finish()
			return false
		}
		var d map[string]string
		_ = json.Unmarshal(e.Data, &d)
		seq++
		sse.send("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "sequence_number": seq,
			"item_id": itemID, "output_index": 0, "content_index": 0, "delta": d[event.KeyDelta]})
		return true
	}
	// A run already terminal when it was read back — it finished that fast,
	// or an idempotency key re-attached to an old one — still has its
	// deltas waiting in the subscription, which began before the write:
	// send them, then the completed response.
	if store.Terminal(run.Status) {
		for {
			select {
			case e, ok := <-live.C:
				if ok && on(e) {
					continue
				}
				if ok {
					return // on sent the completed response
				}
			default:
			}
			finish()
			return
		}
	}
	dropped := s.follow(r.Context(), sse, live, on)
	if dropped {
		// Dropped as a slow consumer: deltas are lost, the final answer is not.
		if _, err := s.o.Service.Wait(r.Context(), sub.Owner, run.ID); err == nil {
			finish()
		}
	}
}

// acceptsStream reports whether an Accept header admits the
// text/event-stream answer of stream:true. The most specific range that
// matches text/event-stream decides (exact, then text/*, then */*); q=0
// refuses. With no range matching it, application/json admits the stream
// too: the official OpenAI SDKs send "Accept: application/json" on every
// request, streaming ones included, and the OpenAI API streams to them.
func acceptsStream(values []string) bool {
	if len(values) == 0 {
		return true
	}
	best, bestQ := -1, 0.0 // specificity of the range matching text/event-stream: 0 */*, 1 text/*, 2 exact
	jsonOK := false
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			media, params, _ := strings.Cut(part, ";")
			media = strings.ToLower(strings.TrimSpace(media))
			q := 1.0
			for _, p := range strings.Split(params, ";") {
				k, val, ok := strings.Cut(strings.TrimSpace(p), "=")
				if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
					if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
						q = f
					}
				}
			}
			spec := -1
			switch media {
			case "text/event-stream":
				spec = 2
			case "text/*":
				spec = 1
			case "*/*":
				spec = 0
			case "application/json":
				jsonOK = jsonOK || q > 0
			}
			if spec > best {
				best, bestQ = spec, q
			}
		}
	}
	if best >= 0 {
		return bestQ > 0
	}
	return jsonOK
}
