package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/store"
)

// TestSelfRevisionsKeepTheNewest20: revisions list newest first, and the
// 21st write drops the oldest.
func TestSelfRevisionsKeepTheNewest20(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	var ids []int64
	for i := range store.SelfRevisionsKept + 3 {
		id, err := s.AddSelfRevision(ctx, store.SelfRevision{Content: fmt.Sprintf("v%d", i), Version: fmt.Sprintf("h%d", i),
			ReplacedBy: fmt.Sprintf("h%d", i+1), Source: "remember", RunID: "resp_1", Created: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	list, err := s.SelfRevisions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != store.SelfRevisionsKept {
		t.Fatalf("kept %d revisions, want %d", len(list), store.SelfRevisionsKept)
	}
	if list[0].Content != "v22" || list[len(list)-1].Content != "v3" || list[0].ReplacedBy != "h23" || list[0].RunID != "resp_1" {
		t.Fatalf("newest %+v, oldest %+v; want v22 first and v3 last", list[0], list[len(list)-1])
	}
	if _, err := s.SelfRevisionByID(ctx, ids[0]); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the dropped oldest revision = %v, want ErrNotFound", err)
	}
	if r, err := s.SelfRevisionByID(ctx, ids[5]); err != nil || r.Content != "v5" {
		t.Fatalf("revision %d = %+v, %v", ids[5], r, err)
	}
}
