package openai

import "github.com/deltaharness/delta/internal/model"

// A conversation's messages grow by appending, so most of each request's
// body is the previous request's: the system blocks and the history. The
// client keeps, in the request's model.Memo, the encoded opening of the
// last body and what each of its elements (system blocks, then messages)
// was encoded from; the next call copies the bytes of the elements that
// are unchanged, in order from the first, and builds and encodes only the
// rest. An element is reused only when every field this wire sends of it
// is equal to what it was encoded from, so the body is byte for byte the
// one a fresh encoding writes (equiv_test.go holds it to that): a
// compaction that rewrites the history, or a different system block,
// simply matches less. A message with images ends the reusable opening.

// prefix is the encoded opening of a conversation's last body: keys[i] is
// what element i was encoded from and ends[i] the body's length after it.
type prefix struct {
	keys []elemKey
	ends []int
	body []byte
}

// elemKey is what reaches this wire of one element (Name and Extra do not).
type elemKey struct {
	role       model.Role
	content    string
	toolCallID string
	calls      []callKey
}

type callKey struct {
	id, name, args string // args as given, before model.ArgumentsText
}

func systemKey(block string) elemKey { return elemKey{role: model.RoleSystem, content: block} }

func messageKey(m *model.Message) elemKey {
	k := elemKey{role: m.Role, content: m.Content, toolCallID: m.ToolCallID}
	for _, tc := range m.ToolCalls {
		k.calls = append(k.calls, callKey{id: tc.ID, name: tc.Name, args: string(tc.Arguments)})
	}
	return k
}

// sameMessage reports whether m would be encoded exactly as the element k
// was (a message with images never is: its bytes are not kept).
func (k *elemKey) sameMessage(m *model.Message) bool {
	if m.Role != k.role || m.Content != k.content || m.ToolCallID != k.toolCallID ||
		len(m.Images) > 0 || len(m.ToolCalls) != len(k.calls) {
		return false
	}
	for i := range m.ToolCalls {
		tc, c := &m.ToolCalls[i], &k.calls[i]
		if tc.ID != c.id || tc.Name != c.name || string(tc.Arguments) != c.args {
			return false
		}
	}
	return true
}
