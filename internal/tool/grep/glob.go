package grep

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// maxGlobAlternatives bounds brace expansion, so "{a,b}{c,d}…" cannot blow up.
const maxGlobAlternatives = 64

// glob is a compiled file filter: shell-style wildcards per path.Match, brace
// alternatives ({md,txt}) and ** for any number of folders.
type glob struct {
	alts [][]string // per alternative: its slash-separated segments
	base bool       // no slash anywhere: match against the file's name only
}

// compileGlob validates pattern and prepares it for matching.
func compileGlob(pattern string) (*glob, error) {
	if strings.TrimSpace(pattern) == "" {
		return nil, errors.New("glob is empty")
	}
	alts, err := expandBraces(pattern)
	if err != nil {
		return nil, err
	}
	g := &glob{base: !strings.Contains(pattern, "/")}
	for _, a := range alts {
		a = strings.TrimPrefix(a, "./")
		segs := strings.Split(a, "/")
		for _, s := range segs {
			if s == "**" {
				continue
			}
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("glob %q is malformed (check [ ] and \\ escapes)", pattern)
			}
		}
		g.alts = append(g.alts, segs)
	}
	return g, nil
}

// match reports whether rel (slash-separated, relative to the workspace root)
// passes the filter.
func (g *glob) match(rel string) bool {
	if g.base {
		name := path.Base(rel)
		for _, segs := range g.alts {
			if ok, _ := path.Match(segs[0], name); ok {
				return true
			}
		}
		return false
	}
	parts := strings.Split(rel, "/")
	for _, segs := range g.alts {
		if matchSegs(segs, parts) {
			return true
		}
	}
	return false
}

// matchSegs matches path segments against pattern segments, ** standing for
// zero or more whole segments.
func matchSegs(pat, parts []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 0 && pat[0] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 0 {
				return true
			}
			for i := range parts {
				if matchSegs(pat, parts[i:]) {
					return true
				}
			}
			return false
		}
		if len(parts) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], parts[0]); !ok {
			return false
		}
		pat, parts = pat[1:], parts[1:]
	}
	return len(parts) == 0
}

// expandBraces turns "a{b,c}d" into "abd" and "acd", nested braces included.
func expandBraces(p string) ([]string, error) {
	open := strings.IndexByte(p, '{')
	if open < 0 {
		if strings.IndexByte(p, '}') >= 0 {
			return nil, fmt.Errorf("glob %q has a } without a matching {", p)
		}
		return []string{p}, nil
	}
	depth, end := 0, -1
	var commas []int
	for i := open; i < len(p) && end < 0; i++ {
		switch p[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				end = i
			}
		case ',':
			if depth == 1 {
				commas = append(commas, i)
			}
		}
	}
	if end < 0 {
		return nil, fmt.Errorf("glob %q has a { without a matching }", p)
	}
	var opts []string
	prev := open + 1
	for _, c := range commas {
		opts = append(opts, p[prev:c])
		prev = c + 1
	}
	opts = append(opts, p[prev:end])
	rest, err := expandBraces(p[end+1:])
	if err != nil {
		return nil, err
	}
	var out []string
	for _, o := range opts {
		heads, err := expandBraces(p[:open] + o)
		if err != nil {
			return nil, err
		}
		for _, h := range heads {
			for _, r := range rest {
				if len(out) == maxGlobAlternatives {
					return nil, fmt.Errorf("glob expands to more than %d alternatives", maxGlobAlternatives)
				}
				out = append(out, h+r)
			}
		}
	}
	return out, nil
}
