package file

import (
	"archive/zip"
	"bytes"
	"context"
	"testing"
)

// FuzzExtractOffice: whatever a .docx or .xlsx holds, extraction returns
// text within its cap or an error, and never panics.
func FuzzExtractOffice(f *testing.F) {
	seed := func(parts map[string]string) []byte {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for n, body := range parts {
			w, _ := zw.Create(n)
			_, _ = w.Write([]byte(body))
		}
		_ = zw.Close()
		return buf.Bytes()
	}
	f.Add(seed(map[string]string{"word/document.xml": `<w:document><w:body><w:p><w:r><w:t>hi</w:t><w:tab/></w:r></w:p></w:body></w:document>`}), true)
	f.Add(seed(map[string]string{
		"xl/workbook.xml":          `<workbook><sheets><sheet name="S" sheetId="1"/></sheets></workbook>`,
		"xl/sharedStrings.xml":     `<sst><si><t>a</t></si></sst>`,
		"xl/worksheets/sheet1.xml": `<worksheet><sheetData><row><c r="C1" t="s"><v>0</v></c><c t="b"><v>1</v></c></row></sheetData></worksheet>`,
	}), false)
	f.Add([]byte("PK\x03\x04"), false)
	f.Fuzz(func(t *testing.T, data []byte, docx bool) {
		kind := "an Excel workbook (.xlsx)"
		if docx {
			kind = "a Word document (.docx)"
		}
		text, _, err := extractOffice(context.Background(), bytes.NewReader(data), int64(len(data)), kind)
		if err == nil && len(text) > maxOfficeText {
			t.Fatalf("extracted %d bytes, over the %d cap", len(text), maxOfficeText)
		}
	})
}
