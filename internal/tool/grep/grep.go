// Package grep is the grep tool: a regular-expression search over the
// contents of workspace files, written in Go so it needs no host binary and
// cannot leave the workspace.
//
// The search walks the workspace through an os.Root, so a symlink that points
// outside is never followed, and skips the daemon's .delta folder, .git,
// binary files (a NUL byte in the first 8 KB) and files over a size bound.
// Output is bounded twice, by matching lines and by characters, with a note
// telling the model how to narrow the search. The tool is read-only.
package grep

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/workspace"
)

// Name is the tool's name, as the model sees it.
const Name = "grep"

// Defaults for Options fields left zero.
const (
	DefaultResults      = 100      // matching lines when the model gives no max_results
	DefaultMaxResults   = 1000     // ceiling on max_results
	DefaultMaxOutput    = 16000    // characters of one result, below the central 20,000 cap
	DefaultMaxFileBytes = 10 << 20 // larger files are skipped, not searched
)

const (
	sniffLen     = 8192 // how much of a file decides whether it is binary
	maxLineChars = 300  // a longer matching line is shown as a window around the match
	maxPattern   = 4096 // bytes of pattern accepted
)

//go:embed grep.md
var doc string

// Options bounds the tool. Zero fields take the Default values.
type Options struct {
	DefaultResults int   // matching lines returned when max_results is not given
	MaxResults     int   // the largest max_results accepted
	MaxOutput      int   // characters of one result
	MaxFileBytes   int64 // files larger than this are skipped
}

