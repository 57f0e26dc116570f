package api

import (
	"errors"
	"strings"
	"testing"
)

// FuzzDecodeCreate feeds arbitrary bodies to the request decoder: it must
// never panic, and every rejection must be a client error with a message.
func FuzzDecodeCreate(f *testing.F) {
	for _, s := range []string{`null`, `42`, `"x"`, `[]`, `{`, `{}`, `{"input":"hi"}`,
		`{"input":[{"role":"user","content":"hi"}],"metadata":{"context":{"city":"Paris"},"profile":"safe"}}`,
		`{"input":[{"role":"user","content":[{"type":"input_text","text":"a"}]}],"stream":true}`,
		`{"input":5}`, `{"input":"hi","previous_response_id":null}`, "\x00", `{"input":[{"role":"system"}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req createRequest
		err := decodeJSONObject(body, &req)
		if err == nil {
			_, _, err = inputMessages(req.Input)
		}
		if err != nil {
			var re *requestError
			if !errors.As(err, &re) || re.status != 400 || re.msg == "" {
				t.Fatalf("rejection of %q is not a 400 with a message: %v", body, err)
			}
		}
	})
}

// FuzzSafeName: an accepted upload name is a plain, visible base name that
// can never leave the inbox folder.
func FuzzSafeName(f *testing.F) {
	for _, s := range []string{"report.pdf", "../../etc/passwd", `C:\x\y.txt`, ".env", "", "a\x00b", "é.txt", strings.Repeat("a", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		name, err := safeName(raw)
		if err != nil {
			return
		}
		if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") || strings.HasPrefix(name, ".") || len(name) > 255 {
			t.Fatalf("safeName(%q) accepted %q", raw, name)
		}
		for _, r := range name {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("safeName(%q) kept a control character: %q", raw, name)
			}
		}
	})
}
