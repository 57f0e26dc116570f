package mcp

import "time"

// SetTerminateAfter shortens how long a stdio server gets to exit at each
// step of stopping it, for tests of servers that ignore the first steps.
func SetTerminateAfter(d time.Duration) (restore func()) {
	old := terminateAfterTest.Swap(int64(d))
	return func() { terminateAfterTest.Store(old) }
}
