package config

import (
	"errors"
	"io"
	"maps"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/deltaharness/delta/internal/clip"
)

func TestParseEnvFile(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   string
		want map[string]string
	}{
		{"empty", "", map[string]string{}},
		{"simple", "A=1\nB=two\n", map[string]string{"A": "1", "B": "two"}},
		{"no trailing newline", "A=1", map[string]string{"A": "1"}},
		{"trimmed key and value", "  KEY  =  value with spaces  \n", map[string]string{"KEY": "value with spaces"}},
		{"crlf", "A=1\r\nB=2\r\n", map[string]string{"A": "1", "B": "2"}},
		{"blank and comment lines", "\n   \n# C=3\n   # D=4\nE=5\n", map[string]string{"E": "5"}},
		{"double quotes stripped", `A="quoted value"`, map[string]string{"A": "quoted value"}},
		{"single quotes stripped", `A='quoted'`, map[string]string{"A": "quoted"}},
		{"only one pair stripped", `A=""x""`, map[string]string{"A": `"x"`}},
		{"mismatched quotes kept", `A="x'`, map[string]string{"A": `"x'`}},
		{"lone quote kept", `A="`, map[string]string{"A": `"`}},
		{"empty quoted", `A=""`, map[string]string{"A": ""}},
		{"quotes then trim", `A= " padded " `, map[string]string{"A": " padded "}},
		{"inner quotes kept", `A=say "hi"`, map[string]string{"A": `say "hi"`}},
		{"no inline comment removal", "A=1 # not a comment", map[string]string{"A": "1 # not a comment"}},
		{"no expansion", "A=$HOME/${USER}", map[string]string{"A": "$HOME/${USER}"}},
		{"no escapes", `A=line\nnext\t"`, map[string]string{"A": `line\nnext\t"`}},
		{"equals in value", "URL=https://x/?a=b=c", map[string]string{"URL": "https://x/?a=b=c"}},
		{"empty value", "A=", map[string]string{"A": ""}},
		{"json value", `DELTA_VOCAB={"writeNoun":"crm"}`, map[string]string{"DELTA_VOCAB": `{"writeNoun":"crm"}`}},
		{"export dropped", "export A=1\nB=2", map[string]string{"B": "2"}},
		{"no equals dropped", "JUSTAKEY\nB=2", map[string]string{"B": "2"}},
		{"empty key dropped", "=value\nB=2", map[string]string{"B": "2"}},
		{"key with space dropped", "MY KEY=1", map[string]string{}},
		{"key starting with digit dropped", "1A=1\n_A=2\na9=3", map[string]string{"_A": "2", "a9": "3"}},
		{"key with dash dropped", "A-B=1", map[string]string{}},
		{"key with dot dropped", "A.B=1", map[string]string{}},
		{"later duplicate wins", "A=1\nA=2", map[string]string{"A": "2"}},
		{"hash inside key line is not a comment", "A=#x", map[string]string{"A": "#x"}},
		{"bom ignored", "\uFEFFA=1\nB=2", map[string]string{"A": "1", "B": "2"}},
		{"unicode value", "NAME=Zoë 🚀", map[string]string{"NAME": "Zoë 🚀"}},
		{"long line", "A=" + strings.Repeat("x", 200_000), map[string]string{"A": strings.Repeat("x", 200_000)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseEnvFile(strings.NewReader(tt.in))
			if !maps.Equal(got, tt.want) {
				t.Fatalf("ParseEnvFile(%q)\n got %q\nwant %q", clip.Runes(tt.in, 60), got, tt.want)
			}
		})
	}
}

func TestParseEnvFileReadErrorKeepsWhatWasRead(t *testing.T) {
	r := io.MultiReader(strings.NewReader("A=1\nB=2\n"), iotest.ErrReader(errors.New("disk gone")))
	got := ParseEnvFile(r)
	if got["A"] != "1" || got["B"] != "2" {
		t.Fatalf("got %q, want A=1 B=2 kept after the read error", got)
	}
	if got := ParseEnvFile(iotest.ErrReader(errors.New("boom"))); len(got) != 0 {
		t.Fatalf("got %q from a failing reader", got)
	}
}

func FuzzParseEnvFile(f *testing.F) {
	for _, s := range []string{
		"A=1\nB=two\n", "# c\n\nexport X=1\n", `A="q"` + "\n" + `B='s'`, "=v\nK", "\uFEFFA=1\r\n",
		"A=1 # c", "A=$B", "K=\"", "\x00=\x00", "A=\n=\n==",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := ParseEnvFile(strings.NewReader(s))
		for k, v := range got {
			if !validEnvKey(k) {
				t.Fatalf("invalid key %q accepted from %q", k, s)
			}
			if strings.ContainsAny(v, "\n") {
				t.Fatalf("value %q for %s spans lines", v, k)
			}
			if !strings.Contains(s, k) || !strings.Contains(s, v) {
				t.Fatalf("key %q or value %q not in input %q", k, v, s)
			}
		}
		// Writing the result back as KEY="value" lines parses to the same map.
		var b strings.Builder
		for k, v := range got {
			b.WriteString(k + `="` + v + "\"\n")
		}
		if again := ParseEnvFile(strings.NewReader(b.String())); !maps.Equal(again, got) {
			t.Fatalf("round trip of %q: got %q, want %q", s, again, got)
		}
	})
}

func BenchmarkParseEnvFile(b *testing.B) {
	var sb strings.Builder
	for i := range 100 {
		sb.WriteString("# comment\nKEY_" + strings.Repeat("X", i%7) + `="value number ` + strings.Repeat("v", 20) + "\"\n")
	}
	in := sb.String()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		ParseEnvFile(strings.NewReader(in))
	}
}
