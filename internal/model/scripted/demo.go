package scripted

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/deltaharness/delta/internal/clip"
)

// DefaultBriefPath is where DemoScript writes when the request names no file.
const DefaultBriefPath = "brief.md"

// DemoScript is the deterministic agent behind `delta demo` and the
// end-to-end tests. It reads only the request, so the same conversation
// always gets the same answer.
//
// Terms: harness blocks are user-role messages whose content starts with
// "<delta:" (the per-turn and instructions blocks the engine appends after
// the history on every step); DemoScript ignores them entirely. The request
// text is the content of the last other user message; a user turn is a run
// of consecutive such messages, so user, assistant, tool, assistant, user
// has two. "The last message" is the last one that is not a harness block.
//
// When the last message is the user's:
//   - if the request text contains the word "list" (any case) and the request
//     offers list_files, it calls list_files {"path":"."};
//   - otherwise it calls write_file {"path":P,"content":C}. P is the first
//     word of the request text that looks like a relative .md or .txt path
//     (letters, digits, "-_./", no ".."), else "brief.md". C is a markdown
//     brief that quotes the request text line by line.
//
// When the last message is a tool result:
//   - for list_files, it calls write_file as above, and the brief also
//     quotes the listing;
//   - for any other tool, it answers with final text naming the file and
//     quoting the tool's result: `I wrote brief.md. The tool said: <result>`,
//     plus ` I have seen N user turns in this conversation.` when N > 1,
//     which proves the history was sent.
//
// A request that does not offer write_file gets a text answer saying so.
// Every reply carries a short reasoning text, streamed as delta.reasoning.
// Tool-call ids are "call_demo_<k>", k counting the conversation's
// assistant messages, so they are unique within one conversation.
func DemoScript() Script { return demo }

func demo(req ChatRequest) Reply {
	req.Messages = conversation(req.Messages)
	text, turns := userText(req.Messages)
	path := briefPath(text)
	callID := fmt.Sprintf("call_demo_%d", countRole(req.Messages, "assistant")+1)
	last := req.LastMessage()

	if last.Role == "tool" {
		called := toolNameFor(req.Messages, last)
		if called != "list_files" {
			msg := fmt.Sprintf("I wrote %s. The tool said: %s", writtenPath(req.Messages, path), clip.Runes(strings.TrimSpace(last.Content), 300))
			if turns > 1 {
				msg += fmt.Sprintf(" I have seen %d user turns in this conversation.", turns)
			}
			return Reply{Reasoning: "The file is written; I report what the tool said.", Text: msg}
		}
		if !req.HasTool("write_file") {
			return noWriteFile()
		}
		return writeBrief(callID, path, text, turns, last.Content)
	}
	if last.Role != "user" {
		return Reply{Text: "There is nothing for me to do: the last message is not a request."}
	}
	if hasWord(text, "list") && req.HasTool("list_files") {
		return Reply{
			Reasoning: "The request mentions a listing, so I look at the workspace first.",
			ToolCalls: []ToolCall{{ID: callID, Name: "list_files", Arguments: `{"path":"."}`}},
		}
	}
	if !req.HasTool("write_file") {
		return noWriteFile()
	}
	return writeBrief(callID, path, text, turns, "")
}

func noWriteFile() Reply {
	return Reply{Text: "I need the write_file tool to write the brief, and this request does not offer it."}
}

func writeBrief(callID, path, text string, turns int, listing string) Reply {
	var b strings.Builder
	b.WriteString("# Brief\n\n")
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		b.WriteString("> " + line + "\n")
	}
	fmt.Fprintf(&b, "\nRequested in user turn %d.\n", turns)
	if l := strings.TrimSpace(listing); l != "" {
		b.WriteString("\nFiles present when this brief was written:\n\n```\n" + clip.Runes(l, 2000) + "\n```\n")
	}
	args, _ := json.Marshal(map[string]string{"path": path, "content": b.String()}) // strings always marshal
	return Reply{
		Reasoning: "The user wants a brief; I write it to " + path + ".",
		ToolCalls: []ToolCall{{ID: callID, Name: "write_file", Arguments: string(args)}},
	}
}

// userText returns the last user message's content and the number of user turns.
func userText(msgs []ChatMessage) (text string, turns int) {
	prevUser := false
	for _, m := range msgs {
		isUser := m.Role == "user"
		if isUser {
			text = m.Content
			if !prevUser {
				turns++
			}
		}
		prevUser = isUser
	}
	return text, turns
}

func countRole(msgs []ChatMessage, role string) int {
	n := 0
	for _, m := range msgs {
		if m.Role == role {
			n++
		}
	}
	return n
}

// toolNameFor finds which tool a tool message answers, from the assistant
// tool call with the same id; it falls back to the message's own name.
func toolNameFor(msgs []ChatMessage, toolMsg ChatMessage) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, tc := range msgs[i].ToolCalls {
			if tc.ID == toolMsg.ToolCallID {
				return tc.Name
			}
		}
	}
	return toolMsg.Name
}

// writtenPath is the path of the latest write_file call in the
// conversation, or fallback when there is none or its arguments are not JSON.
func writtenPath(msgs []ChatMessage, fallback string) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, tc := range msgs[i].ToolCalls {
			if tc.Name != "write_file" {
				continue
			}
			var a struct {
				Path string `json:"path"`
			}
			if json.Unmarshal([]byte(tc.Arguments), &a) == nil && a.Path != "" {
				return a.Path
			}
			return fallback
		}
	}
	return fallback
}

// briefPath picks the first word that is a safe relative .md or .txt path.
func briefPath(text string) string {
	for _, w := range strings.Fields(text) {
		w = strings.Trim(w, "`'\"()[]{}<>,;:!?")
		w = strings.TrimRight(w, ".")
		lower := strings.ToLower(w)
		if !strings.HasSuffix(lower, ".md") && !strings.HasSuffix(lower, ".txt") {
			continue
		}
		if strings.HasPrefix(w, "/") || strings.Contains(w, "..") || strings.HasPrefix(w, ".") {
			continue
		}
		ok := true
		for _, r := range w {
			if !(r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_./", r))) {
				ok = false
				break
			}
		}
		if ok {
			return w
		}
	}
	return DefaultBriefPath
}

// hasWord reports whether text contains word as a whole word, in any case.
func hasWord(text, word string) bool {
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if w == word {
			return true
		}
	}
	return false
}

// conversation drops the per-turn context blocks Delta appends as user-role
// messages (they open with "<delta:"), so the script reacts to the
// conversation itself, as a model treats those blocks as context.
func conversation(msgs []ChatMessage) []ChatMessage {
	out := make([]ChatMessage, 0, len(msgs))
	for _, m := range msgs {
		if m.Role == "user" && strings.HasPrefix(strings.TrimSpace(m.Content), "<delta:") {
			continue
		}
		out = append(out, m)
	}
	return out
}
