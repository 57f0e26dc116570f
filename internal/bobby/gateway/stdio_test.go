package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

var zeroTime time.Time

func runFilter(t *testing.T, input string, limit int) (passed, errs []string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := filterFrames(strings.NewReader(input), &out, &errOut, limit, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("filterFrames: %v", err)
	}
	split := func(s string) []string {
		var lines []string
		for _, l := range strings.Split(s, "\n") {
			if l != "" {
				lines = append(lines, l)
			}
		}
		return lines
	}
	return split(out.String()), split(errOut.String())
}

func TestFilterFrames(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"arguments":{"x":"` + strings.Repeat("a", 300) + `"}}}`
	for _, tt := range []struct {
		name      string
		input     string
		limit     int
		passed    int
		wantErrID []string // ids of the error responses, in order
		wantCode  int
	}{
		{"plain frames pass", "{\"a\":1}\n{\"b\":2}\r\n\n  \n{\"c\":3}", 100, 3, nil, 0},
		{"oversize frame rejected with its id, next frame still passes", big + "\n{\"ok\":true}\n", 100, 1, []string{"42"}, -32600},
		{"oversize frame without newline at EOF", big, 100, 0, []string{"42"}, -32600},
		{"garbage is a parse error, session goes on", "not json\n{\"id\":\"s1\"}\n", 100, 1, []string{"null"}, -32700},
		{"truncated object keeps its id", "{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"method\":\n", 100, 0, []string{`"abc"`}, -32700},
	} {
		t.Run(tt.name, func(t *testing.T) {
			passed, errs := runFilter(t, tt.input, tt.limit)
			if len(passed) != tt.passed {
				t.Errorf("passed %d frames (%q), want %d", len(passed), passed, tt.passed)
			}
			for _, p := range passed {
				if !json.Valid([]byte(p)) {
					t.Errorf("passed invalid JSON %q", p)
				}
			}
			if len(errs) != len(tt.wantErrID) {
				t.Fatalf("errors = %q, want %d", errs, len(tt.wantErrID))
			}
			for i, e := range errs {
				var resp struct {
					ID    json.RawMessage `json:"id"`
					Error struct {
						Code int `json:"code"`
						Data struct {
							Reason string `json:"reason"`
						} `json:"data"`
					} `json:"error"`
				}
				if err := json.Unmarshal([]byte(e), &resp); err != nil {
					t.Fatalf("error response %q: %v", e, err)
				}
				if string(resp.ID) != tt.wantErrID[i] || resp.Error.Code != tt.wantCode {
					t.Errorf("error response %s: id %s code %d, want id %s code %d", e, resp.ID, resp.Error.Code, tt.wantErrID[i], tt.wantCode)
				}
				if tt.wantCode == -32600 && resp.Error.Data.Reason != CodeFrameTooLarge {
					t.Errorf("reason = %q", resp.Error.Data.Reason)
				}
			}
		})
	}
}

func TestFilterFramesLargeWithinLimit(t *testing.T) {
	// A frame just under the limit, bigger than the read buffer, passes whole.
	v := strings.Repeat("b", 200<<10)
	frame := `{"id":1,"v":"` + v + `"}`
	passed, errs := runFilter(t, frame+"\n", 1<<20)
	if len(errs) != 0 || len(passed) != 1 || passed[0] != frame {
		t.Fatalf("frame of %d bytes not passed intact (errs %q)", len(frame), errs)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

func TestFilterFramesReadError(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := filterFrames(errReader{}, &out, &errOut, 10, slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("read error swallowed")
	}
}

func FuzzFrameID(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":7,"method":"x"}`)
	f.Add(`{"id":"a"`)
	f.Add(`{"params":{"id":3},"id":[1]}`)
	f.Add(`[{"id":1}]`)
	f.Fuzz(func(t *testing.T, s string) {
		id := frameID([]byte(s))
		if id != nil {
			var v any
			if err := json.Unmarshal(id, &v); err != nil {
				t.Fatalf("frameID(%q) = %q, not JSON", s, id)
			}
			switch v.(type) {
			case string, float64:
			default:
				t.Fatalf("frameID(%q) = %q, not a string or number", s, id)
			}
		}
	})
}

func FuzzFilterFrames(f *testing.F) {
	f.Add("{\"a\":1}\n{\"b\":", 64)
	f.Add(strings.Repeat("x", 300)+"\n{}\n", 16)
	f.Fuzz(func(t *testing.T, in string, limit int) {
		if limit < 2 || limit > 1<<16 {
			return
		}
		var out, errOut bytes.Buffer
		if err := filterFrames(strings.NewReader(in), &out, &errOut, limit, slog.New(slog.DiscardHandler)); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(out.String(), "\n") {
			if l != "" && (!json.Valid([]byte(l)) || len(l) > limit+1) {
				t.Fatalf("passed %q (limit %d)", l, limit)
			}
		}
	})
}
