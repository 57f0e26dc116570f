package bundle

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseVocab(t *testing.T) {
	neutral := NeutralVocab()
	with := func(f func(*Vocab)) Vocab { v := NeutralVocab(); f(&v); return v }
	for _, tt := range []struct {
		name     string
		doc      string
		want     Vocab
		wantWarn int
		wantErr  string
	}{
		{name: "empty object", doc: `{}`, want: neutral},
		{name: "guide example", doc: `{"coreVerbs":["get_dashboard","list_open_work","propose_change"],"writeVerbSuffix":"propose_change",
			"writeNoun":"workspace","runRefKey":"run_ref","learningTargetKind":"note","taskNoun":"task","itemNoun":"review item",
			"subjectKeys":["account"],"writeShape":{"summary":"{{summary}}", "items":[{"content":"{{content}}"}]}}`,
			want: with(func(v *Vocab) {
				v.CoreVerbs = []string{"get_dashboard", "list_open_work", "propose_change"}
				v.ItemNoun = "review item"
				v.SubjectKeys = []string{"account"}
				v.WriteShape = []byte(`{"summary":"{{summary}}","items":[{"content":"{{content}}"}]}`)
			})},
		{name: "partial keeps defaults", doc: `{"writeNoun":"CRM"}`, want: with(func(v *Vocab) { v.WriteNoun = "CRM" })},
		{name: "blank strings keep defaults", doc: `{"writeVerbSuffix":"  ","taskNoun":""}`, want: neutral},
		{name: "null values keep defaults", doc: `{"writeNoun":null,"coreVerbs":null,"writeShape":null}`, want: neutral},
		{name: "blank list items dropped", doc: `{"coreVerbs":[" a ","", "  "]}`, want: with(func(v *Vocab) { v.CoreVerbs = []string{"a"} })},
		{name: "unknown key warns", doc: `{"writenoun":"x","extra":1}`, want: neutral, wantWarn: 2},
		{name: "array root", doc: `[]`, wantErr: "JSON object"},
		{name: "null root", doc: `null`, wantErr: "null"},
		{name: "garbage", doc: `{writeNoun:}`, wantErr: "JSON object"},
		{name: "trailing garbage", doc: `{} {}`, wantErr: "JSON object"},
		{name: "wrong type", doc: `{"coreVerbs":"get_dashboard"}`, wantErr: "coreVerbs"},
		{name: "wrong item type", doc: `{"subjectKeys":[1]}`, wantErr: "subjectKeys"},
		{name: "shape not object", doc: `{"writeShape":["x"]}`, wantErr: "writeShape"},
		{name: "shape string", doc: `{"writeShape":"{}"}`, wantErr: "writeShape"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v, warn, err := ParseVocab([]byte(tt.doc))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(v, tt.want) {
				t.Fatalf("vocab\n got %+v\nwant %+v", v, tt.want)
			}
			if len(warn) != tt.wantWarn {
				t.Fatalf("warnings %q, want %d", warn, tt.wantWarn)
			}
		})
	}
}

func TestLoadVocabPrecedence(t *testing.T) {
	for _, tt := range []struct {
		name, file, override string
		wantNoun             string
		wantWarn             string
	}{
		{"none", "", "", "workspace", ""},
		{"file", `{"writeNoun":"CRM"}`, "", "CRM", ""},
		{"override wins", `{"writeNoun":"CRM"}`, `{"writeNoun":"ledger"}`, "ledger", ""},
		{"blank override ignored", `{"writeNoun":"CRM"}`, "  ", "CRM", ""},
		{"malformed file", `{"writeNoun":`, "", "workspace", "vocab.json malformed"},
		{"malformed override is neutral, not the file", `{"writeNoun":"CRM"}`, `nope`, "workspace", "DELTA_VOCAB malformed"},
		{"unknown key named by source", "", `{"wirteNoun":"x"}`, "workspace", `DELTA_VOCAB: unknown vocabulary key "wirteNoun"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.file != "" {
				writeFile(t, dir, VocabFile, tt.file)
			}
			b, err := Load(Options{Dir: dir, VocabOverride: tt.override})
			if err != nil {
				t.Fatal(err)
			}
			if got := b.Vocab().WriteNoun; got != tt.wantNoun {
				t.Fatalf("writeNoun = %q, want %q", got, tt.wantNoun)
			}
			w := strings.Join(b.Warnings(), "\n")
			if (tt.wantWarn == "") != (w == "") || !strings.Contains(w, tt.wantWarn) {
				t.Fatalf("warnings %q, want %q", w, tt.wantWarn)
			}
		})
	}
}

func TestNamespace(t *testing.T) {
	for noun, want := range map[string]string{
		"workspace":       "workspace",
		"Review Item":     "review-item",
		"  CRM / Deals  ": "crm-deals",
		"área de trabajo": "área-de-trabajo",
		"***":             "default",
	} {
		v := NeutralVocab()
		v.WriteNoun = noun
		if got := v.Namespace(); got != want {
			t.Errorf("Namespace(%q) = %q, want %q", noun, got, want)
		}
	}
	dir := t.TempDir()
	writeFile(t, dir, VocabFile, `{"writeNoun":"Sales Pipeline"}`)
	b, err := Load(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.MemoryNamespace(); got != "sales-pipeline" {
		t.Fatalf("MemoryNamespace = %q", got)
	}
}

func TestWriteTool(t *testing.T) {
	v := NeutralVocab()
	names := []string{"read_file", "crm__propose_change", "docs__propose_change", "crm__get_dashboard"}
	if name, n := v.WriteTool(names); name != "crm__propose_change" || n != 2 {
		t.Fatalf("WriteTool = %q, %d; want the first of 2 matches", name, n)
	}
	v.WriteVerbSuffix = "docs__propose_change"
	if name, n := v.WriteTool(names); name != "docs__propose_change" || n != 1 {
		t.Fatalf("specific suffix: %q, %d", name, n)
	}
	if name, n := v.WriteTool([]string{"read_file"}); name != "" || n != 0 {
		t.Fatalf("no rail: %q, %d", name, n)
	}
}

func FuzzParseVocab(f *testing.F) {
	for _, s := range []string{`{}`, `{"coreVerbs":["a"],"writeShape":{"x":"{{y}}"}}`, `null`, `[]`, `{"writeShape":1}`, `{"writeNoun":"  "}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, _, err := ParseVocab([]byte(s))
		if err != nil {
			return
		}
		if v.WriteVerbSuffix == "" || v.WriteNoun == "" || v.TaskNoun == "" || v.ItemNoun == "" || v.RunRefKey == "" || v.LearningTargetKind == "" {
			t.Fatalf("blank binding accepted from %q: %+v", s, v)
		}
		if v.WriteShape != nil && v.WriteShape[0] != '{' {
			t.Fatalf("non-object writeShape from %q", s)
		}
		if v.Namespace() == "" {
			t.Fatal("empty namespace")
		}
	})
}