func (o Options) withDefaults() Options {
	if o.DefaultResults <= 0 {
		o.DefaultResults = DefaultResults
	}
	if o.MaxResults <= 0 {
		o.MaxResults = DefaultMaxResults
	}
	if o.DefaultResults > o.MaxResults {
		o.DefaultResults = o.MaxResults
	}
	if o.MaxOutput <= 0 {
		o.MaxOutput = DefaultMaxOutput
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	return o
}

type params struct {
	Pattern    string `json:"pattern" jsonschema:"regular expression (Go RE2 syntax) matched against each line"`
	Path       string `json:"path,omitempty" jsonschema:"folder or file to search, relative to the workspace root (default: the whole workspace)"`
	Glob       string `json:"glob,omitempty" jsonschema:"only search files whose name matches, e.g. *.go or *.{md,txt}; with a / it matches the relative path and ** spans folders"`
	IgnoreCase bool   `json:"ignore_case,omitempty" jsonschema:"match letters regardless of case"`
	MaxResults int    `json:"max_results,omitempty" jsonschema:"stop after this many matching lines (default 100, at most 1000)"`
}

// New returns the grep tool over ws.
func New(ws *workspace.Root, opts Options) tool.Tool {
	opts = opts.withDefaults()
	return tool.Func(Name, strings.TrimSpace(doc), true, func(ctx context.Context, _ tool.Call, p params) (tool.Result, error) {
		return search(ctx, ws, opts, p)
	})
}

// stats counts what a search saw, for the closing note.
type stats struct {
	files, matchFiles, matches int
	binary, large, unreadable  int
	secrets                    int  // secrets files skipped unread
	truncatedResults           bool // stopped at max_results
	truncatedOutput            bool // stopped at MaxOutput characters
}

func search(ctx context.Context, ws *workspace.Root, opts Options, p params) (tool.Result, error) {
	re, problem := compile(p.Pattern, p.IgnoreCase)
	if problem != "" {
		return tool.Errorf("%s", problem), nil
	}
	limit := opts.DefaultResults
	switch {
	case p.MaxResults < 0:
		return tool.Errorf("max_results must be 1 or more, got %d", p.MaxResults), nil
	case p.MaxResults > opts.MaxResults:
		return tool.Errorf("max_results is at most %d, got %d; narrow the pattern, path or glob instead", opts.MaxResults, p.MaxResults), nil
	case p.MaxResults > 0:
		limit = p.MaxResults
	}
	var filter *glob
	if p.Glob != "" {
		g, err := compileGlob(p.Glob)
		if err != nil {
			return tool.Errorf("%v", err), nil
		}
		filter = g
	}
	shown := p.Path
	if shown == "" {
		shown = "."
	}
	if err := ws.CheckReadable(shown); err != nil {
		return tool.Errorf("cannot search %s: %v", shown, err), nil
	}
	real, err := ws.Resolve(shown)
	if err != nil {
		return tool.Errorf("cannot search %s: %v", shown, err), nil
	}
	start, err := ws.Rel(real)
	if err != nil {
		return tool.Errorf("cannot search %s: %v", shown, err), nil
	}
	root, err := os.OpenRoot(ws.Dir())
	if err != nil {
		return tool.Result{}, fmt.Errorf("grep: open workspace: %w", err)
	}
	defer root.Close()
	fi, err := root.Stat(start)
	if errors.Is(err, fs.ErrNotExist) {
		return tool.Errorf("cannot search %s: it does not exist (list_files shows what is there)", shown), nil
	}
	if err != nil {
		return tool.Errorf("cannot search %s: %v", shown, err), nil
	}
	if start == workspace.DeltaDir || strings.HasPrefix(start, workspace.DeltaDir+"/") {
		return tool.Errorf("cannot search %s: the .delta folder is the daemon's own state; read spill files with read_file", shown), nil
	}

	s := &searcher{ctx: ctx, ws: ws, root: root, re: re, filter: filter, limit: limit, opts: opts}
	switch {
	case fi.Mode().IsRegular():
		s.pending = append(s.pending, start)
		err = s.flush()
	case fi.IsDir():
		err = fs.WalkDir(root.FS(), start, s.visit)
		if err == nil {
			err = s.flush()
		}
	default:
		return tool.Errorf("cannot search %s: it is not a regular file or folder (%s)", shown, fi.Mode().Type()), nil
	}
	if err != nil && !errors.Is(err, errStop) && ctx.Err() == nil {
		return tool.Errorf("cannot search %s: %v", shown, err), nil
	}
	if err := ctx.Err(); err != nil {
		return tool.Result{}, fmt.Errorf("grep %s: %w", shown, err)
	}
	return tool.Text(s.render(p, shown)), nil
}

// compile builds the line matcher, or explains what is wrong with pattern.
func compile(pattern string, ignoreCase bool) (*regexp.Regexp, string) {
	if pattern == "" {
		return nil, "pattern is empty; give a regular expression such as `func main` or `TODO|FIXME`"
	}
	if len(pattern) > maxPattern {
		return nil, fmt.Sprintf("pattern is %d bytes; at most %d are accepted", len(pattern), maxPattern)
	}
	src := pattern
	if ignoreCase {
		src = "(?i)" + src
	}
	re, err := regexp.Compile(src)
	if err != nil {
		msg := fmt.Sprintf("pattern %q is not a valid Go regular expression: %v", pattern, err)
		var se *syntax.Error
		if errors.As(err, &se) && se.Code == syntax.ErrInvalidPerlOp {
			msg += " (lookarounds and backreferences are not supported)"
		} else if errors.As(err, &se) && (se.Code == syntax.ErrMissingParen || se.Code == syntax.ErrUnexpectedParen || se.Code == syntax.ErrMissingBracket) {
			msg += " (escape literal brackets and parentheses with \\)"
		}
		return nil, msg
	}
	return re, ""
}

var errStop = errors.New("stop")

// Files are read and scanned by a few workers, in batches, and merged in walk
// order, so the output is the same as a sequential scan's and the search
// still stops early once a bound is reached. Reading is dominated by system
// calls, so more workers than cores pays.
const (
	workers   = 8
	batchSize = 256
)

type searcher struct {
	ctx    context.Context
	ws     *workspace.Root
	root   *os.Root
	re     *regexp.Regexp
	filter *glob
	limit  int
	opts   Options

	pending []string // files found by the walk, not yet scanned
	out     strings.Builder
	stats   stats
}

func (s *searcher) visit(p string, d fs.DirEntry, err error) error {
	if cerr := s.ctx.Err(); cerr != nil {
		return cerr
	}
	if err != nil {
		if d == nil || d.IsDir() {
			if p == "." || d == nil {
				return err
			}
			s.stats.unreadable++
			return fs.SkipDir
		}
		s.stats.unreadable++
		return nil
	}
	// Secrets files (.env, .env.*, delta.env) are never read, so their
	// contents cannot reach the model; the closing note counts them.
	if d.IsDir() {
		if p == workspace.DeltaDir || d.Name() == ".git" {
			return fs.SkipDir
		}
		if workspace.SecretFile(p) {
			s.stats.secrets++
			return fs.SkipDir
		}
		return nil
	}
	if workspace.SecretFile(p) {
		s.stats.secrets++
		return nil
	}
	if d.Type()&fs.ModeSymlink != 0 {
		// os.Root follows a link only while it stays inside the workspace;
		// linked folders are not descended, as in list_files. A link to a
		// secrets file is skipped like the file.
		fi, err := s.root.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		if s.ws.CheckReadable(p) != nil {
			s.stats.secrets++
			return nil
		}
	} else if !d.Type().IsRegular() {
		return nil
	}
	if s.filter != nil && !s.filter.match(p) {
		return nil
	}
	s.pending = append(s.pending, p)
	if len(s.pending) == batchSize {
		return s.flush()
	}
	return nil
}

// flush scans the pending files and merges their matches; errStop means a
// bound was reached.
func (s *searcher) flush() error {
	batch := s.pending
	s.pending = s.pending[:0]
	if len(batch) == 0 {
		return nil
	}
	results := make([]fileResult, len(batch))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(batch)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf bytes.Buffer
			for i := range next {
				results[i] = s.scan(batch[i], &buf)
			}
		}()
	}
	for i := range batch {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := s.ctx.Err(); err != nil {
		return err
	}
	for _, r := range results {
		if !s.merge(r) {
			return errStop
		}
	}
	return nil
}

