package file

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"
)

func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func nums(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	return b.String()
}

func TestRead(t *testing.T) {
	e := newEnv(t)
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01"
	e.write(t, "img.png", png)
	e.write(t, "empty.txt", "")
	e.write(t, "big.txt", nums(5000))
	e.write(t, "crlf.txt", "one\r\ntwo\r\n")
	e.write(t, "nonl.txt", "no newline at end")
	e.write(t, "latin1.csv", "caf\xe9;\x93quoted\x94\n")
	e.write(t, "long.txt", strings.Repeat("x", 100_000)+"\nsecond\n")
	e.write(t, "wide.txt", strings.Repeat(strings.Repeat("w", 99)+"\n", 3000))
	// a UTF-8 rune straddles the 8 KiB sniff boundary: still UTF-8, not Latin-1
	e.write(t, "straddle.txt", "a"+strings.Repeat("é", 5000))
	e.write(t, ".delta/spill/r1.c1.txt", "the full spilled result")
	e.write(t, "notes/delta.env", "MODEL_API_KEY=sk-x\n")
	if err := os.Symlink(".env", filepath.Join(e.dir, "envlink")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(e.dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name  string
		args  m
		isErr bool
		exact string   // whole result text, when set
		want  []string // substrings
		not   []string // must not appear
	}{
		{name: "small file whole", args: m{"path": "notes/a.md"}, exact: "alpha\n"},
		{name: "through an inside symlink", args: m{"path": "inlink"}, exact: "alpha\n"},
		{name: "crlf kept exactly", args: m{"path": "crlf.txt"}, exact: "one\r\ntwo\r\n"},
		{name: "no final newline", args: m{"path": "nonl.txt"}, exact: "no newline at end"},
		{name: "protected names stay readable", args: m{"path": "POLICY.md"}, exact: "be careful\n"},
		{name: "secrets file refused", args: m{"path": ".env"}, isErr: true, want: []string{"secrets file", "vault"}, not: []string{"TOKEN"}},
		{name: "subfolder secrets file refused", args: m{"path": "notes/delta.env"}, isErr: true, want: []string{"secrets file"}},
		{name: "secrets file through a link refused", args: m{"path": "envlink"}, isErr: true, want: []string{"secrets file", "symlink"}, not: []string{"TOKEN"}},
		{name: "spill file readable", args: m{"path": ".delta/spill/r1.c1.txt"}, exact: "the full spilled result"},
		{name: "empty file", args: m{"path": "empty.txt"}, exact: "[empty.txt is empty: 0 bytes]"},
		{name: "straddling rune is text", args: m{"path": "straddle.txt"}, exact: "a" + strings.Repeat("é", 5000)},
		{name: "latin-1 decoded", args: m{"path": "latin1.csv"}, want: []string{"café;“quoted”", "Windows-1252"}},
		{name: "big file windowed", args: m{"path": "big.txt"},
			want: []string{"1\n2\n", "\n2000\n[lines 1–2000 of 5000 shown; call read_file with offset=2001 to continue]"},
			not:  []string{"\n2001\n"}},
		{name: "offset and limit", args: m{"path": "big.txt", "offset": 4999, "limit": 10},
			exact: "4999\n5000\n[lines 4999–5000 of 5000 shown; end of file]"},
		{name: "middle window", args: m{"path": "big.txt", "offset": 10, "limit": 2},
			exact: "10\n11\n[lines 10–11 of 5000 shown; call read_file with offset=12 to continue]"},
		{name: "character budget", args: m{"path": "wide.txt"},
			want: []string{"[lines 1–160 of 3000 shown; call read_file with offset=161 to continue]"}},
		{name: "one huge line", args: m{"path": "long.txt"},
			want: []string{"[line 1 is 100000 characters long; only its start is shown]", "offset=2 to continue"},
			not:  []string{"second"}},
		{name: "after a huge line", args: m{"path": "long.txt", "offset": 2}, exact: "second\n[lines 2–2 of 2 shown; end of file]"},
		{name: "offset past the end", args: m{"path": "big.txt", "offset": 6000}, isErr: true, want: []string{"big.txt", "only 5000 lines"}},
		{name: "negative offset", args: m{"path": "big.txt", "offset": -1}, isErr: true, want: []string{"offset must be 1 or more"}},
		{name: "negative limit", args: m{"path": "big.txt", "limit": -5}, isErr: true, want: []string{"limit must be 1 or more"}},
		{name: "fifo is refused, not blocked on", args: m{"path": "pipe"}, isErr: true, want: []string{"cannot read pipe: it is not a regular file"}},
		{name: "missing", args: m{"path": "nope.txt"}, isErr: true, want: []string{"cannot read nope.txt: it does not exist"}},
		{name: "folder", args: m{"path": "notes"}, isErr: true, want: []string{"cannot read notes: it is a folder", "list_files"}},
		{name: "binary", args: m{"path": "img.png"}, isErr: true, want: []string{"img.png", "binary file (image/png"}},
		{name: "traversal", args: m{"path": "../outside/secret.txt"}, isErr: true, want: []string{"outside the workspace"}, not: []string{"secret\""}},
		{name: "escaping symlink", args: m{"path": "leak"}, isErr: true, want: []string{"cannot read leak", "outside the workspace", "symlink"}},
		{name: "escaping symlinked folder", args: m{"path": "leakdir/secret.txt"}, isErr: true, want: []string{"outside the workspace"}},
		{name: "absolute", args: m{"path": "/etc/passwd"}, isErr: true, want: []string{"absolute"}},
		{name: "absolute inside gets a hint", args: m{"path": filepath.Join(e.dir, "notes/a.md")}, isErr: true, want: []string{`use "notes/a.md"`}},
		{name: "missing path argument", args: m{}, isErr: true, want: []string{`missing required field "path"`}},
		{name: "offset as string", args: m{"path": "big.txt", "offset": "10"}, isErr: true, want: []string{`field "offset": expected integer`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, Read(e.ws), tt.args)
			if tt.exact != "" {
				if res.IsError || res.Text != tt.exact {
					t.Fatalf("read_file(%v) = %q (error %v), want %q", tt.args, clip(res.Text), res.IsError, clip(tt.exact))
				}
				return
			}
			expect(t, res, tt.isErr, tt.want...)
			for _, n := range tt.not {
				if strings.Contains(res.Text, n) {
					t.Errorf("result holds %q", n)
				}
			}
			if n := utf8.RuneCountInString(res.Text); n > MaxReadChars+300 {
				t.Errorf("result is %d characters, over the read budget", n)
			}
		})
	}
}

