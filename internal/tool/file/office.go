package file

import (
	"archive/zip"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxOfficePart bounds how much of one decompressed part of an Office file
// is parsed, so a zip bomb costs a bounded amount of work.
const maxOfficePart = 64 << 20

// maxOfficeText bounds the text extracted from one Office file. A part's
// size does not bound its text: each cell of a workbook may repeat one long
// shared string, so a file of a few kilobytes can stand for gigabytes.
const maxOfficeText = 8 << 20

// errTextFull stops an extraction whose text reached maxOfficeText.
var errTextFull = errors.New("extracted text is full")

// textCap collects extracted text up to max bytes. A write that does not
// fit keeps what fits (whole runes) and reports errTextFull, as does every
// write after it.
type textCap struct {
	b    strings.Builder
	max  int
	full bool
}

func (c *textCap) WriteString(s string) error {
	if c.full {
		return errTextFull
	}
	if room := c.max - c.b.Len(); len(s) > room {
		for room > 0 && !utf8.RuneStart(s[room]) {
			room--
		}
		c.b.WriteString(s[:room])
		c.full = true
		return errTextFull
	}
	c.b.WriteString(s)
	return nil
}

func (c *textCap) WriteByte(b byte) error { return c.WriteString(string(b)) }

func (c *textCap) String() string { return c.b.String() }

// extractOffice returns the plain text of a .docx or .xlsx file, read with
// the standard library (no host unzip needed). cut reports that the text
// reached maxOfficeText and the rest of the file was not extracted.
func extractOffice(ctx context.Context, r io.ReaderAt, size int64, kind string) (text string, cut bool, err error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return "", false, fmt.Errorf("it is not a valid Office file: %v", err)
	}
	b := &textCap{max: maxOfficeText}
	if strings.Contains(kind, "docx") {
		err = docxText(ctx, zr, b)
	} else {
		err = xlsxText(ctx, zr, b)
	}
	if errors.Is(err, errTextFull) {
		return b.String(), true, nil
	}
	if err != nil {
		return "", false, err
	}
	return b.String(), false, nil
}

// openPart opens a part of the package by name.
func openPart(zr *zip.Reader, name string) (io.ReadCloser, error) {
	for _, f := range zr.File {
		if f.Name == name {
			rc, err := f.Open()
			if err != nil {
				return nil, fmt.Errorf("open %s inside the file: %v", name, err)
			}
			return struct {
				io.Reader
				io.Closer
			}{io.LimitReader(rc, maxOfficePart), rc}, nil
		}
	}
	return nil, fmt.Errorf("it has no %s, so it is not a readable Office file", name)
}

// walkXML calls fn for every token of a part, stopping at the first error.
func walkXML(ctx context.Context, zr *zip.Reader, name string, fn func(xml.Token) error) error {
	rc, err := openPart(zr, name)
	if err != nil {
		return err
	}
	defer rc.Close()
	dec := xml.NewDecoder(rc)
	for i := 0; ; i++ {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s inside the file is damaged: %v", name, err)
		}
		if err := fn(tok); err != nil {
			return err
		}
	}
}

// docxText flattens word/document.xml: one line per paragraph, table cells
// separated by tabs and rows by newlines. Deleted (tracked) text is skipped
// because it lives in w:delText, not w:t.
func docxText(ctx context.Context, zr *zip.Reader, b *textCap) error {
	var (
		inText bool
		cells  int // depth of table cells we are inside
	)
	return walkXML(ctx, zr, "word/document.xml", func(tok xml.Token) error {
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "t":
				inText = true
			case "tab":
				return b.WriteByte('\t')
			case "br", "cr":
				return b.WriteByte('\n')
			case "tc":
				cells++
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "t":
				inText = false
			case "p":
				if cells > 0 {
					return b.WriteByte(' ')
				}
				return b.WriteByte('\n')
			case "tc":
				cells--
				return b.WriteByte('\t')
			case "tr":
				return b.WriteByte('\n')
			}
		case xml.CharData:
			if inText {
				return b.WriteString(string(t))
			}
		}
		return nil
	})
}

// xlsxText renders every sheet, in workbook order, as "## Sheet: name"
// followed by one tab-separated line per row. Cells show their stored value
// (a formula's cached result; dates as Excel serial numbers).
func xlsxText(ctx context.Context, zr *zip.Reader, b *textCap) error {
	shared, err := sharedStrings(ctx, zr)
	if err != nil {
		return err
	}
	sheets, err := sheetParts(ctx, zr)
	if err != nil {
		return err
	}
	for i, sh := range sheets {
		if i > 0 {
			if err := b.WriteByte('\n'); err != nil {
				return err
			}
		}
		if err := b.WriteString("## Sheet: " + sh.name + "\n"); err != nil {
			return err
		}
		if err := sheetText(ctx, zr, sh.part, shared, b); err != nil {
			return err
		}
	}
	return nil
}

