// Package perf holds benchmarks that compare Delta with a floor: a plain
// loop with no framework that sends the growing conversation to the same
// scripted endpoint over the same wire (OpenAI Chat Completions through
// the real client) and answers the same tool inline, with nothing stored.
// Delta does the same task durably: a real SQLite store, the engine, the
// cascade and the same client. bench/steps.sh runs them side by side.
package perf
