package form

import (
	"encoding/json"
	"testing"

	"github.com/deltaharness/delta/internal/bobby/snapshot"
)

// BenchmarkSnapshot measures an accessibility snapshot of the form fixture:
// time per snapshot and the bytes an agent pays for (the compact text).
func BenchmarkSnapshot(b *testing.B) {
	ctx := openPage(b, "/form.html")
	var bytes, nodes int
	for b.Loop() {
		s, err := snapshot.Take(ctx, snapshot.Options{})
		if err != nil {
			b.Fatal(err)
		}
		bytes, nodes = s.Bytes, s.ShownNodes
	}
	b.ReportMetric(float64(bytes), "bytes/snapshot")
	b.ReportMetric(float64(nodes), "nodes/snapshot")
}

// BenchmarkFormSnapshot measures a form snapshot of the same fixture and the
// size of its JSON.
func BenchmarkFormSnapshot(b *testing.B) {
	ctx := openPage(b, "/form.html")
	var size int
	for b.Loop() {
		fs, err := Snapshot(ctx, Options{})
		if err != nil {
			b.Fatal(err)
		}
		raw, err := json.Marshal(fs)
		if err != nil {
			b.Fatal(err)
		}
		size = len(raw)
	}
	b.ReportMetric(float64(size), "bytes/snapshot")
}
