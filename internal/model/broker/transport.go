package broker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Transport returns a RoundTripper that sends every request through base
// (http.DefaultTransport when nil) with the subscription bearer and the
// account header set. It refuses, without sending anything, a request bound
// for a host outside the allowlist or over plain HTTP.
//
// A broker that refuses to mint answers the request in its stead with the
// broker's status (and an OpenAI-style error body), so the wire client and
// the cascade see a 401, 403, 409 or 429 and apply their rules. A backend
// 401/403 forgets the token that was refused, so the next attempt re-mints.
func (b *Broker) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{b: b, base: base}
}

type transport struct {
	b    *Broker
	base http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.b.Allowed(req.URL) {
		closeBody(req)
		return nil, fmt.Errorf("%w: %s://%s", ErrHostNotAllowed, req.URL.Scheme, req.URL.Host)
	}
	tok, err := t.b.Token(req.Context())
	if err != nil {
		closeBody(req)
		var me *MintError
		if errors.As(err, &me) {
			return synthetic(req, me.Status, err.Error()), nil
		}
		return nil, err
	}
	out := req.Clone(req.Context())
	out.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	out.Header.Set(AccountHeader, tok.AccountID)
	res, err := t.base.RoundTrip(out)
	if err == nil && (res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden) {
		t.b.drop(tok.AccessToken)
	}
	return res, err
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// synthetic is the answer standing in for a request the broker could not
// authorise.
func synthetic(req *http.Request, status int, msg string) *http.Response {
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "broker_error"}})
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", status, http.StatusText(status)),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}
