package mcp

import "time"

// SetTerminateAfter shortens how long a stdio server gets to exit at each
// step of stopping it, for tests of servers that ignore the first steps.
func SetTerminateAfter(d time.Duration) (restore func()) {
	old := terminateAfterTest.Swap(int64(d))
	return func() { terminateAfterTest.Store(old) }
}

// SetRetryPause replaces the first pause after a failed connection attempt
// (1 s, doubling after each further failure).
func SetRetryPause(d time.Duration) (restore func()) {
	old := retryPauseTest.Swap(int64(d))
	return func() { retryPauseTest.Store(old) }
}