func TestReadWindowsJoinUp(t *testing.T) {
	// Paging with the offsets the notes give must reproduce the file exactly.
	e := newEnv(t)
	var b strings.Builder
	for i := range 4000 {
		fmt.Fprintf(&b, "%d %s\n", i, strings.Repeat("é", i%40))
	}
	want := b.String()
	e.write(t, "paged.txt", want)
	var got strings.Builder
	offset := 1
	for range 100 {
		res := call(t, Read(e.ws), m{"path": "paged.txt", "offset": offset})
		expect(t, res, false)
		body, note, ok := strings.Cut(res.Text, "[lines ")
		if !ok {
			t.Fatalf("no note in %q", clip(res.Text))
		}
		got.WriteString(body)
		if strings.Contains(note, "end of file") {
			break
		}
		if _, err := fmt.Sscanf(note[strings.Index(note, "offset=")+len("offset="):], "%d", &offset); err != nil {
			t.Fatal(err)
		}
	}
	if got.String() != want {
		t.Fatalf("paged text differs from the file (%d vs %d bytes)", got.Len(), len(want))
	}
}

func TestReadOffice(t *testing.T) {
	e := newEnv(t)
	makeZip(t, filepath.Join(e.dir, "brief.docx"), map[string]string{
		"[Content_Types].xml": `<?xml version="1.0"?><Types/>`,
		"word/document.xml": `<?xml version="1.0" encoding="UTF-8"?>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>
<w:p><w:r><w:t>Quarterly brief</w:t></w:r></w:p>
<w:p><w:r><w:t xml:space="preserve">Revenue </w:t></w:r><w:r><w:t>grew</w:t></w:r><w:del><w:r><w:delText>fell</w:delText></w:r></w:del><w:r><w:tab/><w:t>12%</w:t></w:r></w:p>
<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Region</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Sales</w:t></w:r></w:p></w:tc></w:tr>
<w:tr><w:tc><w:p><w:r><w:t>EMEA</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>40</w:t></w:r></w:p></w:tc></w:tr></w:tbl>
</w:body></w:document>`,
	})
	makeZip(t, filepath.Join(e.dir, "data.xlsx"), map[string]string{
		"xl/workbook.xml": `<?xml version="1.0"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">
<sheets><sheet name="Totals" sheetId="1" r:id="rId2"/><sheet name="Notes" sheetId="2" r:id="rId1"/></sheets></workbook>`,
		"xl/_rels/workbook.xml.rels": `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
<Relationship Id="rId1" Type="worksheet" Target="worksheets/sheet2.xml"/><Relationship Id="rId2" Type="worksheet" Target="/xl/worksheets/sheet1.xml"/></Relationships>`,
		"xl/sharedStrings.xml": `<?xml version="1.0"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><si><t>Name</t></si><si><r><t>To</t></r><r><t>tal</t></r></si><si><t>Ann</t></si></sst>`,
		"xl/worksheets/sheet1.xml": `<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>
<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c></row>
<row r="2"><c r="A2" t="s"><v>2</v></c><c r="C2"><f>SUM(1,2)</f><v>3</v></c><c r="D2" t="b"><v>1</v></c></row></sheetData></worksheet>`,
		"xl/worksheets/sheet2.xml": `<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>
<row r="1"><c r="A1" t="inlineStr"><is><t>remember the milk</t></is></c></row></sheetData></worksheet>`,
	})
	e.write(t, "broken.docx", "PK\x03\x04 this is not really a zip")
	makeZip(t, filepath.Join(e.dir, "empty.docx"), map[string]string{"other.xml": "<x/>"})

	tests := []struct {
		path  string
		isErr bool
		want  []string
		not   []string
	}{
		{path: "brief.docx", want: []string{"Word document", "Quarterly brief\n", "Revenue grew\t12%\n", "Region \tSales \t\n", "EMEA \t40 \t\n"}, not: []string{"fell"}},
		{path: "data.xlsx", want: []string{"Excel workbook", "## Sheet: Totals\nName\tTotal\nAnn\t\t3\tTRUE\n", "## Sheet: Notes\nremember the milk\n"}},
		{path: "broken.docx", isErr: true, want: []string{"cannot read broken.docx", "not a valid Office file"}},
		{path: "empty.docx", isErr: true, want: []string{"word/document.xml"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			res := call(t, Read(e.ws), m{"path": tt.path})
			expect(t, res, tt.isErr, tt.want...)
			for _, n := range tt.not {
				if strings.Contains(res.Text, n) {
					t.Errorf("result holds %q: %q", n, res.Text)
				}
			}
		})
	}
}

