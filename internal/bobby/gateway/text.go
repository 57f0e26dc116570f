package gateway

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
)

// The text content of a tool result is what a model reads: most hosts
// (delta among them) forward content, not structuredContent. Repeating the
// structuredContent JSON there, escaped, doubled every answer. So the text
// is a compact rendering of the same result, and structuredContent stays
// the whole typed contract that clients validate against outputSchema:
//
//	<status> <tool>[ <id>=<value>…][; <key>=<scalar>…]
//	error <code>: <message>
//	repair: <action> <doc>
//	<key>: <compact JSON>          (one line per object or list of evidence)
//	<snapshot text>                (a11y_snapshot, workflow_observe)
//
// The header names every id a next call needs, so a host that forwards
// only text can chain calls: a workflowHandle and the sessionId, pageId and
// workflowId it stands for (page_list, session_close and explicit-scope
// calls take those), the id of a session or page just created, the
// workflowId a command minted. Each id appears once: repeats deeper in the
// result are left out. commandId stays in structuredContent only.

// headerIDs are the result keys lifted onto the header, in order.
var headerIDs = []string{"workflowHandle", "sessionId", "pageId", "workflowId"}

// createdIDs names the bare "id" (and "session_id") of the state a tool
// returns, which is a session or a page depending on the tool.
var createdIDs = map[string]map[string]string{
	"session_create": {"id": "sessionId"},
	"page_open":      {"id": "pageId", "session_id": "sessionId"},
}

// fullResultText is the text of a call made with evidenceDetail:"full":
// the header line of the compact text, then the whole structuredContent
// JSON, for debugging and for hosts that want the record in the text.
func fullResultText(tool string, v any, structured []byte) string {
	head, _, _ := strings.Cut(resultText(tool, v), "\n")
	return head + "\n" + string(structured)
}

// resultText renders the text content of a successful or failed result.
func resultText(tool string, v any) string {
	if o, ok := v.(*Outcome); ok {
		return outcomeText(o)
	}
	m := toMap(v)
	if len(m) == 0 {
		return tool
	}
	for from, to := range createdIDs[tool] {
		if id, ok := m[from].(string); ok && id != "" {
			if _, has := m[to]; !has {
				m[to] = id
			}
			delete(m, from)
		}
	}
	known := map[string]bool{}
	var ids []string
	for _, k := range headerIDs {
		if s, ok := m[k].(string); ok && s != "" {
			ids = append(ids, k+"="+s)
			known[s] = true
			delete(m, k)
		}
	}
	status, _ := m["status"].(string)
	delete(m, "status")
	w := &textWriter{known: known}
	w.header(status, tool, ids)
	w.errorOf(m["error"])
	delete(m, "error")
	if r, ok := v.(*observeResult); ok {
		// workflow_observe: the observation's snapshot reads as a11y_snapshot's
		// does (page and bounds on the header, the text last); the rest of
		// that outcome (its kind, a completed status) says nothing new.
		if o := r.ObservationOutcome; o != nil && !o.failed() {
			if acc, _ := toMap(o.Evidence)["accessibility"].(map[string]any); acc != nil {
				w.snapshotHeader(acc)
				w.snapshotBody(acc)
				delete(m, "observationOutcome")
			}
		}
		raw := map[string]any{}
		if r.FormSnapshot != nil {
			raw["formSnapshot"] = r.FormSnapshot
		}
		w.lines = append(w.lines, formEvidenceText(m, raw)...)
	}
	w.fields(m)
	return w.String()
}

