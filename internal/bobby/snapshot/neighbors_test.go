package snapshot

import "testing"

func TestNeighbors(t *testing.T) {
	nodes := []Node{
		{Role: "main", Depth: 0},
		{Role: "heading", Name: "Products", Level: 1, Depth: 1},
		{Role: "list", Depth: 1},
		{Ref: "e1", Role: "listitem", Name: "Lamp", Depth: 2},
		{Role: "heading", Name: "Lamp", Level: 3, Depth: 3},
		{Ref: "e2", Role: "button", Name: "Add Lamp", Depth: 3},
		{Ref: "e3", Role: "listitem", Name: "Desk", Depth: 2},
		{Role: "heading", Name: "Desk", Level: 3, Depth: 3},
		{Ref: "e4", Role: "button", Name: "Add to cart", Depth: 3},
		{Role: "text", Name: "$20", Depth: 3},
		{Ref: "e5", Role: "listitem", Name: "Chair", Depth: 2},
		{Ref: "e6", Role: "link", Name: "Footer", Depth: 1},
	}
	s := &Snapshot{Nodes: nodes}
	h, ok := Neighbors(s, "e4", 0)
	if !ok {
		t.Fatal("no neighborhood for e4")
	}
	if h.Heading == nil || h.Heading.Name != "Desk" {
		t.Errorf("heading = %+v, want Desk", h.Heading)
	}
	if len(h.Ancestors) != 3 || h.Ancestors[0].Ref != "e3" || h.Ancestors[1].Role != "list" || h.Ancestors[2].Role != "main" {
		t.Errorf("ancestors = %+v", h.Ancestors)
	}
	if len(h.Before) != 1 || h.Before[0].Name != "Desk" || len(h.After) != 1 || h.After[0].Name != "$20" {
		t.Errorf("siblings before %+v after %+v", h.Before, h.After)
	}
	if h, _ := Neighbors(s, "e3", 1); len(h.Before) != 1 || h.Before[0].Ref != "e1" || len(h.After) != 1 || h.After[0].Ref != "e5" || len(h.Children) != 1 || h.Children[0].Role != "heading" {
		t.Errorf("e3 with n=1: before %+v after %+v children %+v", h.Before, h.After, h.Children)
	}
	if _, ok := Neighbors(s, "e99", 0); ok {
		t.Error("unknown ref answered")
	}
	r := NewRetained()
	r.Put("p", s)
	if _, ok := r.Neighbors("p", "e2", 0); !ok {
		t.Error("retained neighbors gave nothing")
	}
	r.Invalidate("p")
	if _, ok := r.Neighbors("p", "e2", 0); ok {
		t.Error("an invalidated snapshot still answers")
	}
}
