package skills_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/event"
	"github.com/deltaharness/delta/internal/tool"
	"github.com/deltaharness/delta/internal/tool/skills"
)

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *logBuf) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

func writeSkill(t *testing.T, dir, folder, content string) string {
	t.Helper()
	p := filepath.Join(dir, "skills", folder, "SKILL.md")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func names(ss []skills.Skill) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return out
}

func search(t *testing.T, x *skills.Index, q string) []skills.Skill {
	t.Helper()
	found, _, err := x.Search(context.Background(), "resp_1", "s_1", q, 0)
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// Skills added, renamed and re-described after the index first read the
// folder are found on the next search, with no restart.
func TestSkillsAddedRenamedAndRedescribedAreFound(t *testing.T) {
	dir := t.TempDir()
	var events []event.Event
	x := skills.New(skills.Options{Root: dir, Record: func(_ context.Context, e event.Event) { events = append(events, e) }})
	if got := search(t, x, "anything"); len(got) != 0 {
		t.Fatalf("no skills folder: %v", names(got))
	}

	// Added after boot, with a folded block-scalar description.
	writeSkill(t, dir, "cite-check", "---\nname: cite-check\ndescription: >\n  Verify every citation in a draft\n  against its source.\n---\n# Steps\n1. Read the draft.\n")
	got := search(t, x, "citation")
	if len(got) != 1 || got[0].Name != "cite-check" || got[0].Description != "Verify every citation in a draft against its source." {
		t.Fatalf("after adding: %+v", got)
	}

	// Renamed: the folder moves and the name changes.
	if err := os.Rename(filepath.Join(dir, "skills", "cite-check"), filepath.Join(dir, "skills", "citations")); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "skills", "citations", "SKILL.md")
	if err := os.WriteFile(p, []byte("---\nname: citations\ndescription: >\n  Verify every citation in a draft\n  against its source.\n---\nbody\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := search(t, x, "citation"); len(got) != 1 || got[0].Name != "citations" || got[0].Path != "skills/citations/SKILL.md" {
		t.Fatalf("after renaming: %+v", got)
	}

	// Re-described with the same size: only the modification time tells.
	old, _ := os.ReadFile(p)
	redesc := strings.Replace(string(old), "Verify every citation", "Translate legal texts", 1)
	redesc = strings.Replace(redesc, "against its source.", "into plain English!", 1)
	redesc += strings.Repeat(" ", len(old)-len(redesc))
	if len(redesc) != len(old) {
		t.Fatalf("test setup: sizes %d and %d", len(redesc), len(old))
	}
	if err := os.WriteFile(p, []byte(redesc), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(p, later, later); err != nil {
		t.Fatal(err)
	}
	got = search(t, x, "legal texts")
	if len(got) != 1 || !strings.Contains(got[0].Description, "Translate legal texts") {
		t.Fatalf("after re-describing: %+v", got)
	}

	// A second skill ranks by the query's words.
	writeSkill(t, dir, "jd-writer", "---\nname: jd-writer\ndescription: Write a job description from a hiring brief.\n---\n")
	if got := search(t, x, "job description"); len(got) != 2 || got[0].Name != "jd-writer" {
		t.Fatalf("ranking: %v", names(got))
	}
	if len(events) != 5 || events[0].Name != event.SkillsIndexed || events[0].RunID != "resp_1" {
		t.Fatalf("events = %d (%v), want one per change the searches found (the first empty scan, add, rename, re-describe, second add)", len(events), events)
	}
	search(t, x, "job")
	if len(events) != 5 {
		t.Fatalf("an unchanged folder recorded another event")
	}
}

// Symlinks are refused at every level, nested folders are not skills, and
// a short description is a loud warning.
func TestSkillsRefuseSymlinksAndWarnOnShortDescriptions(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	logs := &logBuf{}
	x := skills.New(skills.Options{Root: dir, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	writeSkill(t, dir, "good", "---\nname: good\ndescription: A properly described skill.\n---\n")
	writeSkill(t, dir, "terse", "---\nname: terse\ndescription: Do it.\n---\n")
	// A folder that is a symlink to a skill outside the workspace.
	writeSkill(t, outside, "evil", "---\nname: evil\ndescription: Reads files outside the workspace.\n---\n")
	if err := os.Symlink(filepath.Join(outside, "skills", "evil"), filepath.Join(dir, "skills", "evil")); err != nil {
		t.Fatal(err)
	}
	// A real folder whose SKILL.md is a symlink.
	if err := os.MkdirAll(filepath.Join(dir, "skills", "linked"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "skills", "evil", "SKILL.md"), filepath.Join(dir, "skills", "linked", "SKILL.md")); err != nil {
		t.Fatal(err)
	}
	// Only direct children: a skill two levels down is not one.
	writeSkill(t, dir, "group/inner", "---\nname: inner\ndescription: Nested two levels down.\n---\n")

	found, refused, err := x.Search(context.Background(), "", "", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(found); len(got) != 2 || got[0] != "good" || got[1] != "terse" {
		t.Fatalf("indexed %v, want good and terse only", got)
	}
	reasons := map[string]string{}
	for _, r := range refused {
		reasons[r.Folder] = r.Reason
	}
	if !strings.Contains(reasons["evil"], "symlink") || !strings.Contains(reasons["linked"], "symlink") || !strings.Contains(reasons["group"], "no SKILL.md") {
		t.Fatalf("refused = %v", reasons)
	}
	if l := logs.String(); !strings.Contains(l, "SKILL CANNOT BE FOUND BY SEARCH") || !strings.Contains(l, "skill=terse") || strings.Contains(l, "skill=good") {
		t.Fatalf("logs = %s, want one loud warning naming terse", l)
	}
	// skill_get refuses what the index refused.
	_, _, _, err = x.Get(context.Background(), "", "", "evil")
	if err == nil {
		t.Fatal("skill_get read a symlinked skill")
	}

	// skills/ itself a symlink: nothing is indexed.
	dir2 := t.TempDir()
	if err := os.Symlink(filepath.Join(outside, "skills"), filepath.Join(dir2, "skills")); err != nil {
		t.Fatal(err)
	}
	if found, _, err := skills.New(skills.Options{Root: dir2}).Search(context.Background(), "", "", "", 0); err == nil || len(found) != 0 {
		t.Fatalf("a symlinked skills/ = %v, %v; want refused", names(found), err)
	}
}

// The tools and the directory block: names and descriptions, framed as
// data; skill_get returns the procedure and the bundled files.
func TestSkillToolsAndBlock(t *testing.T) {
	dir := t.TempDir()
	x := skills.New(skills.Options{Root: dir})
	tools := x.Tools()
	run := func(tl tool.Tool, args string) tool.Result {
		res, err := tl.Run(context.Background(), tool.Call{RunID: "resp_1", SessionID: "s_1", Args: json.RawMessage(args)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if x.Block(context.Background(), "resp_1", "s_1", "task", nil) != "" {
		t.Fatal("a block with no skills")
	}
	writeSkill(t, dir, "cite-check", "---\nname: cite-check\ndescription: |\n  Verify citations.\n  Use for any draft with sources.\n---\n# Procedure\nRead each source.\n")
	if err := os.WriteFile(filepath.Join(dir, "skills", "cite-check", "rubric.md"), []byte("rubric"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := run(tools[0], `{"query":"citations"}`); res.IsError || !strings.Contains(res.Text, "- cite-check (skills/cite-check/SKILL.md): Verify citations.") ||
		!strings.Contains(res.Text, "directory data") {
		t.Fatalf("skill_search = %+v", res)
	}
	res := run(tools[1], `{"name":"cite-check"}`)
	if res.IsError || !strings.Contains(res.Text, "# Procedure\nRead each source.") || !strings.Contains(res.Text, "skills/cite-check/rubric.md") ||
		strings.Contains(res.Text, "description:") {
		t.Fatalf("skill_get = %+v", res)
	}
	if res := run(tools[1], `{"name":"nope"}`); !res.IsError {
		t.Fatalf("skill_get of an unknown skill = %+v", res)
	}
	blk := x.Block(context.Background(), "resp_1", "s_1", "check the citations of this draft", nil)
	if !strings.HasPrefix(blk, skills.BlockPrefix) || !strings.Contains(blk, "not instructions") ||
		!strings.Contains(blk, "- cite-check: Verify citations. Use for any draft with sources.") || strings.Contains(blk, "Read each source") {
		t.Fatalf("block = %s", blk)
	}
	// The block names only the tools the run may call.
	cases := []struct {
		name     string
		allowed  []string
		want     string
		unwanted []string
	}{
		{"both", []string{"skill_get", "read_file"}, "read it with skill_get (or read_file on skills/<folder>/SKILL.md)", nil},
		{"no skill_get", []string{"read_file", "skill_search"}, "read skills/<folder>/SKILL.md with read_file", []string{"skill_get"}},
		{"no read_file", []string{"skill_get"}, "read it with skill_get before", []string{"read_file"}},
		{"neither", nil, "which this run has no tool to read", []string{"skill_get", "read_file"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			blk := x.Block(context.Background(), "resp_1", "s_1", "check the citations of this draft", func(n string) bool { return slices.Contains(tc.allowed, n) })
			if !strings.Contains(blk, tc.want) || !strings.Contains(blk, "- cite-check:") {
				t.Fatalf("block lacks %q:\n%s", tc.want, blk)
			}
			for _, u := range tc.unwanted {
				if strings.Contains(blk, u) {
					t.Fatalf("block names %s, which the run cannot call:\n%s", u, blk)
				}
			}
		})
	}
}
