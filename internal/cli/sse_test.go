package cli

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func readAllFrames(t testing.TB, in string) ([]frame, error) {
	t.Helper()
	r := newSSEReader(strings.NewReader(in))
	var out []frame
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, f)
	}
}

func TestSSEReader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []frame
	}{
		{"delta frame", "id: 7\nevent: run.finished\ndata: {\"status\":\"done\"}\n\n",
			[]frame{{ID: "7", Event: "run.finished", Data: `{"status":"done"}`}}},
		{"ping comments skipped", ": ping\n\n: ping\nid: 1\nevent: a\ndata: {}\n\n: ping\n\n",
			[]frame{{ID: "1", Event: "a", Data: "{}"}}},
		{"multi-line data joined", "data: line1\ndata: line2\n\n",
			[]frame{{Data: "line1\nline2"}}},
		{"CRLF line ends", "event: x\r\ndata: 1\r\n\r\n",
			[]frame{{Event: "x", Data: "1"}}},
		{"bare CR line ends", "event: x\rdata: 1\r\r",
			[]frame{{Event: "x", Data: "1"}}},
		{"no space after colon", "event:x\ndata:1\n\n",
			[]frame{{Event: "x", Data: "1"}}},
		{"only one leading space dropped", "data:  two\n\n",
			[]frame{{Data: " two"}}},
		{"field without colon means empty value", "data\n\n",
			[]frame{{Data: ""}}},
		{"frame without data is not dispatched", "event: lonely\n\nid: 3\n\n",
			nil},
		{"unterminated last frame is dropped", "data: complete\n\ndata: partial\n",
			[]frame{{Data: "complete"}}},
		{"unknown fields ignored", "retry: 100\nfoo: bar\ndata: ok\n\n",
			[]frame{{Data: "ok"}}},
		{"event name does not leak into next frame", "event: a\ndata: 1\n\ndata: 2\n\n",
			[]frame{{Event: "a", Data: "1"}, {Data: "2"}}},
		{"id with NUL ignored", "id: a\x00b\ndata: x\n\n",
			[]frame{{Data: "x"}}},
		{"empty stream", "", nil},
		{"blank lines only", "\n\n\r\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAllFrames(t, tt.in)
			if err != nil {
				t.Fatalf("Next: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("frames = %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestSSEReaderRefusesHugeFrame(t *testing.T) {
	// A peer that never ends a frame must not make the reader buffer forever.
	for _, in := range []string{
		"data: " + strings.Repeat("x", 2000) + "\n\n",              // one long line
		strings.Repeat("data: xxxxxxxxxx\n", 200) + "\n",           // many lines in one frame
		strings.Repeat(": ping\n", 10) + strings.Repeat("x", 5000), // no line end at all
	} {
		r := newSSEReader(strings.NewReader(in))
		r.max = 1024
		if _, err := r.Next(); !errors.Is(err, errFrameTooLarge) {
			t.Fatalf("Next = %v, want errFrameTooLarge", err)
		}
	}
	// Frames under the limit, one after another, are fine: the limit is per frame.
	r := newSSEReader(strings.NewReader(strings.Repeat("data: "+strings.Repeat("y", 500)+"\n\n", 10)))
	r.max = 1024
	for i := 0; i < 10; i++ {
		if _, err := r.Next(); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
}

// encodeSSE writes frames back in canonical form.
func encodeSSE(fs []frame) string {
	var b strings.Builder
	for _, f := range fs {
		if f.ID != "" {
			b.WriteString("id: " + f.ID + "\n")
		}
		if f.Event != "" {
			b.WriteString("event: " + f.Event + "\n")
		}
		for _, l := range strings.Split(f.Data, "\n") {
			b.WriteString("data: " + l + "\n")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// FuzzSSE: any input parses without panic; every frame's fields are single
// lines; re-encoding the frames and parsing again gives the same frames.
func FuzzSSE(f *testing.F) {
	f.Add("id: 7\nevent: run.finished\ndata: {\"status\":\"done\"}\n\n")
	f.Add(": ping\n\ndata: a\ndata: b\n\n")
	f.Add("event: x\r\ndata: 1\r\n\r\n")
	f.Add("event:x\rdata:1\r\r")
	f.Add("data\n\nid\n\nevent\n\n")
	f.Add("data: partial")
	f.Add("\r\n\r\r\n\n")
	f.Add("id: a\x00b\ndata: x\n\n")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := readAllFrames(t, in)
		if err != nil {
			if errors.Is(err, errFrameTooLarge) {
				return
			}
			t.Fatalf("unexpected error: %v", err)
		}
		for _, fr := range got {
			if strings.ContainsAny(fr.Event, "\r\n") || strings.ContainsAny(fr.ID, "\r\n\x00") {
				t.Fatalf("field spans lines: %#v", fr)
			}
			if strings.Contains(fr.Data, "\r") {
				t.Fatalf("data keeps a CR: %#v", fr)
			}
		}
		again, err := readAllFrames(t, encodeSSE(got))
		if err != nil {
			t.Fatalf("re-parse: %v", err)
		}
		if len(again) != len(got) {
			t.Fatalf("round trip: %d frames, then %d", len(got), len(again))
		}
		for i := range got {
			// The encoding drops an empty event/id, as the reader does.
			if got[i] != again[i] {
				t.Fatalf("round trip frame %d: %#v, then %#v", i, got[i], again[i])
			}
		}
	})
}

// BenchmarkSSEReader measures parsing a dev stream of typical event frames.
func BenchmarkSSEReader(b *testing.B) {
	one := "id: 291\nevent: model.call\ndata: {\"id\":291,\"run_id\":\"resp_743972b48bd586b6\",\"name\":\"model.call\"," +
		"\"data\":{\"model\":\"scripted\",\"step\":97,\"usage\":{\"input_tokens\":13158,\"output_tokens\":63}}}\n\n: ping\n\n"
	stream := strings.Repeat(one, 1000)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		r := newSSEReader(strings.NewReader(stream))
		n := 0
		for {
			if _, err := r.Next(); err != nil {
				break
			}
			n++
		}
		if n != 1000 {
			b.Fatalf("parsed %d frames, want 1000", n)
		}
	}
}