// sharedStrings reads xl/sharedStrings.xml, which a workbook may lack.
func sharedStrings(ctx context.Context, zr *zip.Reader) ([]string, error) {
	if !hasPart(zr, "xl/sharedStrings.xml") {
		return nil, nil
	}
	var (
		out    []string
		cur    strings.Builder
		inText bool
		inPh   bool // phonetic hints (rPh) repeat the text in another script
	)
	err := walkXML(ctx, zr, "xl/sharedStrings.xml", func(tok xml.Token) error {
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "si":
				cur.Reset()
			case "t":
				inText = true
			case "rPh":
				inPh = true
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "si":
				out = append(out, cur.String())
			case "t":
				inText = false
			case "rPh":
				inPh = false
			}
		case xml.CharData:
			if inText && !inPh {
				cur.Write(t)
			}
		}
		return nil
	})
	return out, err
}

type sheet struct{ name, part string }

// sheetParts lists the sheets in workbook order with the part holding each.
func sheetParts(ctx context.Context, zr *zip.Reader) ([]sheet, error) {
	targets := map[string]string{}
	if hasPart(zr, "xl/_rels/workbook.xml.rels") {
		err := walkXML(ctx, zr, "xl/_rels/workbook.xml.rels", func(tok xml.Token) error {
			if t, ok := tok.(xml.StartElement); ok && t.Name.Local == "Relationship" {
				id, target := attr(t, "Id"), attr(t, "Target")
				if strings.HasPrefix(target, "/") {
					target = strings.TrimPrefix(target, "/")
				} else {
					target = path.Join("xl", target)
				}
				targets[id] = target
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	var out []sheet
	err := walkXML(ctx, zr, "xl/workbook.xml", func(tok xml.Token) error {
		if t, ok := tok.(xml.StartElement); ok && t.Name.Local == "sheet" {
			part := targets[attr(t, "id")]
			if part == "" {
				part = fmt.Sprintf("xl/worksheets/sheet%d.xml", len(out)+1)
			}
			out = append(out, sheet{name: attr(t, "name"), part: part})
		}
		return nil
	})
	return out, err
}

// sheetText appends one sheet's rows to b. A row is written cell by cell,
// so one whose cells repeat a long shared string stops at b's cap rather
// than being joined whole first.
func sheetText(ctx context.Context, zr *zip.Reader, part string, shared []string, b *textCap) error {
	var (
		row      []string
		col      int    // column of the current cell, 0-based
		typ      string // the cell's t attribute
		val      strings.Builder
		inVal    bool
		inCell   bool
		rowBytes int // bytes the row's cells hold so far
	)
	return walkXML(ctx, zr, part, func(tok xml.Token) error {
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "row":
				row, rowBytes = row[:0], 0
			case "c":
				inCell, typ = true, attr(t, "t")
				val.Reset()
				col = len(row)
				if c, ok := column(attr(t, "r")); ok && c >= len(row) && c < len(row)+1024 {
					col = c
				}
			case "v":
				inVal = inCell
			case "t": // inline string: <c t="inlineStr"><is><t>…</t></is></c>
				inVal = inCell && typ == "inlineStr"
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "v", "t":
				inVal = false
			case "c":
				for len(row) < col {
					row = append(row, "")
				}
				row = append(row, cellValue(typ, val.String(), shared))
				inCell = false
				rowBytes += len(row[len(row)-1]) + 1
				if rowBytes > b.max {
					return writeRow(b, row) // more than the cap holds: write what fits now
				}
			case "row":
				if err := writeRow(b, row); err != nil {
					return err
				}
				rowBytes = 0
			}
		case xml.CharData:
			if inVal {
				val.Write(t)
			}
		}
		return nil
	})
}

// writeRow writes one row's cells, tab-separated, and its newline.
func writeRow(b *textCap, row []string) error {
	if len(row) == 0 {
		return nil
	}
	for i, c := range row {
		if i > 0 {
			if err := b.WriteByte('\t'); err != nil {
				return err
			}
		}
		if err := b.WriteString(c); err != nil {
			return err
		}
	}
	return b.WriteByte('\n')
}

func cellValue(typ, v string, shared []string) string {
	switch typ {
	case "s":
		if i, err := strconv.Atoi(v); err == nil && i >= 0 && i < len(shared) {
			return shared[i]
		}
		return v
	case "b":
		if v == "1" {
			return "TRUE"
		}
		return "FALSE"
	default:
		return v
	}
}

// column turns a cell reference like "C7" into its 0-based column.
func column(ref string) (int, bool) {
	c := 0
	n := 0
	for _, r := range ref {
		if r < 'A' || r > 'Z' {
			break
		}
		c = c*26 + int(r-'A'+1)
		n++
		if n > 3 {
			return 0, false
		}
	}
	return c - 1, n > 0
}

func attr(t xml.StartElement, local string) string {
	for _, a := range t.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

func hasPart(zr *zip.Reader, name string) bool {
	for _, f := range zr.File {
		if f.Name == name {
			return true
		}
	}
	return false
}
