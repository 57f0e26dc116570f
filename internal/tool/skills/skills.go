// Package skills is the local skills backend (DELTA_SKILLS=local): reusable
// procedures the operator drops into the workspace as skills/<name>/SKILL.md,
// each with front matter naming it and saying what it is for, and a body
// that is the procedure, beside any reference files or scripts it bundles.
//
// Only a skill's name and description enter the prompt: a directory block
// once per execution attempt, framed as untrusted directory data, and the
// skill_search tool. The agent reads a skill whole with skill_get (or
// read_file) when it decides to follow it.
//
// Discovery takes the direct children of skills/ only and refuses symlinks
// at every level (skills/ itself, a skill folder, its SKILL.md), so the
// index cannot be pointed outside the workspace or at a file the workspace
// does not hold. Each search re-checks every SKILL.md's modification time
// and size and re-reads the index when anything moved, so skills added,
// renamed or re-described after boot are found without a restart. A
// description under ten characters is logged as a loud warning: such a
// skill exists but search can hardly ever surface it. Local skills are
// read-only here.
package skills

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/deltaharness/delta/internal/event"
)

// Layout and bounds.
const (
	Dir  = "skills"   // in the workspace root
	File = "SKILL.md" // in each skill's folder

	MaxFileBytes   = 256 << 10 // a larger SKILL.md is refused
	MinDescription = 10        // characters; fewer is a loud warning
	MaxSkills      = 500       // folders read per scan; the rest are refused
)

// Skill is one indexed skill.
type Skill struct {
	Name        string // from the front matter, else the folder name
	Description string
	Folder      string // the folder under skills/
	Path        string // workspace-relative path of its SKILL.md
	Bytes       int64
	Modified    time.Time
}

// Refused is a folder the index left out, and why.
type Refused struct {
	Folder string
	Reason string
}

// Options configures an Index.
type Options struct {
	Root   string // the workspace's absolute real path
	Logger *slog.Logger
	// Record keeps a durable event each time a search found the index
	// changed (nil = none); it is called with the searching run's ids.
	Record func(ctx context.Context, e event.Event)
}

// Index is the local skills directory, re-checked on every search. It is
// safe for concurrent use.
type Index struct {
	o Options

	mu      sync.Mutex
	sig     string // fingerprint of what the last scan read
	skills  []Skill
	refused []Refused
	warned  map[string]string // folder → the description it was warned about
}

// New returns the index over the workspace at o.Root; nothing is read yet.
func New(o Options) *Index {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Index{o: o, warned: map[string]string{}}
}

// entry is one skill folder as seen by the cheap check.
type entry struct {
	folder  string
	size    int64
	mod     time.Time
	refused string
}

