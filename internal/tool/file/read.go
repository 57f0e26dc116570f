package file

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/vision"
	"github.com/deltaharness/delta/internal/workspace"
)

const (
	// DefaultReadLines is how many lines read_file returns when no limit is given.
	DefaultReadLines = 2000
	// MaxReadChars bounds one read_file result, below the central 20,000
	// character cap, so a window is never spilled and re-read in a loop.
	MaxReadChars = 16000
	// sniffLen is how much of a file decides whether it is text.
	sniffLen = 8192
)

type readParams struct {
	Path   string `json:"path" jsonschema:"file path, relative to the workspace root"`
	Offset int    `json:"offset,omitempty" jsonschema:"1-based line to start at (default 1)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"maximum number of lines to return (default 2000)"`
}

// Images records the provenance of the images read_file shows (a
// *vision.Registry): Verify sniffs and hashes the file and remembers it.
type Images interface {
	Verify(rel string) (vision.Info, error)
}

// ImageNote follows the marker read_file returns for an image.
const ImageNote = "attached for vision models; otherwise only this reference"

// Read is the read_file tool. It reads configuration files too: the
// protected names guard writes, not reads. An image file is refused like
// any other binary file; see ReadImages.
func Read(ws *workspace.Root) tool.Tool { return ReadImages(ws, nil) }

// ReadImages is read_file with images: a PNG, JPEG, GIF or WebP file (known
// by its bytes, not its name) comes back as a vision marker and is
// recorded through images as verified, so a vision model is shown it.
// With images nil it is Read.
func ReadImages(ws *workspace.Root, images Images) tool.Tool {
	return tool.Func(ReadName, doc(readDoc), true, func(ctx context.Context, _ tool.Call, p readParams) (tool.Result, error) {
		return read(ctx, ws, images, p)
	})
}

func read(ctx context.Context, ws *workspace.Root, images Images, p readParams) (tool.Result, error) {
	if p.Offset < 0 {
		return tool.Errorf("offset must be 1 or more (the first line is 1), got %d", p.Offset), nil
	}
	if p.Limit < 0 {
		return tool.Errorf("limit must be 1 or more, got %d", p.Limit), nil
	}
	if err := ws.CheckReadable(p.Path); err != nil {
		return failure("read", p.Path, err)
	}
	fi, err := ws.Stat(p.Path)
	if err != nil {
		return failure("read", p.Path, err)
	}
	if fi.IsDir() {
		return tool.Errorf("cannot read %s: it is a folder; use list_files to see what it holds", p.Path), nil
	}
	if !fi.Mode().IsRegular() {
		// A FIFO or device would block or never end.
		return tool.Errorf("cannot read %s: it is not a regular file (%s)", p.Path, fi.Mode().Type()), nil
	}
	if fi.Size() == 0 {
		return tool.Text(fmt.Sprintf("[%s is empty: 0 bytes]", p.Path)), nil
	}
	f, err := ws.OpenFile(p.Path)
	if err != nil {
		return failure("read", p.Path, err)
	}
	defer f.Close()
	head := make([]byte, sniffLen)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return failure("read", p.Path, err)
	}
	head = head[:n]

	var (
		src   io.Reader
		intro string
	)
	switch kind := officeKind(p.Path, head); {
	case kind != "":
		text, cut, err := extractOffice(ctx, f, fi.Size(), kind)
		if err != nil {
			return tool.Errorf("cannot read %s: %v", p.Path, err), nil
		}
		note := ""
		if cut {
			note = fmt.Sprintf("; extraction stopped after its first %d MB of text, the rest of the file is not shown", maxOfficeText>>20)
		}
		src, intro = strings.NewReader(text), fmt.Sprintf("[text extracted from %s; formatting is not shown%s]\n", kind, note)
	case images != nil && vision.Sniff(head) != "":
		return readImage(ws, images, p.Path)
	case bytes.IndexByte(head, 0) >= 0:
		return tool.Errorf("cannot read %s: it is a binary file (%s, %d bytes); read_file returns text only",
			p.Path, http.DetectContentType(head), fi.Size()), nil
	default:
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return failure("read", p.Path, err)
		}
		src = f
		if !validPrefix(head, int64(n) < fi.Size()) {
			// No NUL bytes but not UTF-8: a legacy 8-bit text file (a CSV
			// exported on Windows, say). Show it rather than refuse it.
			src, intro = windows1252(f), "[decoded from Windows-1252/Latin-1: the file is not UTF-8]\n"
		}
	}
	w, err := window(ctx, src, p.Offset, p.Limit)
	if err != nil {
		return failure("read", p.Path, err)
	}
	if w.total == 0 {
		return tool.Text(fmt.Sprintf("[%s holds no text]", p.Path)), nil
	}
	if w.first > w.total {
		return tool.Errorf("cannot read %s from line %d: it has only %d lines", p.Path, w.first, w.total), nil
	}
	if w.whole() {
		return tool.Text(intro + w.text), nil
	}
	return tool.Text(intro + w.text + w.note()), nil
}

// readImage verifies an image through images and returns its marker.
func readImage(ws *workspace.Root, images Images, rel string) (tool.Result, error) {
	info, err := images.Verify(rel)
	if errors.Is(err, vision.ErrNotImage) {
		// It changed under us between the two reads: say what it is now.
		return tool.Errorf("cannot read %s: it is a binary file; read_file returns text and images only", rel), nil
	}
	if err != nil {
		return failure("read", rel, err)
	}
	if !info.Attachable() {
		return tool.Text(fmt.Sprintf("%s\ntoo large to attach to a vision model (the limit is %d bytes); only this reference", info.Marker(), vision.MaxImageBytes)), nil
	}
	return tool.Text(info.Marker() + "\n" + ImageNote), nil
}

