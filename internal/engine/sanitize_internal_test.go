package engine

import (
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"

	"github.com/deltaharness/delta/internal/model"
)

// sanitizeSlow is sanitize without its shortcut: every history goes the
// long way, through the set of answered calls and a fresh copy.
func sanitizeSlow(history []model.Message) []model.Message {
	answered := make(map[string]bool)
	for _, m := range history {
		if m.Role == model.RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	var out []model.Message
	for _, m := range history {
		out = append(out, m)
		if m.Role != model.RoleAssistant {
			continue
		}
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				out = append(out, model.Message{Role: model.RoleTool, ToolCallID: c.ID, Name: c.Name,
					Content: "[interrupted] this call has no recorded result; verify its effect before relying on it"})
			}
		}
	}
	return out
}

// randomHistory is a conversation of turns with up to three calls each,
// where a result may be missing, stored after the next turn, or answer a
// call of another turn.
func randomHistory(r *rand.Rand) []model.Message {
	h := []model.Message{{Role: model.RoleUser, Content: "go"}}
	var late []model.Message
	id := 0
	for turn := r.IntN(12); turn > 0; turn-- {
		a := model.Message{Role: model.RoleAssistant, Content: "t"}
		for k := r.IntN(4); k > 0; k-- {
			id++
			a.ToolCalls = append(a.ToolCalls, model.ToolCall{ID: "c" + strconv.Itoa(id), Name: "echo"})
		}
		h = append(h, a)
		h = append(h, late...)
		late = nil
		for _, c := range a.ToolCalls {
			res := model.Message{Role: model.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: "ok"}
			switch r.IntN(8) {
			case 0: // lost: the run crashed between intent and result
			case 1:
				late = append(late, res)
			case 2:
				res.ToolCallID = "c" + strconv.Itoa(1+r.IntN(id))
				h = append(h, res)
			default:
				h = append(h, res)
			}
		}
		if r.IntN(5) == 0 {
			h = append(h, model.Message{Role: model.RoleUser, Content: "more"})
		}
	}
	return append(h, late...)
}

// TestSanitizeShortcutMatchesLongWay: on thousands of random histories,
// complete ones and ones with lost, late and stray results, sanitize
// returns exactly what building the answered set and copying returns.
func TestSanitizeShortcutMatchesLongWay(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	shortcuts := 0
	for i := 0; i < 5000; i++ {
		h := randomHistory(r)
		got, want := sanitize(h), sanitizeSlow(h)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("history %d: sanitize\n%+v\nwant\n%+v\nof\n%+v", i, got, want, h)
		}
		if allAnswered(h) {
			shortcuts++
		}
	}
	if shortcuts == 0 || shortcuts == 5000 {
		t.Fatalf("the shortcut was taken %d times in 5000: the histories do not exercise both ways", shortcuts)
	}
}
