package snapshot

import (
	"strings"
	"testing"
)

func TestRenderText(t *testing.T) {
	card := []Node{
		{Ref: "e1", Role: "main", Depth: 0},
		{Ref: "e2", Role: "heading", Name: "Alpine jacket", Level: 3, Depth: 1},
		{Ref: "e3", Role: "link", Name: "Alpine jacket", Depth: 2, URL: "/p/1"},
		{Role: "text", Name: "Waterproof shell", Depth: 1},
		{Ref: "e4", Role: "button", Name: "Add to cart", States: []string{"disabled"}, Depth: 1},
		{Ref: "e5", Role: "heading", Name: "Reviews", Level: 2, Depth: 1},
		{Ref: "e6", Role: "link", Name: "All reviews", Depth: 2},
		{Ref: "e7", Role: "textbox", Name: "Email", Value: "a@b.c", Depth: 1},
	}
	tests := []struct {
		name      string
		nodes     []Node
		opts      Options
		want      string
		wantShown int
	}{
		{
			name:  "structure by indentation, refs on targets only, card title folded",
			nodes: card,
			opts:  Options{MaxNodes: 100, MaxBytes: 4096},
			want: "main\n" +
				"  link \"Alpine jacket\" [h3] [ref=e3]\n" +
				"  text: Waterproof shell\n" +
				"  button \"Add to cart\" [disabled] [ref=e4]\n" +
				"  heading \"Reviews\" [level=2]\n" + // the link has another name: no fold
				"    link \"All reviews\" [ref=e6]\n" +
				"  textbox \"Email\" [ref=e7]: \"a@b.c\"\n",
			wantShown: 8,
		},
		{
			name: "a heading with more than the link does not fold",
			nodes: []Node{
				{Ref: "e2", Role: "heading", Name: "Docs", Level: 1, Depth: 0},
				{Ref: "e3", Role: "link", Name: "Docs", Depth: 1},
				{Role: "text", Name: "new", Depth: 1},
			},
			opts:      Options{MaxNodes: 100, MaxBytes: 4096},
			want:      "heading \"Docs\" [level=1]\n  link \"Docs\" [ref=e3]\n  text: new\n",
			wantShown: 3,
		},
		{
			name:      "the node bound splits a folded pair exactly",
			nodes:     card,
			opts:      Options{MaxNodes: 2, MaxBytes: 4096},
			want:      "main\n  heading \"Alpine jacket\" [level=3]\n# truncated: showing 2 of 8 nodes; " + repairTruncated + "\n",
			wantShown: 2,
		},
		{
			name:      "a folded pair counts two nodes",
			nodes:     card,
			opts:      Options{MaxNodes: 3, MaxBytes: 4096},
			want:      "main\n  link \"Alpine jacket\" [h3] [ref=e3]\n# truncated: showing 3 of 8 nodes; " + repairTruncated + "\n",
			wantShown: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := render(append([]Node(nil), tt.nodes...), tt.opts)
			if s.Text != tt.want {
				t.Errorf("text:\n%s\nwant:\n%s", s.Text, tt.want)
			}
			if s.ShownNodes != tt.wantShown || len(s.Nodes) != tt.wantShown || s.TotalNodes != len(tt.nodes) {
				t.Errorf("shown %d (nodes %d) of %d, want %d of %d", s.ShownNodes, len(s.Nodes), s.TotalNodes, tt.wantShown, len(tt.nodes))
			}
			if s.Bytes != len(s.Text) || strings.HasPrefix(s.Text, "- ") {
				t.Errorf("bytes %d for %d of text", s.Bytes, len(s.Text))
			}
			// The structured nodes keep every ref, shown in the text or not.
			for i, n := range s.Nodes {
				if n.Ref != tt.nodes[i].Ref {
					t.Errorf("node %d ref %q, want %q", i, n.Ref, tt.nodes[i].Ref)
				}
			}
		})
	}
}
