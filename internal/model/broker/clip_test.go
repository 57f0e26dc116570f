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
