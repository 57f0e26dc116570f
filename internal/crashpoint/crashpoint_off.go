//go:build !crashtest

package crashpoint

// Enabled reports whether this binary was built with -tags crashtest.
const Enabled = false

// Hit does nothing in an ordinary build.
func Hit(string) {}
