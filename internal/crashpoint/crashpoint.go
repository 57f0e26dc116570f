// Package crashpoint is fault injection for the crash-matrix test: a Hit
// call marks a named point on the durable path (queue insert, ack, model
// call, tool intent, tool execution, tool result, compaction, final reply,
// finish, the answer of a promotion call). In an ordinary build Hit is an empty function the compiler
// removes. Built with `-tags crashtest`, the process exits with code 137 — what a SIGKILL
// looks like to a supervisor — the first time it reaches the point named by
// DELTA_CRASH_AT, so a test can restart it and check the recovery outcome.
//
// Reading DELTA_CRASH_AT here, outside internal/config, is deliberate: it is
// test-only machinery that exists only in the crashtest build (see
// crashpoint_crashtest.go), never in a shipped binary, and is no setting an
// operator could use.
package crashpoint

// The named points, in the order a run passes them.
const (
	// BeforeAck: the run row is committed, the client has no 202 yet.
	BeforeAck = "api.before-ack"
	// AfterAck: the 202 has been flushed to the client.
	AfterAck = "api.after-ack"
	// ModelCall: the model has answered but nothing of its answer is
	// committed — for durability the same as dying during the call.
	ModelCall = "engine.model-call"
	// AfterIntent: the assistant message and its tool intents are
	// committed (for a step whose calls are all read-only, the commit may
	// still be in flight: it runs in the background while they run, and
	// such calls may run again after a crash); no tool has started.
	AfterIntent = "engine.after-intent"
	// MidTool: the tool has done its work (a file is written) but its
	// result is not journalled — the in-doubt side effect.
	MidTool = "engine.mid-tool"
	// AfterResult: the tool result and its message are committed; the next
	// model call has not started.
	AfterResult = "engine.after-result"
	// MidCompaction: inside the transaction that applies a compaction,
	// after the replaced messages are marked inactive and before the summary
	// row is written.
	MidCompaction = "engine.mid-compaction"
	// BeforeFinish: the final answer is known; nothing of it is committed
	// (a final reply commits with the terminal status and run.finished, in
	// one transaction), so a restart asks the model for it again.
	BeforeFinish = "engine.before-finish"
	// AfterFinish: a successful run's terminal state and its reflection
	// outbox row are committed, the reflection not yet drained.
	AfterFinish = "engine.after-finish"
	// PromotionAfterCall: the product's tool has answered a promotion; the
	// outcome is not recorded, so the outbox row is still claimed.
	PromotionAfterCall = "memory.promotion-after-call"
)

// The scheduler's points (delta scheduler), apart from the daemon's matrix
// because a daemon never passes them.
const (
	// SchedulerAfterIntent: a firing is recorded and its schedule advanced;
	// the task is not posted to the daemon.
	SchedulerAfterIntent = "scheduler.after-intent"
	// SchedulerAfterPost: the daemon acknowledged the firing's task; the
	// acknowledgement is not recorded.
	SchedulerAfterPost = "scheduler.after-post"
)

// Points lists every named point, for tests that walk the matrix.
func Points() []string {
	return []string{BeforeAck, AfterAck, ModelCall, AfterIntent, MidTool, AfterResult, MidCompaction, BeforeFinish, AfterFinish, PromotionAfterCall}
}
