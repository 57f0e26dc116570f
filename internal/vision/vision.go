// Package vision decides which images a vision-capable model sees, and
// keeps the provenance that decision rests on.
//
// An image reaches a model only after Delta itself has verified it: an
// upload stored it, read_file read it, or an MCP tool returned it and Delta
// saved it in the workspace. Verification sniffs the bytes (PNG, JPEG, GIF
// or WebP by magic number, never by extension), hashes them, and records
// the workspace path with its SHA-256 in a Registry. The conversation only
// ever holds a text marker naming the file (Marker); the bytes are never
// stored in the database.
//
// Before each model call Attach scans the conversation newest first for
// markers, takes up to MaxImages distinct verified paths, re-reads each file
// through the workspace (confined), and attaches it only if its hash still
// matches and it is at most MaxImageBytes. The images ride in one user
// message appended after everything else, so the prompt-cached prefix is
// untouched.
//
// Provenance is process-local: the Registry lives in memory, so after a
// restart an old marker is only a file reference until the file is read,
// uploaded or fetched again. A Registry is safe for concurrent use.
package vision

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"sync"
	"time"

	"github.com/deltaharness/delta/internal/workspace"
)

const (
	// MaxImageBytes is the largest image attached: 3,400,000 bytes (the
	// guide's "about 3.4 MB", decimal). Base64 makes it 4,533,336 bytes on
	// the wire, inside the 5 MB per-image limit of the strictest wire
	// (Anthropic) with room for the request around it.
	MaxImageBytes = 3_400_000
	// MaxImages is how many images one model call carries at most: the
	// four most recently referenced.
	MaxImages = 4
	// DefaultRemember is how many verified paths a Registry keeps; the
	// oldest verification is forgotten first.
	DefaultRemember = 256
	// BlockPrefix opens the user message that carries the images.
	BlockPrefix = "<delta:images>"
	// MediaDir is the workspace folder MCP images are saved in, one
	// subfolder per UTC day. It is under .delta/, which file tools cannot
	// write, so a model cannot plant a file there; read_file can read it.
	MediaDir = workspace.MediaDir
)

// ErrNotImage reports a file whose bytes are not a PNG, JPEG, GIF or WebP.
var ErrNotImage = errors.New("not a PNG, JPEG, GIF or WebP image")

// Info is one verified image.
type Info struct {
	Path   string // workspace-relative, slash-separated, symlinks resolved
	MIME   string // sniffed from the bytes
	Size   int64
	SHA256 [32]byte // zero when Size > MaxImageBytes (never attached, never hashed)
}

// Attachable reports whether the image is small enough to attach.
func (i Info) Attachable() bool { return i.Size <= MaxImageBytes }

// Marker is the text the model sees in place of the image.
func (i Info) Marker() string { return Marker(i.Path, i.MIME, i.Size) }

// Options shape a Registry.
type Options struct {
	// Models matches the models that get images (DELTA_VISION_MODELS);
	// nil means none do, and Attach never changes a conversation.
	Models *regexp.Regexp
	// Remember bounds the verified paths kept (default DefaultRemember).
	Remember int
	Logger   *slog.Logger
	Now      func() time.Time // dates the media folder (default time.Now)
}

// Registry is the process-local record of verified images.
type Registry struct {
	ws *workspace.Root
	o  Options

	mu     sync.Mutex
	seq    uint64
	byPath map[string]entry
}

type entry struct {
	info Info
	seq  uint64 // verification order, for eviction
}

// New returns an empty registry over ws.
func New(ws *workspace.Root, o Options) *Registry {
	if o.Remember <= 0 {
		o.Remember = DefaultRemember
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Registry{ws: ws, o: o, byPath: make(map[string]entry)}
}

// Vision reports whether modelName gets images.
func (r *Registry) Vision(modelName string) bool {
	return r != nil && r.o.Models != nil && r.o.Models.MatchString(modelName)
}

// Verify reads the file rel names through the workspace and, when its
// bytes are an image, records its provenance and returns it. A file that
// is not an image gives ErrNotImage; one over MaxImageBytes is described
// but not recorded, since it can never be attached.
func (r *Registry) Verify(rel string) (Info, error) {
	canon, err := r.canonical(rel)
	if err != nil {
		return Info{}, err
	}
	fi, err := r.ws.Stat(canon)
	if err != nil {
		return Info{}, err
	}
	if !fi.Mode().IsRegular() {
		return Info{}, fmt.Errorf("verify image %s: not a regular file", canon)
	}
	f, err := r.ws.OpenFile(canon)
	if err != nil {
		return Info{}, err
	}
	defer f.Close()
	head := make([]byte, sniffLen)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return Info{}, fmt.Errorf("verify image %s: %w", canon, err)
	}
	mime := Sniff(head[:n])
	if mime == "" {
		return Info{}, ErrNotImage
	}
	info := Info{Path: canon, MIME: mime, Size: fi.Size()}
	if !info.Attachable() {
		return info, nil
	}
	// Hash what is actually read, bounded one byte past the limit, so a
	// file that grew since Stat is caught rather than read without end.
	h := sha256.New()
	h.Write(head[:n])
	m, err := io.Copy(h, io.LimitReader(f, MaxImageBytes+1-int64(n)))
	if err != nil {
		return Info{}, fmt.Errorf("verify image %s: %w", canon, err)
	}
	info.Size = int64(n) + m
	if !info.Attachable() {
		return info, nil
	}
	copy(info.SHA256[:], h.Sum(nil))
	r.record(info)
	return info, nil
}

// record remembers info, forgetting the oldest verification past the bound.
func (r *Registry) record(info Info) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	r.byPath[info.Path] = entry{info: info, seq: r.seq}
	if len(r.byPath) <= r.o.Remember {
		return
	}
	oldest, min := "", ^uint64(0)
	for p, e := range r.byPath {
		if e.seq < min {
			oldest, min = p, e.seq
		}
	}
	delete(r.byPath, oldest)
}

// Lookup returns the verified image recorded for rel, if any.
func (r *Registry) Lookup(rel string) (Info, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.byPath[rel]
	return e.info, ok
}

// canonical is rel as the registry keys it: resolved inside the workspace
// (symlinks followed, "./" and "a/../" gone), slash-separated.
func (r *Registry) canonical(rel string) (string, error) {
	real, err := r.ws.Resolve(rel)
	if err != nil {
		return "", err
	}
	return r.ws.Rel(real)
}

// load re-reads a verified image and returns its bytes if they are still
// the ones verified.
func (r *Registry) load(info Info) ([]byte, error) {
	fi, err := r.ws.Stat(info.Path)
	if err != nil {
		return nil, errors.New("it is gone")
	}
	if !fi.Mode().IsRegular() || fi.Size() != info.Size {
		return nil, errChanged
	}
	f, err := r.ws.OpenFile(info.Path)
	if err != nil {
		return nil, errors.New("it cannot be opened")
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxImageBytes+1))
	if err != nil {
		return nil, errors.New("it cannot be read")
	}
	if sha256.Sum256(data) != info.SHA256 || Sniff(data) != info.MIME {
		return nil, errChanged
	}
	return data, nil
}

var errChanged = errors.New("it changed after Delta verified it")