type fileStatus int

const (
	scanned fileStatus = iota
	binary
	large
	unreadable
)

// fileResult is what one file gave: its status and its matching lines,
// already rendered, at most the search's limit of them.
type fileResult struct {
	status fileStatus
	lines  []string
}

// scan reads one file into buf and finds its matching lines.
func (s *searcher) scan(rel string, buf *bytes.Buffer) fileResult {
	f, err := s.root.Open(rel)
	if err != nil {
		return fileResult{status: unreadable}
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > s.opts.MaxFileBytes {
		return fileResult{status: large}
	}
	buf.Reset()
	if _, err := buf.ReadFrom(io.LimitReader(f, s.opts.MaxFileBytes+1)); err != nil {
		return fileResult{status: unreadable}
	}
	data := buf.Bytes()
	if int64(len(data)) > s.opts.MaxFileBytes {
		return fileResult{status: large} // grew while we read it
	}
	if bytes.IndexByte(data[:min(len(data), sniffLen)], 0) >= 0 {
		return fileResult{status: binary}
	}
	// One pass over the whole file first: most files hold no match, and a
	// line can only match if the file does (see mayMatch).
	if !mayMatch(s.re, data) {
		return fileResult{}
	}
	var r fileResult
	size := 0
	for lineNo := 1; len(data) > 0 && len(r.lines) < s.limit && size <= s.opts.MaxOutput; lineNo++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		loc := s.re.FindIndex(line)
		if loc == nil {
			continue
		}
		entry := fmt.Sprintf("%s:%d: %s\n", rel, lineNo, window(line, loc))
		size += len(entry)
		r.lines = append(r.lines, entry)
	}
	return r
}

