package workspace

import (
	"strings"
	"testing"
)

func BenchmarkResolve(b *testing.B) {
	root, _ := fixture(b)
	for b.Loop() {
		if _, err := root.Resolve("c1/sub/back"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheckWritable(b *testing.B) {
	root, _ := fixture(b)
	for b.Loop() {
		if err := root.CheckWritable("dir/sub/notes.md"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriteFile(b *testing.B) {
	root, _ := fixture(b)
	data := []byte(strings.Repeat("x", 4096))
	for b.Loop() {
		if err := root.WriteFile("dir/bench.txt", data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSpillUnderCap(b *testing.B) { benchSpill(b, strings.Repeat("y", 19_000)) }

func BenchmarkSpillOverCap(b *testing.B) { benchSpill(b, strings.Repeat("z", 200_000)) }

// benchSpill spills text under a 20,000-character cap.
func benchSpill(b *testing.B, text string) {
	root, _ := fixture(b)
	for b.Loop() {
		if _, err := root.Spill("r", "c", text, 20_000); err != nil {
			b.Fatal(err)
		}
	}
}
