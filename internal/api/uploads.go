package api

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Upload limits. The body cap of POST /v1/files is the batch
// limit plus room for the multipart framing of every part.
const (
	UploadMaxFiles    = 50
	UploadMaxFileSize = 25 << 20
	UploadMaxTotal    = 100 << 20
	uploadBodyMax     = UploadMaxTotal + UploadMaxFiles*4096 + 64<<10
	uploadNameMax     = 255
)

// Uploads stores files posted to /v1/files in a workspace directory.
type Uploads struct {
	Dir string // the workspace's absolute path
	// Limits, zero = the package constants (tests lower them).
	MaxFiles, MaxFileSize, MaxTotal int64
	Now                             func() time.Time
	// Stored, when set, is told the workspace path of every file of a
	// batch once the whole batch is in place. The daemon records the
	// images among them as verified for vision models (package vision).
	Stored func(rel string)
}

const filesMD = `# Files

Uploaded files land in ` + "`inbox/YYYY-MM-DD/`" + ` (the upload's UTC date), under the name
they were sent with; a name already taken gets a numeric suffix (` + "`report-2.pdf`" + `).

Conventions:
- Treat the inbox as read-only input: copy or move a file before changing it.
- Keep your own outputs outside ` + "`inbox/`" + `, in folders named for what they hold.
- Record anything you learn about a file here, one line per file.
`

