package model

import (
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// Helpers every wire client shares to turn an endpoint's failure into an
// *Error the harness can act on.

// maxMessage bounds an error message taken from an endpoint.
const maxMessage = 500

// RetriableStatus reports whether an HTTP status is worth another attempt
// on the same model: 408, 409, 429 and every 5xx (Anthropic's 529 included).
func RetriableStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= 500
}

// BodyText is the start of an error body that carried no structured
// message (an HTML page from a proxy, say).
func BodyText(res *http.Response) string {
	if res == nil || res.Body == nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	return string(b)
}

// CleanMessage makes an endpoint's message safe to record: the API key is
// scrubbed (a 401 may echo it), invalid UTF-8 replaced, and the length
// bounded to 500 characters.
func CleanMessage(msg, apiKey string) string {
	msg = strings.TrimSpace(msg)
	if apiKey != "" {
		msg = strings.ReplaceAll(msg, apiKey, "[redacted]")
	}
	msg = strings.ToValidUTF8(msg, "\uFFFD")
	if utf8.RuneCountInString(msg) > maxMessage {
		r := []rune(msg)
		msg = string(r[:maxMessage-1]) + "…"
	}
	return msg
}
