package workspace

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSpill(t *testing.T) {
	tests := []struct {
		name          string
		runID, callID string
		text          string
		max           int
		wantSpill     bool
		wantFile      string // expected file name under .delta/spill, when spilled
	}{
		{name: "under the cap", runID: "r1", callID: "c1", text: "short", max: 100},
		{name: "exactly the cap", runID: "r1", callID: "c1", text: strings.Repeat("x", 100), max: 100},
		{name: "runes not bytes", runID: "r1", callID: "c1", text: strings.Repeat("漢", 100), max: 100},
		{name: "over the cap", runID: "run_1", callID: "call-9", text: lines(5000), max: 2000, wantSpill: true, wantFile: "run_1.call-9.txt"},
		{name: "multibyte over the cap", runID: "r", callID: "c", text: strings.Repeat("é漢🙂", 3000), max: 1000, wantSpill: true, wantFile: "r.c.txt"},
		{name: "hostile ids", runID: "../../etc", callID: "a/b c", text: lines(500), max: 500, wantSpill: true},
		{name: "empty ids", text: lines(500), max: 500, wantSpill: true},
		{name: "cap smaller than the note", runID: "r", callID: "c", text: lines(100), max: 10, wantSpill: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, _ := fixture(t)
			got, err := root.Spill(tt.runID, tt.callID, tt.text, tt.max)
			if err != nil {
				t.Fatal(err)
			}
			spillDir := filepath.Join(root.Dir(), SpillDir)
			ents, _ := os.ReadDir(spillDir)
			if !tt.wantSpill {
				if got != tt.text {
					t.Fatalf("text under the cap changed")
				}
				if len(ents) != 0 {
					t.Fatalf("spill file written for a text under the cap")
				}
				return
			}
			if n := utf8.RuneCountInString(got); n > tt.max {
				t.Fatalf("inline is %d runes, cap %d", n, tt.max)
			}
			if !utf8.ValidString(got) {
				t.Fatal("inline cut a rune in half")
			}
			if len(ents) != 1 {
				t.Fatalf("spill dir holds %d files, want 1", len(ents))
			}
			name := ents[0].Name()
			if !regexp.MustCompile(`^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.txt$`).MatchString(name) {
				t.Fatalf("spill file name %q is not sanitised", name)
			}
			if tt.wantFile != "" && name != tt.wantFile {
				t.Fatalf("spill file = %q, want %q", name, tt.wantFile)
			}
			full, err := os.ReadFile(filepath.Join(spillDir, name))
			if err != nil {
				t.Fatal(err)
			}
			if string(full) != tt.text {
				t.Fatalf("spill file holds %d bytes, want the whole %d", len(full), len(tt.text))
			}
			if tt.max < 200 {
				return // no room for head and tail; the cap is all that is promised
			}
			rel := SpillDir + "/" + name
			if !strings.Contains(got, rel) || !strings.Contains(got, "read_file") {
				t.Fatalf("inline note does not name %s: %q", rel, got[:min(len(got), 200)])
			}
			head, _, _ := strings.Cut(got, "\n…[")
			_, tail, _ := strings.Cut(got, "]…\n")
			if head == "" || !strings.HasPrefix(tt.text, head) {
				t.Fatalf("inline does not start with the head of the text")
			}
			if tail == "" || !strings.HasSuffix(tt.text, tail) {
				t.Fatalf("inline does not end with the tail of the text")
			}
			omitted := utf8.RuneCountInString(tt.text) - utf8.RuneCountInString(head) - utf8.RuneCountInString(tail)
			if !strings.Contains(got, "["+itoa(omitted)+" characters omitted") {
				t.Fatalf("note miscounts the omission (%d): %q", omitted, got)
			}
		})
	}
}

func TestSpillIDsStayDistinct(t *testing.T) {
	if a, b := FileID("a/b", "x"), FileID("a_b", "x"); a == b {
		t.Fatalf("FileID(a/b) == FileID(a_b) == %q", a)
	}
	if got := FileID("call_ok-1", "x"); got != "call_ok-1" {
		t.Fatalf("a clean id was changed to %q", got)
	}
	if got := FileID(strings.Repeat("z", 500), "x"); len(got) > maxIDLen+9 {
		t.Fatalf("long id kept %d bytes", len(got))
	}
}

func lines(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("line ")
		b.WriteString(itoa(i))
		b.WriteByte('\n')
	}
	return b.String()
}

func itoa(i int) string { return strconv.Itoa(i) }
