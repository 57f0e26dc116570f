package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"unicode"
)

// Vocab binds the engine to a product without compiling product names into
// it (vocab.json).
type Vocab struct {
	// CoreVerbs are MCP tool suffixes pinned in the lean core
	// (crm__get_dashboard matches get_dashboard).
	CoreVerbs []string `json:"coreVerbs"`
	// WriteVerbSuffix names the reviewed-write tool: the first tool whose
	// full name ends with it.
	WriteVerbSuffix string `json:"writeVerbSuffix"`
	// WriteNoun, TaskNoun and ItemNoun word the embedded review policy;
	// WriteNoun also derives the memory namespace.
	WriteNoun string `json:"writeNoun"`
	TaskNoun  string `json:"taskNoun"`
	ItemNoun  string `json:"itemNoun"`
	// RunRefKey is the argument key that carries the run ID in a promotion.
	RunRefKey string `json:"runRefKey"`
	// LearningTargetKind is the item kind of a promoted learning.
	LearningTargetKind string `json:"learningTargetKind"`
	// SubjectKeys are request metadata keys that identify a hydration subject.
	SubjectKeys []string `json:"subjectKeys"`
	// WriteShape, when set, is the exact argument object template sent to
	// the reviewed-write tool on promotion (a JSON object); nil = the
	// built-in envelope.
	WriteShape json.RawMessage `json:"writeShape,omitempty"`
}

// NeutralVocab is the vocabulary of a plain agent, used for absent keys and
// in place of malformed vocabulary.
func NeutralVocab() Vocab {
	return Vocab{
		CoreVerbs:          []string{},
		WriteVerbSuffix:    "propose_change",
		WriteNoun:          "workspace",
		TaskNoun:           "task",
		ItemNoun:           "item",
		RunRefKey:          "run_ref",
		LearningTargetKind: "note",
		SubjectKeys:        []string{},
	}
}

// ParseVocab parses vocabulary JSON. Absent, null or blank keys keep their
// neutral default; blank list entries are dropped. Unknown keys are returned
// as warnings (a typo should be visible, not fatal). A non-object root, a
// wrong type or a non-object writeShape is an error.
func ParseVocab(doc []byte) (Vocab, []string, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(doc, &keys); err != nil {
		return Vocab{}, nil, fmt.Errorf("want a JSON object: %w", err)
	}
	if keys == nil {
		return Vocab{}, nil, errors.New("want a JSON object, got null")
	}
	v := NeutralVocab()
	fields := map[string]any{
		"coreVerbs": &v.CoreVerbs, "writeVerbSuffix": &v.WriteVerbSuffix, "writeNoun": &v.WriteNoun,
		"runRefKey": &v.RunRefKey, "learningTargetKind": &v.LearningTargetKind, "taskNoun": &v.TaskNoun,
		"itemNoun": &v.ItemNoun, "subjectKeys": &v.SubjectKeys, "writeShape": &v.WriteShape,
	}
	var warn []string
	// Keys are matched exactly (encoding/json alone would match them in any
	// case), so what is reported unknown is exactly what is ignored.
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		dst, known := fields[k]
		if !known {
			warn = append(warn, fmt.Sprintf("unknown vocabulary key %q ignored", k))
			continue
		}
		if err := json.Unmarshal(keys[k], dst); err != nil {
			return Vocab{}, nil, fmt.Errorf("%s: wrong type: %w", k, err)
		}
	}
	def := NeutralVocab()
	for _, f := range []struct {
		dst *string
		def string
	}{
		{&v.WriteVerbSuffix, def.WriteVerbSuffix}, {&v.WriteNoun, def.WriteNoun},
		{&v.TaskNoun, def.TaskNoun}, {&v.ItemNoun, def.ItemNoun},
		{&v.RunRefKey, def.RunRefKey}, {&v.LearningTargetKind, def.LearningTargetKind},
	} {
		// A blank suffix would match every tool; blank nouns read badly.
		if *f.dst = strings.TrimSpace(*f.dst); *f.dst == "" {
			*f.dst = f.def
		}
	}
	v.CoreVerbs = cleanList(v.CoreVerbs)
	v.SubjectKeys = cleanList(v.SubjectKeys)
	if ws := bytes.TrimSpace(v.WriteShape); len(ws) == 0 || bytes.Equal(ws, []byte("null")) {
		v.WriteShape = nil
	} else if ws[0] != '{' {
		return Vocab{}, nil, errors.New("writeShape: want a JSON object at its root")
	} else {
		var compact bytes.Buffer
		if err := json.Compact(&compact, ws); err != nil {
			return Vocab{}, nil, fmt.Errorf("writeShape: %w", err)
		}
		v.WriteShape = compact.Bytes()
	}
	return v, warn, nil
}

func cleanList(in []string) []string {
	out := []string{}
	for _, s := range in {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// loadVocab applies DELTA_VOCAB (when non-blank) or else vocab.json. Any
// problem falls back to NeutralVocab with a warning; a missing vocab.json is
// normal and silent.
func loadVocab(path, override string) (Vocab, []string) {
	src, doc := "DELTA_VOCAB", []byte(override)
	if strings.TrimSpace(override) == "" {
		src = VocabFile
		data, tooBig, err := readCapped(path, ContextMaxFileBytes)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return NeutralVocab(), nil
		case err != nil:
			return NeutralVocab(), []string{fmt.Sprintf("%s unreadable, using neutral vocabulary: %v", VocabFile, err)}
		case tooBig:
			return NeutralVocab(), []string{fmt.Sprintf("%s is over %d bytes, using neutral vocabulary", VocabFile, ContextMaxFileBytes)}
		}
		doc = data
	}
	v, warn, err := ParseVocab(doc)
	for i := range warn {
		warn[i] = src + ": " + warn[i]
	}
	if err != nil {
		return NeutralVocab(), []string{fmt.Sprintf("%s malformed, using neutral vocabulary: %v", src, err)}
	}
	return v, warn
}

// Namespace is the memory namespace derived from WriteNoun: lowercased, runs
// of anything but letters and digits folded to "-" ("default" when nothing
// is left). Rewording writeNoun
// changes it; set DELTA_MEMORY_NAMESPACE to keep the old one.
func (v Vocab) Namespace() string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(v.WriteNoun) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	if b.Len() == 0 {
		return "default"
	}
	return b.String()
}

// WriteTool finds the reviewed-write tool among tool names in insertion
// order: the first whose full name ends with WriteVerbSuffix. matches counts
// every such tool; more than one means the suffix is ambiguous and should be
// made more specific (e.g. crm__propose_change), since policy and promotion
// would bind to the first server only.
func (v Vocab) WriteTool(names []string) (name string, matches int) {
	if v.WriteVerbSuffix == "" {
		return "", 0
	}
	for _, n := range names {
		if strings.HasSuffix(n, v.WriteVerbSuffix) {
			if matches == 0 {
				name = n
			}
			matches++
		}
	}
	return name, matches
}
