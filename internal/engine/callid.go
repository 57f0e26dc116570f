package engine

import (
	"strconv"

	"github.com/deltaharness/delta/internal/model"
)

// uniqueCallIDs gives every tool call of a response an id no other call of
// the conversation has, rewriting the response in place before it is
// checkpointed. Some providers number calls afresh on every response
// ("call_0" each turn) or send none at all; the journal keys a run's calls
// by id and several wires refuse a history whose tool-call ids repeat, so a
// repeated or missing id would otherwise fail the run. A renamed id keeps
// the original as its stem ("call_0_2"), within the characters every wire
// accepts when the original did.
//
// used holds the ids the conversation has so far and gains the new ones; it
// is built once per execution (usedCallIDs), so a step costs the same on a
// long history as on a short one.
func uniqueCallIDs(calls []model.ToolCall, used map[string]bool) {
	for i := range calls {
		id := calls[i].ID
		if id != "" && !used[id] {
			used[id] = true
			continue
		}
		stem := id
		if stem == "" {
			stem = "call"
		}
		for n := 2; ; n++ {
			cand := stem + "_" + strconv.Itoa(n)
			if !used[cand] {
				calls[i].ID = cand
				used[cand] = true
				break
			}
		}
	}
}

// usedCallIDs is the set of tool-call ids in a conversation.
func usedCallIDs(history []model.Message) map[string]bool {
	used := map[string]bool{}
	for _, m := range history {
		for _, c := range m.ToolCalls {
			used[c.ID] = true
		}
		if m.ToolCallID != "" {
			used[m.ToolCallID] = true
		}
	}
	return used
}
