package api

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzKeptMetadata feeds arbitrary bodies that decode as a create request
// to the metadata filter: it never panics, and what it keeps is a JSON
// object that holds no authToken in any case and, untrusted, no review key.
func FuzzKeptMetadata(f *testing.F) {
	for _, s := range []string{`{}`, `{"metadata":null}`, `{"metadata":{}}`,
		`{"metadata":{"authToken":"t","task_id":"x"}}`, `{"metadata":{"AUTHTOKEN":"t","Review_Kind":"submission_disposition"}}`,
		`{"metadata":{"widen_authorized":true,"context":{"a":[1,2,{"b":null}]},"n":1e400}}`,
		`{"metadata":{"authToken":"a","authToken":"b"}}`, `{"metadata":{"\u0061uthToken":"t"}}`} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, trust bool) {
		var req createRequest
		if decodeJSONObject(body, &req) != nil {
			return // the request is refused before metadata is looked at
		}
		kept, err := keptMetadata(body, trust)
		if err != nil {
			if !strings.Contains(err.Error(), "metadata") {
				t.Fatalf("error %q does not name the field", err)
			}
			return
		}
		if kept == nil {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(kept, &m); err != nil {
			t.Fatalf("kept metadata %q is not a JSON object: %v", kept, err)
		}
		for k := range m {
			if strings.EqualFold(k, metaAuthToken) {
				t.Fatalf("kept %q", k)
			}
			if !trust && (strings.EqualFold(k, metaReviewKind) || strings.EqualFold(k, metaWidenAuthorized)) {
				t.Fatalf("kept %q untrusted", k)
			}
		}
	})
}
