package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/api"
)

// Every route that reads a run answers another owner's run exactly like an
// unknown one: 404 with the error envelope, never the run; a continuation
// answers it like an unknown previous_response_id.
func TestForeignRunIs404OnEveryRunRoute(t *testing.T) {
	srv := newServer(t, api.Options{}, echoProvider)
	alice := map[string]string{"X-Delta-User": "alice"}
	s, first := do(t, "POST", srv.URL+"/v1/responses", `{"input":"mine"}`, alice)
	if s != 200 {
		t.Fatalf("alice's run: %d %v", s, first)
	}
	id := first["id"].(string)
	for _, who := range []struct {
		name string
		hdr  map[string]string
	}{
		{"another owner", map[string]string{"X-Delta-User": "mallory"}},
		{"no owner", nil},
	} {
		for _, tt := range []struct{ name, method, path, body string }{
			{"task", "GET", "/v1/tasks/" + id, ``},
			{"cancel", "DELETE", "/v1/tasks/" + id, ``},
			{"events page", "GET", "/v1/tasks/" + id + "/events?since=0", ``},
			{"events live", "GET", "/v1/tasks/" + id + "/events", ``},
		} {
			t.Run(who.name+"/"+tt.name, func(t *testing.T) {
				s, m := do(t, tt.method, srv.URL+tt.path, tt.body, who.hdr)
				if s != http.StatusNotFound || errMessage(m) == "" || strings.Contains(string(mustJSON(m)), "echo: mine") {
					t.Fatalf("%d %v, want 404 with an error envelope", s, m)
				}
			})
		}
	}
	// A continuation of another owner's run is answered exactly like one of
	// an id that names no run at all (400, same message), so the answer does
	// not reveal that the id exists.
	for _, who := range []struct {
		name string
		hdr  map[string]string
	}{
		{"another owner", map[string]string{"X-Delta-User": "mallory"}},
		{"no owner", nil},
	} {
		for _, tt := range []struct{ name, path, body string }{
			{"continuation", "/v1/responses", `{"input":"x","previous_response_id":"%s"}`},
			{"streamed continuation", "/v1/responses", `{"input":"x","stream":true,"previous_response_id":"%s"}`},
			{"task continuation", "/v1/tasks", `{"input":"x","previous_response_id":"%s"}`},
		} {
			t.Run(who.name+"/"+tt.name, func(t *testing.T) {
				s, m := do(t, "POST", srv.URL+tt.path, strings.Replace(tt.body, "%s", id, 1), who.hdr)
				us, um := do(t, "POST", srv.URL+tt.path, strings.Replace(tt.body, "%s", "resp_nope", 1), who.hdr)
				if s != http.StatusBadRequest || s != us || errMessage(m) != errMessage(um) || !strings.Contains(errMessage(m), "does not name a known response") {
					t.Fatalf("foreign id: %d %v; unknown id: %d %v; want the same 400", s, m, us, um)
				}
			})
		}
	}
	// The owner still reads it, and the inspection route (gated, unscoped)
	// shows it with its owner.
	if s, m := do(t, "GET", srv.URL+"/v1/tasks/"+id, ``, alice); s != 200 || m["status"] != "done" {
		t.Fatalf("owner read: %d %v", s, m)
	}
	if s, m := do(t, "GET", srv.URL+"/v1/dev/runs/"+id, ``, nil); s != 200 || m["owner"] != "alice" {
		t.Fatalf("inspection read: %d %v", s, m)
	}
}

// x-delta-user is refused, not cut, past 256 bytes or when it is not valid
// UTF-8: cutting folded two principals sharing their first 256 bytes into
// one, and could split a character.
func TestOwnerHeaderIsRefusedNotCut(t *testing.T) {
	srv := newServer(t, api.Options{}, echoProvider)
	prefix := "a" + strings.Repeat("é", 127) // 255 bytes: byte 256 starts a two-byte character
	long1, long2 := prefix+"é-one", prefix+"é-two"
	exact := strings.Repeat("é", 128) // 256 bytes
	s, m := do(t, "POST", srv.URL+"/v1/tasks", `{"input":"hi"}`, map[string]string{"X-Delta-User": exact})
	if s != http.StatusAccepted {
		t.Fatalf("256-byte owner: %d %v", s, m)
	}
	for _, tt := range []struct{ name, method, path, body, owner, msg string }{
		{"long create", "POST", "/v1/tasks", `{"input":"hi"}`, long1, "longer than 256 bytes"},
		{"long respond", "POST", "/v1/responses", `{"input":"hi"}`, long2, "longer than 256 bytes"},
		{"long read", "GET", "/v1/tasks/" + m["id"].(string), ``, long1, "longer than 256 bytes"},
		{"long events", "GET", "/v1/tasks/" + m["id"].(string) + "/events?since=0", ``, long1, "longer than 256 bytes"},
		{"long queue", "GET", "/v1/queue", ``, long1, "longer than 256 bytes"},
		{"invalid utf-8", "POST", "/v1/tasks", `{"input":"hi"}`, "bob\xff", "not valid UTF-8"},
		{"invalid utf-8 read", "GET", "/v1/tasks/" + m["id"].(string), ``, "\xc3", "not valid UTF-8"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, m := do(t, tt.method, srv.URL+tt.path, tt.body, map[string]string{"X-Delta-User": tt.owner})
			if s != http.StatusBadRequest || !strings.Contains(errMessage(m), tt.msg) {
				t.Fatalf("%d %v, want 400 containing %q", s, m, tt.msg)
			}
		})
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