// merge adds one file's result to the output and reports whether the search
// should go on.
func (s *searcher) merge(r fileResult) bool {
	switch r.status {
	case binary:
		s.stats.binary++
		return true
	case large:
		s.stats.large++
		return true
	case unreadable:
		s.stats.unreadable++
		return true
	}
	s.stats.files++
	if len(r.lines) > 0 {
		s.stats.matchFiles++
	}
	for _, entry := range r.lines {
		if s.out.Len()+len(entry) > s.opts.MaxOutput {
			s.stats.truncatedOutput = true
			return false
		}
		s.out.WriteString(entry)
		s.stats.matches++
		if s.stats.matches >= s.limit {
			s.stats.truncatedResults = true
			return false
		}
	}
	return true
}

// mayMatch is a cheap whole-file test. Every per-line match is also a match
// of the whole text, except for anchors tied to the text's edges, so a
// pattern holding those always passes to the line-by-line scan.
func mayMatch(re *regexp.Regexp, data []byte) bool {
	src := re.String()
	if strings.Contains(src, `\A`) || strings.Contains(src, `\z`) || strings.Contains(src, "^") || strings.Contains(src, "$") {
		return true
	}
	return re.Match(data)
}

// window renders a matching line, cut to a window around the match when it
// is long, on rune boundaries, as valid UTF-8.
func window(line []byte, loc []int) string {
	if len(line) <= maxLineChars {
		return strings.ToValidUTF8(string(line), "\uFFFD")
	}
	start := max(0, loc[0]-maxLineChars/3)
	end := min(len(line), start+maxLineChars)
	for start > 0 && !utf8.RuneStart(line[start]) {
		start--
	}
	for end < len(line) && !utf8.RuneStart(line[end]) {
		end--
	}
	var b strings.Builder
	if start > 0 {
		b.WriteString("…")
	}
	b.WriteString(strings.ToValidUTF8(string(line[start:end]), "\uFFFD"))
	if end < len(line) {
		fmt.Fprintf(&b, "… [line is %d bytes]", len(line))
	}
	return b.String()
}

func (s *searcher) render(p params, shown string) string {
	st := s.stats
	var b strings.Builder
	if st.matches == 0 {
		fmt.Fprintf(&b, "[no matches for %q in %s (%s searched)", p.Pattern, shown, plural(st.files, "file"))
		if p.Glob != "" {
			fmt.Fprintf(&b, " with glob %q", p.Glob)
		}
		b.WriteString("]")
	} else {
		b.WriteString(s.out.String())
		switch {
		case st.truncatedResults:
			fmt.Fprintf(&b, "[stopped at %s in %s (max_results); more may exist: narrow the pattern, path or glob]",
				plural(st.matches, "matching line"), plural(st.matchFiles, "file"))
		case st.truncatedOutput:
			fmt.Fprintf(&b, "[stopped at %d characters after %s in %s; more may exist: narrow the pattern, path or glob]",
				s.opts.MaxOutput, plural(st.matches, "matching line"), plural(st.matchFiles, "file"))
		default:
			fmt.Fprintf(&b, "[%s in %s; %s searched]", plural(st.matches, "matching line"), plural(st.matchFiles, "file"), plural(st.files, "file"))
		}
	}
	var skipped []string
	if st.binary > 0 {
		skipped = append(skipped, plural(st.binary, "binary file"))
	}
	if st.large > 0 {
		skipped = append(skipped, fmt.Sprintf("%s over %s", plural(st.large, "file"), size(s.opts.MaxFileBytes)))
	}
	if st.unreadable > 0 {
		skipped = append(skipped, plural(st.unreadable, "unreadable entry", "unreadable entries"))
	}
	if st.secrets > 0 {
		skipped = append(skipped, plural(st.secrets, "secrets file")+" (never read)")
	}
	if len(skipped) > 0 {
		fmt.Fprintf(&b, "\n[skipped %s]", strings.Join(skipped, ", "))
	}
	return b.String()
}

// size renders a byte count the way the tool description states limits.
func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KB", n>>10)
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}

func plural(n int, one string, many ...string) string {
	if n == 1 {
		return "1 " + one
	}
	if len(many) > 0 {
		return fmt.Sprintf("%d %s", n, many[0])
	}
	return fmt.Sprintf("%d %ss", n, one)
}
