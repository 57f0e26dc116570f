package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
)

// frame is one Server-Sent Events message.
type frame struct {
	ID    string // the last id: field seen in the frame ("" when none)
	Event string // the event: field ("" means the default "message")
	Data  string // data: lines joined with "\n"
}

// maxFrameBytes bounds one frame (all its lines), so a peer that never sends
// a blank line cannot make the reader buffer without limit.
const maxFrameBytes = 16 << 20

// errFrameTooLarge is returned when a frame exceeds maxFrameBytes.
var errFrameTooLarge = errors.New("event stream frame too large")

// sseReader parses an event stream per the WHATWG rules that matter to a
// client: lines end in \n, \r\n or \r; a line starting with ':' is a comment
// (": ping" keep-alives); "field: value" drops one leading space of the value;
// a field with no colon has an empty value; a blank line dispatches the
// frame; frames with no data line are not dispatched. Unknown fields are
// ignored. A stream that ends mid-frame drops that frame.
type sseReader struct {
	r      *bufio.Reader
	max    int  // bytes one frame may take
	lastCR bool // the previous line ended in \r: a following \n belongs to it
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 64<<10), max: maxFrameBytes}
}

// Next returns the next dispatched frame, io.EOF at the end of the stream,
// or a read error.
func (s *sseReader) Next() (frame, error) {
	var (
		f       frame
		data    strings.Builder
		hasData bool
		size    int
	)
	for {
		line, err := s.readLine(s.max - size)
		if err != nil {
			// io.EOF passes through as is: a frame cut off by the end of the
			// stream was never dispatched by a blank line, so it is dropped.
			return frame{}, err
		}
		size += len(line) + 1
		if len(line) == 0 {
			if hasData {
				f.Data = data.String()
				return f, nil
			}
			f = frame{}
			size = 0
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, found := bytes.Cut(line, []byte{':'})
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "event":
			f.Event = string(value)
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.Write(value)
			hasData = true
		case "id":
			if !bytes.ContainsRune(value, 0) {
				f.ID = string(value)
			}
		}
	}
}

// readLine returns one line without its terminator. At the end of input it
// returns the unterminated remainder (if any) with io.EOF.
func (s *sseReader) readLine(limit int) ([]byte, error) {
	var line []byte
	for {
		b, err := s.r.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) {
				if len(line) == 0 {
					return nil, io.EOF
				}
				return line, io.EOF
			}
			return nil, fmt.Errorf("read event stream: %w", err)
		}
		if s.lastCR {
			s.lastCR = false
			if b == '\n' {
				continue
			}
		}
		switch b {
		case '\n':
			if line == nil {
				line = []byte{}
			}
			return line, nil
		case '\r':
			s.lastCR = true
			if line == nil {
				line = []byte{}
			}
			return line, nil
		}
		if len(line) >= limit {
			return nil, errFrameTooLarge
		}
		line = append(line, b)
	}
}
