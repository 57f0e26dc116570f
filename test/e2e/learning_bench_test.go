package e2e

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltaharness/delta/internal/mcp/mcptest"
	"github.com/deltaharness/delta/internal/model/modeltest"
)

var lessonNo = regexp.MustCompile(`LESSON-(\d+)`)

// BenchmarkResponseLatencyReflection measures what a caller waits for: a
// POST /v1/responses until its completed body is readable, through the real
// binary, the scripted fake and the MCP test product, with reflection off
// and on. With it on, every job owes a reflection (one utility-lane call)
// and every second job's lesson recurs, so it also stages and sends one
// promotion to the product; both run after the response is released, so
// the figures should match. Both modes start with the same ten lessons in
// memory, so both pay for recall at session open. settled=false sends the jobs back to back, so
// a response shares the machine with the previous job's reflection and
// promotion; settled=true waits (off the clock) until those finished, which
// isolates the response path itself. It reports p50-ms and p95-ms of single
// responses (the machine's load moves all of them; compare the
// sub-benchmarks of one run).
func BenchmarkResponseLatencyReflection(b *testing.B) {
	for _, c := range []struct{ reflect, settle bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		reflect := c.reflect
		b.Run(fmt.Sprintf("reflect=%v/settled=%v", c.reflect, c.settle), func(b *testing.B) {
			servers := productServers(b, mcptest.NewProduct())
			fake := startScript(b, func(req modeltest.ChatRequest) modeltest.Reply {
				system, user := prompt(req)
				if strings.Contains(system, "reusable lesson") {
					k := lessonNo.FindStringSubmatch(user)
					if k == nil {
						return modeltest.Reply{Text: `{"none":true}`}
					}
					art, _ := json.Marshal(map[string]any{"kind": "pitfall", "confidence": 0.85,
						"content": "Lesson " + k[1] + ": open every job description with the role's scope."})
					return modeltest.Reply{Text: string(art)}
				}
				return modeltest.TextReply("Here is the job description.")
			})
			d := newDaemon(b, fake, "DELTA_MCP_SERVERS="+servers, "DELTA_VOCAB="+productVocab, "DELTA_SKILLS=off")
			job := func(input string) string {
				return fmt.Sprintf(`{"input":%q,"metadata":{"task_type":"jd-generation","reflect":%v}}`, input, reflect)
			}
			// Warm up (the first runs pay for connections and caches) and
			// fill memory with lessons that never recur, so both modes
			// recall the same rows at session open and differ only in the
			// reflection and promotion each job owes.
			const prefilled = 10
			for n := range prefilled {
				d.as("", fmt.Sprintf(`{"input":"LESSON-%d warm up","metadata":{"task_type":"jd-generation","reflect":true}}`, 100000+n))
			}
			d.drained()
			lat := make([]time.Duration, 0, b.N)
			i := 0
			b.ResetTimer()
			for b.Loop() {
				body := job(fmt.Sprintf("LESSON-%d draft the JD for engineer %d", i/2, i))
				i++
				t0 := time.Now()
				d.as("", body)
				lat = append(lat, time.Since(t0))
				if c.settle {
					// Off the clock: let the background work finish, so
					// the next response measures only its own path.
					d.drained()
					d.promotionsSettled()
					// The same idle pause in both modes: waiting for the
					// background work idles the daemon, and an idle
					// daemon answers the next request a little slower.
					time.Sleep(60 * time.Millisecond)
				}
			}
			b.StopTimer()
			mem := d.drained()
			if reflect {
				if out := d.promotionsSettled(); out["sent"] != float64(i/2) {
					b.Fatalf("after %d jobs the outbox is %v, want %d sent", i, out, i/2)
				}
			} else if mem["rows"] != float64(prefilled) {
				b.Fatalf("reflection off, yet memory %v", mem)
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
		})
	}
}