// validPrefix reports whether b is UTF-8, allowing a rune cut off at the
// end when more of the file follows.
func validPrefix(b []byte, more bool) bool {
	for k := 0; k <= utf8.UTFMax-1 && k <= len(b); k++ {
		if utf8.Valid(b[:len(b)-k]) {
			return true
		}
		if !more {
			return false
		}
	}
	return false
}

// span is the part of a file read_file shows.
type span struct {
	text        string
	first, last int // 1-based lines shown; last < first when none were
	total       int // lines in the file
	cut         int // a line shown only in part (0 if none)
	cutLen      int // that line's full length in characters
}

func (s span) whole() bool { return s.first == 1 && s.last == s.total && s.cut == 0 }

func (s span) note() string {
	var b strings.Builder
	if !strings.HasSuffix(s.text, "\n") {
		b.WriteByte('\n')
	}
	if s.cut != 0 {
		fmt.Fprintf(&b, "[line %d is %d characters long; only its start is shown]\n", s.cut, s.cutLen)
	}
	if s.last < s.total {
		fmt.Fprintf(&b, "[lines %d–%d of %d shown; call read_file with offset=%d to continue]", s.first, s.last, s.total, s.last+1)
	} else {
		fmt.Fprintf(&b, "[lines %d–%d of %d shown; end of file]", s.first, s.last, s.total)
	}
	return b.String()
}

// window streams src and keeps lines offset… (1-based) up to limit lines and
// MaxReadChars characters, counting every line so the note can say how many
// there are. Memory stays bounded however long a line is.
func window(ctx context.Context, src io.Reader, offset, limit int) (span, error) {
	if offset < 1 {
		offset = 1
	}
	if limit < 1 {
		limit = DefaultReadLines
	}
	s := span{first: offset, last: offset - 1}
	var (
		out       bytes.Buffer
		chars     int
		lineNo    int
		inLine    bool
		lineStart int  // out.Len() when the current line began
		full      bool // the character budget is spent
	)
	br := bufio.NewReaderSize(src, 64<<10)
	for i := 0; ; i++ {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return span{}, err
			}
		}
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if !inLine {
				lineNo++
				inLine = true
				lineStart = out.Len()
			}
			n := utf8.RuneCount(chunk)
			switch {
			case s.cut == lineNo:
				s.cutLen += n
			case full || lineNo < offset || lineNo >= offset+limit:
			case chars+n <= MaxReadChars:
				out.Write(chunk)
				chars += n
			case lineNo == offset:
				// A first line longer than the whole budget: show its start.
				before := utf8.RuneCount(out.Bytes()[lineStart:]) // earlier chunks of this line
				out.Write(headBytes(chunk, MaxReadChars-chars))
				s.cut, s.cutLen = lineNo, before+n
				chars, full, s.last = MaxReadChars, true, lineNo
			default:
				// This line does not fit: end the window before it.
				out.Truncate(lineStart)
				full = true
			}
			if chunk[len(chunk)-1] == '\n' {
				inLine = false
				if s.cut == lineNo {
					s.cutLen-- // the newline is not part of the line's text
				}
				if !full && lineNo >= offset && lineNo < offset+limit {
					s.last = lineNo
				}
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return span{}, err
		}
	}
	if inLine && !full && lineNo >= offset && lineNo < offset+limit {
		s.last = lineNo // a last line without a newline
	}
	s.total = lineNo
	s.text = strings.ToValidUTF8(out.String(), "\uFFFD")
	return s, nil
}

// headBytes is the longest prefix of b holding at most n runes.
func headBytes(b []byte, n int) []byte {
	i := 0
	for range n {
		if i >= len(b) {
			break
		}
		_, size := utf8.DecodeRune(b[i:])
		i += size
	}
	return b[:i]
}

// windows1252 decodes a legacy 8-bit text stream: Latin-1, with the
// Windows-1252 printable characters in 0x80–0x9F.
func windows1252(r io.Reader) io.Reader { return &cp1252Reader{r: r} }

type cp1252Reader struct {
	r       io.Reader
	raw     [4096]byte
	pending []byte // decoded UTF-8 not yet returned
	err     error
}

func (d *cp1252Reader) Read(p []byte) (int, error) {
	for len(d.pending) == 0 {
		if d.err != nil {
			return 0, d.err
		}
		n, err := d.r.Read(d.raw[:])
		for _, c := range d.raw[:n] {
			ru := rune(c)
			if c >= 0x80 && c <= 0x9f {
				ru = cp1252[c-0x80]
			}
			d.pending = utf8.AppendRune(d.pending, ru)
		}
		d.err = err
	}
	n := copy(p, d.pending)
	d.pending = d.pending[n:]
	return n, nil
}

var cp1252 = [32]rune{
	'€', '\uFFFD', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\uFFFD', 'Ž', '\uFFFD',
	'\uFFFD', '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\uFFFD', 'ž', 'Ÿ',
}

// officeKind names the Office format of a file by extension and zip magic.
func officeKind(name string, head []byte) string {
	if !bytes.HasPrefix(head, []byte("PK\x03\x04")) {
		return ""
	}
	switch strings.ToLower(path.Ext(name)) {
	case ".docx":
		return "a Word document (.docx)"
	case ".xlsx":
		return "an Excel workbook (.xlsx)"
	}
	return ""
}
