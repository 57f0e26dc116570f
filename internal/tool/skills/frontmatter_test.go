package skills

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseFrontMatter(t *testing.T) {
	for _, tc := range []struct {
		name, in, wantName, wantDesc, wantBody string
	}{
		{"plain", "---\nname: cite-check\ndescription: Check every citation against its source.\n---\n# Steps\n",
			"cite-check", "Check every citation against its source.", "# Steps\n"},
		{"quoted", "---\nname: \"cite check\"\ndescription: 'It''s for citations: all of them'\n---\n",
			"cite check", "It's for citations: all of them", ""},
		{"double-quoted escapes", "---\nname: x\ndescription: \"Tab\\there \\\"quoted\\\"\"\n---\n", "x", "Tab\there \"quoted\"", ""},
		{"folded block", "---\nname: jd\ndescription: >\n  Write a job description\n  from the hiring brief.\n\n  Second paragraph.\nother: 1\n---\nbody",
			"jd", "Write a job description from the hiring brief.\nSecond paragraph.\n", "body"},
		{"literal block strip", "---\ndescription: |-\n  line one\n  line two\n\nname: lit\n---\n", "lit", "line one\nline two", ""},
		{"literal keep", "---\ndescription: |+\n  kept\n\n---\n", "", "kept\n\n", ""},
		{"explicit indent", "---\ndescription: |2\n    indented more\n  base\n---\n", "", "  indented more\nbase\n", ""},
		{"plain continued", "---\ndescription: Check the\n  citations carefully # a comment\nname: c\n---\n", "c", "Check the citations carefully", ""},
		{"comments and nesting", "---\n# a comment\nname: n # trailing\nmetadata:\n  description: not this one\ntags:\n  - a\ndescription: the real one here\n---\n",
			"n", "the real one here", ""},
		{"crlf and bom", "\ufeff---\r\nname: w\r\ndescription: >\r\n  windows line\r\n  endings\r\n---\r\nbody\r\n", "w", "windows line endings\n", "body\n"},
		{"dots close", "---\nname: d\ndescription: closed by dots\n...\nrest", "d", "closed by dots", "rest"},
		{"multi-line double quote", "---\ndescription: \"one\n  two\"\n---\n", "", "one two", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fm, body, err := ParseFrontMatter(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if fm.Name != tc.wantName || fm.Description != tc.wantDesc || body != tc.wantBody {
				t.Fatalf("got name %q description %q body %q\nwant name %q description %q body %q", fm.Name, fm.Description, body, tc.wantName, tc.wantDesc, tc.wantBody)
			}
		})
	}
	for _, bad := range []string{"", "no front matter", "---\nname: x\nnever closed", "--- \n"} {
		if _, _, err := ParseFrontMatter(bad); err == nil {
			t.Errorf("ParseFrontMatter(%q) succeeded", bad)
		}
	}
}

// FuzzParseFrontMatter: any input parses or is refused without a panic, a
// parsed value is valid UTF-8 when the input is, and the body is a suffix
// of the (normalised) input.
func FuzzParseFrontMatter(f *testing.F) {
	for _, s := range []string{
		"---\nname: a\ndescription: >\n  b\n  c\n---\nbody",
		"---\ndescription: |+2\n   x\n\n---\n",
		"---\ndescription: \"\\u00e9\\\n x\"\n---\n",
		"---\ndescription: 'a''b\n---\n",
		"---\nk: |\n\tz\n---",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		fm, body, err := ParseFrontMatter(in)
		if err != nil {
			return
		}
		norm := strings.ReplaceAll(strings.TrimPrefix(in, "\ufeff"), "\r\n", "\n")
		if !strings.HasSuffix(norm, body) {
			t.Fatalf("body %q is not a suffix of the input", body)
		}
		if utf8.ValidString(in) && (!utf8.ValidString(fm.Name) && !strings.Contains(in, `\`) || !utf8.ValidString(fm.Description) && !strings.Contains(in, `\`)) {
			t.Fatalf("invalid UTF-8 from valid input: %q %q", fm.Name, fm.Description)
		}
	})
}
