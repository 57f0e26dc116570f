package store

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/deltaharness/delta/internal/model"
)

// TestRecallLeavesOutWordsTooCommonToHelp: a word in thousands of messages
// is dropped from the any-word search when the query has a far rarer one,
// and the message with the rare word still comes first; a query of common
// words only keeps them all.
func TestRecallLeavesOutWordsTooCommonToHelp(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, TestingDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	msgs := make([]model.Message, 0, commonDocs+2)
	for range commonDocs + 1 {
		msgs = append(msgs, model.Message{Role: model.RoleUser, Content: "status update"})
	}
	msgs = append(msgs, model.Message{Role: model.RoleUser, Content: "status of the zeppelin hangar"})
	if _, _, _, err := s.CreateRun(ctx, NewRun{ID: "resp_p", SessionID: "s_p", Request: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Start(ctx, "resp_p", msgs); err != nil {
		t.Fatal(err)
	}
	kept, err := s.dropCommonTerms(ctx, []string{"status", "zeppelin"})
	if err != nil || !slices.Equal(kept, []string{"zeppelin"}) {
		t.Fatalf("dropCommonTerms = %v, %v; want only zeppelin", kept, err)
	}
	if kept, _ := s.dropCommonTerms(ctx, []string{"status", "update"}); len(kept) != 2 {
		t.Fatalf("common words only = %v, want both kept", kept)
	}
	hits, err := s.Recall(ctx, RecallQuery{SessionID: "s_p", Text: "status zeppelin", Limit: 5})
	if err != nil || len(hits) == 0 || hits[0].Content != "status of the zeppelin hangar" {
		t.Fatalf("Recall = %+v, %v; want the zeppelin message first", hits, err)
	}
}