type storedFile struct {
	Path   string `json:"path"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	tmp    string
	name   string
}

// uploadFiles handles POST /v1/files. Every part is streamed to a temp file
// under .delta/tmp while the whole batch is checked; only a batch that
// passes every check is moved into inbox/, so one bad file writes nothing.
func (s *Server) uploadFiles(w http.ResponseWriter, r *http.Request) {
	u := s.o.Uploads
	if u == nil || u.Dir == "" {
		writeError(w, s.o.Logger, &requestError{status: http.StatusNotFound, msg: "uploads are not available"})
		return
	}
	files, err := u.receive(r)
	defer func() {
		for _, f := range files {
			if f.tmp != "" {
				_ = os.Remove(f.tmp)
			}
		}
	}()
	if err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	if err := u.place(files); err != nil {
		writeError(w, s.o.Logger, err)
		return
	}
	if u.Stored != nil {
		for _, f := range files {
			u.Stored(f.Path)
		}
	}
	s.o.Logger.Info("files uploaded", "count", len(files))
	writeJSON(w, http.StatusOK, map[string]any{"files": files})
}

func (u *Uploads) limits() (files, each, total int64) {
	files, each, total = u.MaxFiles, u.MaxFileSize, u.MaxTotal
	if files <= 0 {
		files = UploadMaxFiles
	}
	if each <= 0 {
		each = UploadMaxFileSize
	}
	if total <= 0 {
		total = UploadMaxTotal
	}
	return files, each, total
}

// receive streams every part to a temp file and validates the batch. The
// returned files (even on error) name the temp files the caller removes.
func (u *Uploads) receive(r *http.Request) ([]*storedFile, error) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, badRequest("send the files as multipart/form-data with one `file` part per file")
	}
	maxFiles, maxEach, maxTotal := u.limits()
	tmpDir := filepath.Join(u.Dir, ".delta", "tmp")
	if err := os.MkdirAll(tmpDir, 0o755); err != nil {
		return nil, fmt.Errorf("upload: create %s: %w", tmpDir, err)
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	var files []*storedFile
	var total int64
	buf := make([]byte, 32<<10)
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return files, tooLarge(fmt.Sprintf("the upload is larger than the limit of %d bytes in all", maxTotal))
			}
			return files, badRequest("malformed multipart body: " + err.Error())
		}
		if part.FormName() != "file" {
			part.Close()
			return files, badRequest(fmt.Sprintf("unexpected form field %q: send every file as a part named `file`", part.FormName()))
		}
		if int64(len(files)) >= maxFiles {
			part.Close()
			return files, tooLarge(fmt.Sprintf("too many files: at most %d per upload", maxFiles))
		}
		name, err := safeName(rawFileName(part))
		if err != nil {
			part.Close()
			return files, badRequest(fmt.Sprintf("file %d: %v", len(files)+1, err))
		}
		f := &storedFile{name: name}
		files = append(files, f)
		n, sum, err := spool(tmpDir, part, buf, min(maxEach, maxTotal-total), f)
		part.Close()
		total += n
		if err != nil {
			var mbe *http.MaxBytesError
			switch {
			case errors.Is(err, errOverLimit) && n > maxEach:
				return files, tooLarge(fmt.Sprintf("file %q is larger than the limit of %d bytes per file", name, maxEach))
			case errors.Is(err, errOverLimit), errors.As(err, &mbe):
				return files, tooLarge(fmt.Sprintf("the upload is larger than the limit of %d bytes in all", maxTotal))
			case errors.Is(err, errBadPart):
				return files, badRequest("malformed multipart body: " + err.Error())
			}
			return files, err
		}
		f.Bytes, f.SHA256 = n, sum
	}
	if len(files) == 0 {
		return nil, badRequest("no files: send one or more multipart parts named `file`")
	}
	return files, nil
}

var (
	errOverLimit = errors.New("over the size limit")
	errBadPart   = errors.New("bad part")
)

// spool copies at most limit bytes of part to a new temp file, hashing as
// it goes. Reading one byte past limit tells an oversized part apart.
func spool(dir string, part io.Reader, buf []byte, limit int64, f *storedFile) (int64, string, error) {
	tmp, err := os.CreateTemp(dir, "upload-*")
	if err != nil {
		return 0, "", fmt.Errorf("upload: create temp file: %w", err)
	}
	f.tmp = tmp.Name()
	h := sha256.New()
	n, err := io.CopyBuffer(io.MultiWriter(tmp, h), io.LimitReader(part, limit+1), buf)
	if cerr := tmp.Close(); err == nil && cerr != nil {
		return n, "", fmt.Errorf("upload: write temp file: %w", cerr)
	}
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return n, "", err
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "multipart") {
			return n, "", fmt.Errorf("%w: %v", errBadPart, err)
		}
		return n, "", fmt.Errorf("upload: write temp file: %w", err)
	}
	if n > limit {
		return n, "", errOverLimit
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// rawFileName is the filename the client sent, before the multipart
// package reduces it with filepath.Base (which would hide a Windows path).
func rawFileName(p *multipart.Part) string {
	_, params, err := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
	if err != nil {
		return p.FileName()
	}
	return params["filename"]
}

// safeName keeps the base name of a client file name (either slash) and
// refuses what cannot be a plain, visible file name.
func safeName(raw string) (string, error) {
	name := raw
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.TrimSpace(name)
	switch {
	case raw == "":
		return "", errors.New("the part has no filename")
	case !utf8.ValidString(name):
		return "", fmt.Errorf("file name %q is not valid UTF-8", raw)
	case name == "":
		return "", fmt.Errorf("file name %q has no base name", raw)
	case strings.HasPrefix(name, "."):
		return "", fmt.Errorf("file name %q starts with a dot", name)
	case len(name) > uploadNameMax:
		return "", fmt.Errorf("file name is %d bytes; the limit is %d", len(name), uploadNameMax)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "", fmt.Errorf("file name %q contains a control character", name)
	}
	return name, nil
}

// place moves a validated batch from temp files into inbox/<date>/ and
// writes FILES.md on the first upload. A name already taken (on disk or
// earlier in the batch) gets a -2, -3, … suffix; os.Link refuses to
// overwrite, so concurrent uploads cannot clobber each other.
func (u *Uploads) place(files []*storedFile) error {
	now := time.Now
	if u.Now != nil {
		now = u.Now
	}
	rel := path.Join("inbox", now().UTC().Format("2006-01-02"))
	dir := filepath.Join(u.Dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("upload: create %s: %w", dir, err)
	}
	for _, f := range files {
		name, err := link(f.tmp, dir, f.name)
		if err != nil {
			return err
		}
		_ = os.Remove(f.tmp)
		f.tmp = ""
		f.Path = path.Join(rel, name)
	}
	return writeFilesMD(u.Dir)
}

func link(tmp, dir, name string) (string, error) {
	ext := path.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	for i := 1; i <= 1000; i++ {
		cand := name
		if i > 1 {
			suffix := "-" + strconv.Itoa(i) + ext
			s := stem
			for len(s)+len(suffix) > uploadNameMax && s != "" {
				_, size := utf8.DecodeLastRuneInString(s)
				s = s[:len(s)-size]
			}
			cand = s + suffix
		}
		err := os.Link(tmp, filepath.Join(dir, cand))
		if err == nil {
			return cand, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("upload: store %s: %w", name, err)
		}
	}
	return "", fmt.Errorf("upload: store %s: too many files with that name", name)
}

// writeFilesMD creates FILES.md at the workspace root unless it exists.
func writeFilesMD(ws string) error {
	p := filepath.Join(ws, "FILES.md")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("upload: create FILES.md: %w", err)
	}
	_, err = f.WriteString(filesMD)
	return errors.Join(err, f.Close())
}

func tooLarge(msg string) error {
	return &requestError{status: http.StatusRequestEntityTooLarge, msg: msg}
}