// outcomeText renders a CommandOutcome.
func outcomeText(o *Outcome) string {
	known := map[string]bool{o.CommandID: true, o.SessionID: true, o.PageID: true, o.WorkflowID: true}
	var ids []string
	for _, k := range o.echo {
		switch k {
		case "workflowId":
			ids = append(ids, "workflowId="+o.WorkflowID)
		case "pageId":
			ids = append(ids, "pageId="+o.PageID)
		}
	}
	kind := o.Kind
	if o.Replayed {
		kind += " (replayed)"
	}
	w := &textWriter{known: known}
	w.header(o.Status, kind, ids)
	ev := toMap(o.Evidence)
	acc, _ := ev["accessibility"].(map[string]any)
	if acc != nil {
		delete(ev, "accessibility")
		w.snapshotHeader(acc)
	}
	w.errorOf(toMap(o.Error))
	w.lines = append(w.lines, formEvidenceText(ev, o.Evidence)...)
	w.lines = append(w.lines, browserEvidenceText(ev, o.Evidence)...)
	w.fields(ev)
	if len(o.Diagnostics) > 0 {
		w.field("diagnostics", toMap(o.Diagnostics))
	}
	if acc != nil {
		w.snapshotBody(acc)
	}
	return w.String()
}

// textWriter accumulates the header line and the lines after it.
type textWriter struct {
	known map[string]bool // ids the caller holds: left out of the text
	head  strings.Builder
	lines []string
	tail  []string // snapshot texts, last
}

func (w *textWriter) String() string {
	var b strings.Builder
	b.WriteString(w.head.String())
	for _, l := range w.lines {
		b.WriteByte('\n')
		b.WriteString(l)
	}
	for _, t := range w.tail {
		b.WriteByte('\n')
		b.WriteString(strings.TrimRight(t, "\n"))
	}
	return b.String()
}

func (w *textWriter) header(status, tool string, ids []string) {
	if status == "" {
		status = StatusCompleted
	}
	w.head.WriteString(status)
	w.head.WriteByte(' ')
	w.head.WriteString(tool)
	for _, id := range ids {
		w.head.WriteByte(' ')
		w.head.WriteString(id)
	}
}

// snapshotHeader puts a snapshot's page and bounds on the header line.
func (w *textWriter) snapshotHeader(acc map[string]any) {
	if t, _ := acc["title"].(string); t != "" {
		w.head.WriteString("; ")
		w.head.WriteString(strconv.Quote(t))
	}
	if u, _ := acc["url"].(string); u != "" {
		w.head.WriteString(" ")
		w.head.WriteString(u)
	}
	shown, total := jsonInt(acc["shownNodes"]), jsonInt(acc["totalNodes"])
	w.head.WriteString("; ")
	if shown != total {
		w.head.WriteString(strconv.Itoa(shown) + " of ")
	}
	w.head.WriteString(strconv.Itoa(total) + " nodes")
	if n := jsonInt(acc["skippedFrames"]); n > 0 {
		w.head.WriteString("; skippedFrames=" + strconv.Itoa(n))
	}
	if sc, ok := acc["scope"]; ok && sc != nil {
		w.head.WriteString("; scope=" + compactJSON(sc))
	}
}

func (w *textWriter) snapshotBody(acc map[string]any) {
	if t, _ := acc["text"].(string); t != "" {
		w.tail = append(w.tail, t)
	}
}

// errorOf renders an error body {code, message, repair{action, doc},
// pointer, constraint}.
func (w *textWriter) errorOf(v any) {
	e, _ := v.(map[string]any)
	if len(e) == 0 {
		return
	}
	var b strings.Builder
	b.WriteString("error ")
	b.WriteString(str2(e["code"]))
	if p, ok := e["pointer"].(string); ok {
		b.WriteString(" at " + pointerOrRoot(p))
		if c, _ := e["constraint"].(string); c != "" {
			b.WriteString(" (" + c + ")")
		}
	}
	if m := str2(e["message"]); m != "" {
		b.WriteString(": ")
		b.WriteString(m)
	}
	w.lines = append(w.lines, b.String())
	if r, _ := e["repair"].(map[string]any); r != nil {
		w.lines = append(w.lines, "repair: "+str2(r["action"])+" "+str2(r["doc"]))
	}
}

// fields renders the remaining keys in name order: scalars on the header
// line, objects and lists one line each.
func (w *textWriter) fields(m map[string]any) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w.field(k, m[k])
	}
}

