package broker

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClipKeepsCharactersWhole(t *testing.T) {
	for _, tt := range []struct {
		name string
		s    string
		n    int
		want string
	}{
		{"short", "abc", 5, "abc"},
		{"exact", "abcde", 5, "abcde"},
		{"ascii cut", "abcdef", 5, "abcde…"},
		{"inside a two-byte character", "abcdé", 5, "abcd…"},
		{"after a two-byte character", "abcé!", 5, "abcé…"},
		{"inside a four-byte character", "ab😀cd", 4, "ab…"},
		{"zero", "é", 0, "…"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := clip(tt.s, tt.n)
			if got != tt.want || !utf8.ValidString(got) || len(strings.TrimSuffix(got, "…")) > tt.n {
				t.Fatalf("clip(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
			}
		})
	}
}

// A refusal whose body is cut for the error keeps every character it shows
// whole: no replacement character where a cut split one.
func TestMintErrorMessageIsCutOnACharacter(t *testing.T) {
	body := "a" + strings.Repeat("é", 150) // byte 200 falls inside an é
	fb := startBroker(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, body)
	})
	_, err := newBroker(t, Options{URL: fb.srv.URL}).Token(context.Background())
	var me *MintError
	if !errors.As(err, &me) {
		t.Fatalf("err %v, want a MintError", err)
	}
	msg := strings.TrimSuffix(me.Message, "…")
	if strings.ContainsRune(me.Message, utf8.RuneError) || !strings.HasPrefix(body, msg) || len(msg) != 199 {
		t.Fatalf("message %q (%d bytes before the mark), want the body's first 199 bytes", me.Message, len(msg))
	}
}