// check lists skills/ without reading any SKILL.md: each direct child with
// its SKILL.md's size and modification time, or why it is refused.
func (x *Index) check() ([]entry, string, error) {
	root, err := os.OpenRoot(x.o.Root)
	if err != nil {
		return nil, "", fmt.Errorf("open workspace for skills: %w", err)
	}
	defer root.Close()
	fi, err := root.Lstat(Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "none", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("stat %s: %w", Dir, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		return nil, "refused-dir", errors.New(Dir + " is a symlink or not a directory: local skills are off until it is a real folder")
	}
	d, err := root.Open(Dir)
	if err != nil {
		return nil, "", fmt.Errorf("open %s: %w", Dir, err)
	}
	des, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return nil, "", fmt.Errorf("list %s: %w", Dir, err)
	}
	slices.SortFunc(des, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	var out []entry
	var sig strings.Builder
	for _, de := range des {
		name := de.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		e := entry{folder: name}
		switch {
		case de.Type()&fs.ModeSymlink != 0:
			e.refused = "the skill folder is a symlink"
		case !de.IsDir():
			continue // a loose file in skills/ is not a skill
		case len(out) >= MaxSkills:
			e.refused = fmt.Sprintf("more than %d skill folders", MaxSkills)
		default:
			sfi, err := root.Lstat(path.Join(Dir, name, File))
			switch {
			case errors.Is(err, fs.ErrNotExist):
				e.refused = "no " + File
			case err != nil:
				e.refused = err.Error()
			case sfi.Mode()&fs.ModeSymlink != 0:
				e.refused = File + " is a symlink"
			case !sfi.Mode().IsRegular():
				e.refused = File + " is not a regular file"
			case sfi.Size() > MaxFileBytes:
				e.refused = fmt.Sprintf("%s is %d bytes, over %d", File, sfi.Size(), MaxFileBytes)
			default:
				e.size, e.mod = sfi.Size(), sfi.ModTime()
			}
		}
		out = append(out, e)
		fmt.Fprintf(&sig, "%s\x00%d\x00%d\x00%s\n", e.folder, e.size, e.mod.UnixNano(), e.refused)
	}
	return out, sig.String(), nil
}

// refresh re-reads the index when the check says anything moved. changed
// reports that it did.
func (x *Index) refresh() (changed bool, err error) {
	entries, sig, err := x.check()
	x.mu.Lock()
	defer x.mu.Unlock()
	if err != nil {
		if x.sig != "error" {
			x.o.Logger.Warn("local skills unavailable", "err", err)
		}
		changed = x.sig != "error"
		x.sig, x.skills, x.refused = "error", nil, nil
		return changed, err
	}
	if sig == x.sig {
		return false, nil
	}
	x.sig = sig
	x.skills, x.refused = nil, nil
	root, err := os.OpenRoot(x.o.Root)
	if err != nil {
		return true, fmt.Errorf("open workspace for skills: %w", err)
	}
	defer root.Close()
	names := map[string]string{}
	for _, e := range entries {
		if e.refused != "" {
			x.refused = append(x.refused, Refused{Folder: e.folder, Reason: e.refused})
			continue
		}
		rel := path.Join(Dir, e.folder, File)
		fm, _, err := readSkill(root, rel)
		if err != nil {
			x.refused = append(x.refused, Refused{Folder: e.folder, Reason: err.Error()})
			continue
		}
		s := Skill{Name: oneLine(fm.Name), Description: strings.TrimSpace(fm.Description), Folder: e.folder, Path: rel,
			Bytes: e.size, Modified: e.mod}
		if s.Name == "" {
			s.Name = e.folder
		}
		if other, dup := names[strings.ToLower(s.Name)]; dup {
			x.refused = append(x.refused, Refused{Folder: e.folder, Reason: fmt.Sprintf("the name %q is taken by skills/%s", s.Name, other)})
			continue
		}
		names[strings.ToLower(s.Name)] = e.folder
		if n, prev, seen := utf8.RuneCountInString(s.Description), "", false; n < MinDescription {
			if prev, seen = x.warned[e.folder]; !seen || prev != s.Description {
				x.o.Logger.Warn("SKILL CANNOT BE FOUND BY SEARCH: its description is under 10 characters; describe what the skill is for and when to use it",
					"skill", s.Name, "path", rel, "description_chars", n)
			}
		}
		x.warned[e.folder] = s.Description
		x.skills = append(x.skills, s)
	}
	for _, r := range x.refused {
		x.o.Logger.Warn("local skill refused", "folder", path.Join(Dir, r.Folder), "reason", r.Reason)
	}
	return true, nil
}

// readSkill reads and parses one SKILL.md through root, refusing a file
// that became a symlink or grew since the check.
func readSkill(root *os.Root, rel string) (FrontMatter, string, error) {
	fi, err := root.Lstat(rel)
	if err != nil {
		return FrontMatter{}, "", err
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.Mode().IsRegular() {
		return FrontMatter{}, "", errors.New(File + " is a symlink or not a regular file")
	}
	f, err := root.Open(rel)
	if err != nil {
		return FrontMatter{}, "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return FrontMatter{}, "", err
	}
	if len(data) > MaxFileBytes {
		return FrontMatter{}, "", fmt.Errorf("%s is over %d bytes", File, MaxFileBytes)
	}
	if !utf8.Valid(data) {
		return FrontMatter{}, "", errors.New(File + " is not UTF-8 text")
	}
	fm, body, err := ParseFrontMatter(string(data))
	if err != nil {
		return FrontMatter{}, "", err
	}
	return fm, body, nil
}

// Skills re-checks the index and returns every skill, in folder order, and
// the folders it refused.
func (x *Index) Skills(ctx context.Context, runID, sessionID string) ([]Skill, []Refused, error) {
	changed, err := x.refresh()
	x.mu.Lock()
	skills, refused := slices.Clone(x.skills), slices.Clone(x.refused)
	x.mu.Unlock()
	if changed && x.o.Record != nil {
		data := map[string]any{"skills": len(skills), "refused": len(refused)}
		if err != nil {
			data["error"] = err.Error()
		}
		x.o.Record(ctx, event.New(runID, sessionID, event.SkillsIndexed, data))
	}
	return skills, refused, err
}

// Search returns up to limit skills ranked by how many of query's words
// their name and description hold (name words count double), ties in
// folder order. An empty query ranks nothing and returns the first limit.
// Skills that match no word come after those that do.
func (x *Index) Search(ctx context.Context, runID, sessionID, query string, limit int) ([]Skill, []Refused, error) {
	skills, refused, err := x.Skills(ctx, runID, sessionID)
	if err != nil {
		return nil, nil, err
	}
	words := terms(query)
	if len(words) > 0 {
		score := make(map[string]int, len(skills))
		for _, s := range skills {
			name, desc := terms(s.Name+" "+s.Folder), terms(s.Description)
			for _, w := range words {
				if hasTerm(name, w) {
					score[s.Folder] += 2
				}
				if hasTerm(desc, w) {
					score[s.Folder]++
				}
			}
		}
		slices.SortStableFunc(skills, func(a, b Skill) int { return score[b.Folder] - score[a.Folder] })
	}
	if limit > 0 && len(skills) > limit {
		skills = skills[:limit]
	}
	return skills, refused, nil
}

// Get returns the skill named name (case-insensitive, or by folder) and the
// body of its SKILL.md, and the other files its folder bundles.
func (x *Index) Get(ctx context.Context, runID, sessionID, name string) (Skill, string, []string, error) {
	skills, _, err := x.Skills(ctx, runID, sessionID)
	if err != nil {
		return Skill{}, "", nil, err
	}
	i := slices.IndexFunc(skills, func(s Skill) bool {
		return strings.EqualFold(s.Name, name) || s.Folder == name
	})
	if i < 0 {
		return Skill{}, "", nil, fmt.Errorf("%w: %q", ErrUnknown, name)
	}
	s := skills[i]
	root, err := os.OpenRoot(x.o.Root)
	if err != nil {
		return Skill{}, "", nil, fmt.Errorf("open workspace for skills: %w", err)
	}
	defer root.Close()
	_, body, err := readSkill(root, s.Path)
	if err != nil {
		return Skill{}, "", nil, fmt.Errorf("read %s: %w", s.Path, err)
	}
	var files []string
	_ = fs.WalkDir(root.FS(), path.Join(Dir, s.Folder), func(p string, d fs.DirEntry, err error) error {
		if err != nil || len(files) >= 50 {
			return fs.SkipDir
		}
		if !d.IsDir() && p != s.Path {
			files = append(files, p)
		}
		return nil
	})
	return s, body, files, nil
}

// ErrUnknown: no indexed skill has that name.
var ErrUnknown = errors.New("no such skill")

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// terms are the lower-cased words of s (letters and digits).
func terms(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// hasTerm reports a word of ts equal to w or starting with it (w of 3 or
// more characters), so "citation" finds "citations".
func hasTerm(ts []string, w string) bool {
	for _, t := range ts {
		if t == w || (len(w) >= 3 && strings.HasPrefix(t, w)) || (len(t) >= 3 && strings.HasPrefix(w, t) && len(w)-len(t) <= 2) {
			return true
		}
	}
	return false
}
