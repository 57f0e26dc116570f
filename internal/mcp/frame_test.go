package mcp

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// wantFrames is what frameReader must pass on: each line whose first
// non-blank byte is '{' or '[', without its leading blanks, in order.
func wantFrames(in []byte) []byte {
	var out []byte
	for _, line := range bytes.SplitAfter(in, []byte("\n")) {
		rest := bytes.TrimLeft(line, " \t\r\n")
		if len(rest) > 0 && (rest[0] == '{' || rest[0] == '[') {
			out = append(out, rest...)
		}
	}
	return out
}

func TestFrameReaderSkipsStrayLines(t *testing.T) {
	in := "Weather server v0.1\n{\"id\":1}\n\n  debug: x\n  [1,2]\r\n{\"id\":2}"
	var told []string
	f := &frameReader{r: iotest.OneByteReader(strings.NewReader(in)), onStray: func(l string) { told = append(told, l) }}
	got, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\"id\":1}\n[1,2]\r\n{\"id\":2}"; string(got) != want {
		t.Errorf("passed %q, want %q", got, want)
	}
	if s := f.stray.Load(); s == nil || *s != "Weather server v0.1" || len(told) != 2 {
		t.Errorf("stray %v, told %q", s, told)
	}
}

func TestFrameReaderRefusesAnOversizedMessage(t *testing.T) {
	in := "{\"id\":1}\n{" + strings.Repeat("x", MaxMessageBytes) + "}\n"
	_, err := io.ReadAll(&frameReader{r: strings.NewReader(in)})
	if !errors.Is(err, errTooLarge) {
		t.Errorf("err = %v, want errTooLarge", err)
	}
	// A stray line of any length is only skipped.
	got, err := io.ReadAll(&frameReader{r: strings.NewReader("log " + strings.Repeat("y", MaxMessageBytes+10) + "\n{}\n")})
	if err != nil || string(got) != "{}\n" {
		t.Errorf("after a huge stray line: %q, %v", got, err)
	}
}

func FuzzFrameReader(f *testing.F) {
	for _, s := range []string{"{}\n", "banner\n{\"a\":1}\n", "  [1]\r\n\n\nx", "{\n", "", "\n\n{"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := io.ReadAll(&frameReader{r: iotest.HalfReader(bytes.NewReader(in))})
		if err != nil {
			t.Fatal(err)
		}
		if want := wantFrames(in); !bytes.Equal(got, want) {
			t.Errorf("passed %q, want %q", got, want)
		}
	})
}