func (w *textWriter) field(k string, v any) {
	v = w.prune(k, v)
	switch x := v.(type) {
	case nil:
	case map[string]any:
		if len(x) > 0 {
			w.lines = append(w.lines, k+": "+compactJSON(x))
		}
	case []any:
		w.lines = append(w.lines, k+": "+compactJSON(x))
	case rawText:
		w.head.WriteString("; " + k + "=" + string(x))
	case string:
		w.head.WriteString("; " + k + "=" + scalarText(x))
	default:
		w.head.WriteString("; " + k + "=" + compactJSON(x))
	}
}

// prune drops what the text need not repeat: nulls, ids the caller holds
// (wherever they appear),
// commandIds, a page's constant mode and idle request count. A page state
// becomes "url (readyState)"; a nested snapshot's text moves to the end,
// unescaped.
func (w *textWriter) prune(k string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		if t, ok := x["text"].(string); ok {
			if _, snap := x["shownNodes"]; snap {
				w.tail = append(w.tail, t)
				delete(x, "text")
			}
		}
		if s, ok := pageStateText(x, w.known); ok {
			return rawText(s)
		}
		for ck, cv := range x {
			pv := w.prune(ck, cv)
			if pv == nil {
				delete(x, ck)
			} else {
				x[ck] = pv
			}
		}
		return x
	case []any:
		out := x[:0]
		for _, e := range x {
			if pe := w.prune("", e); pe != nil {
				out = append(out, pe)
			}
		}
		if len(out) == 0 && len(x) > 0 {
			return nil // it held only ids the caller has
		}
		return out
	case string:
		if k == "commandId" || w.known[x] {
			return nil
		}
	}
	return v
}

// rawText is text written as it is on the header line (a page state); in
// JSON it is a string.
type rawText string

// pageStateText renders a page state {id, session_id, url, mode,
// ready_state, pending_requests} as "id url (readyState)", and what a
// listing adds to it as words after: "opened by <id>" for a popup's
// opener, the dialog waiting for an answer. Any other key follows as
// key=value, so a field added to the state later never turns the line
// back into a JSON dump.
func pageStateText(m map[string]any, known map[string]bool) (string, bool) {
	if _, ok := m["ready_state"]; !ok {
		return "", false
	}
	var b strings.Builder
	if id, _ := m["id"].(string); id != "" && !known[id] {
		b.WriteString(id + " ")
	}
	if u, _ := m["url"].(string); u != "" {
		b.WriteString(u + " ")
	} else {
		b.WriteString("about:blank ")
	}
	b.WriteString("(" + str2(m["ready_state"]))
	if n := jsonInt(m["pending_requests"]); n > 0 {
		b.WriteString(", " + strconv.Itoa(n) + " pending")
	}
	b.WriteString(")")
	if o, _ := m["opener_id"].(string); o != "" {
		b.WriteString(" opened by " + o)
	}
	if d, ok := m["dialog"].(map[string]any); ok {
		b.WriteString(" dialog " + str2(d["type"]))
		if msg := str2(d["message"]); msg != "" {
			b.WriteString(" " + strconv.Quote(msg))
		}
	}
	var rest []string
	for k := range m {
		switch k {
		case "id", "session_id", "url", "mode", "ready_state", "pending_requests", "opener_id", "dialog":
		default:
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		if v := m[k]; v != nil {
			if sv, ok := v.(string); ok {
				b.WriteString(" " + k + "=" + scalarText(sv))
			} else {
				b.WriteString(" " + k + "=" + compactJSON(v))
			}
		}
	}
	return b.String(), true
}

// scalarText writes a string bare when it is one token, quoted otherwise.
func scalarText(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n\r\";=") {
		return s
	}
	return strconv.Quote(s)
}

func str2(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if v == nil {
		return ""
	}
	return compactJSON(v)
}

func jsonInt(v any) int {
	if f, ok := v.(float64); ok {
		return int(f)
	}
	return 0
}

// compactJSON marshals v without HTML escaping (a URL keeps its & and <).
func compactJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "null"
	}
	return strings.TrimRight(b.String(), "\n")
}
