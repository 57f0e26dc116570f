package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/deltaharness/delta/internal/model"
)

// BenchmarkCompactionCPU is the CPU cost of one compaction of a
// 120,000-token history, the model call excluded: choosing the cut,
// re-capping the tail, the anchor harvest, both ledgers, the transcript the
// summarizer reads, the audit with its appendix, and the envelope.
func BenchmarkCompactionCPU(b *testing.B) {
	var h []model.Message
	h = append(h, model.Message{Role: model.RoleUser, Content: "Reconcile the Acme Robotics invoices for 2024 and email maria@acme.example."})
	for i := 0; messagesBytes(h) < 120000*estimateBytesPerToken; i++ {
		id := fmt.Sprintf("c%d", i)
		h = append(h, model.Message{Role: model.RoleAssistant,
			Content:   fmt.Sprintf("Checked INV-2024-%04d for Maria Delgado; total %d.%02d. Next https://ledger.example.com/inv/%d", i, 1000+i, i%100, i),
			ToolCalls: []model.ToolCall{call(id, "web_fetch", fmt.Sprintf(`{"url":"https://ledger.example.com/inv/%d"}`, i))}},
			model.Message{Role: model.RoleTool, ToolCallID: id, Name: "web_fetch",
				Content: strings.Repeat(fmt.Sprintf("line %d of invoice INV-2024-%04d: amount %d, status paid. ", i, i, i*3), 30)})
	}
	fixed := 8000
	note := "Goal: reconcile invoices. Done: checked many invoices for Maria Delgado at Acme Robotics; totals recorded."
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := chooseCut(h, tailBudget(DefaultCompactAt, fixed, false))
		covered, kept := h[:c.at], recapped(h[c.at:], c.recap)
		anchors := harvestAnchors(covered, nil)
		led := buildLedgers(covered, "", ledgerBytes)
		input := transcript(covered, summaryInputChars)
		ar := audit(anchors, clipWords(note, summaryWords), summaryBytes/3)
		env := envelope("Reconcile the invoices.", note+ar.appendix+led.text)
		if len(kept) == 0 || len(input) == 0 || env.Content == "" {
			b.Fatal("empty compaction")
		}
	}
}