func TestColumn(t *testing.T) {
	for ref, want := range map[string]int{"A1": 0, "B7": 1, "Z3": 25, "AA1": 26, "AB10": 27, "XFD1": 16383} {
		if got, ok := column(ref); !ok || got != want {
			t.Errorf("column(%q) = %d, %v; want %d", ref, got, ok, want)
		}
	}
	for _, bad := range []string{"", "1", "ABCD1"} {
		if _, ok := column(bad); ok {
			t.Errorf("column(%q) accepted", bad)
		}
	}
}

func BenchmarkReadWindow(b *testing.B) {
	dir := b.TempDir()
	p := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(p, []byte(numbered(200_000)), 0o644); err != nil {
		b.Fatal(err)
	}
	ws, err := openWS(dir)
	if err != nil {
		b.Fatal(err)
	}
	rd := Read(ws)
	args := []byte(`{"path":"big.txt","offset":100000,"limit":100}`)
	b.ResetTimer()
	for b.Loop() {
		if _, err := runRaw(rd, args); err != nil {
			b.Fatal(err)
		}
	}
}

// TestReadOfficeTextIsBounded: a small workbook whose one shared string is
// repeated by thousands of cells expands to gigabytes of text; read_file
// stops extracting at its cap and says so, instead of holding it all.
func TestReadOfficeTextIsBounded(t *testing.T) {
	e := newEnv(t)
	var sheet strings.Builder
	sheet.WriteString(`<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1">`)
	for range 2000 {
		sheet.WriteString(`<c t="s"><v>0</v></c>`)
	}
	sheet.WriteString(`</row></sheetData></worksheet>`)
	makeZip(t, filepath.Join(e.dir, "bomb.xlsx"), map[string]string{
		"xl/workbook.xml": `<?xml version="1.0"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheets><sheet name="S" sheetId="1"/></sheets></workbook>`,
		"xl/sharedStrings.xml": `<?xml version="1.0"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><si><t>` +
			strings.Repeat("x", 1<<20) + `</t></si></sst>`,
		"xl/worksheets/sheet1.xml": sheet.String(),
	})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res := call(t, Read(e.ws), m{"path": "bomb.xlsx"})
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
		t.Errorf("reading a 2 GB expansion allocated %d MB; extraction must stop at its cap", alloc>>20)
	}
	if res.IsError || !strings.Contains(res.Text, "extraction stopped after its first 8 MB of text") {
		t.Errorf("read_file bomb.xlsx = %.300q, want its text with a note that extraction stopped", res.Text)
	}
	if next := call(t, Read(e.ws), m{"path": "bomb.xlsx", "offset": 2}); !strings.Contains(next.Text, "xxxxxxxx") {
		t.Errorf("the workbook's text is not shown: %.300q", next.Text)
	}
}
