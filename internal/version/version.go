// Package version reports the harness version, stamped at build time with
// -ldflags "-X github.com/deltaharness/delta/internal/version.Version=…".
package version

// Version of the delta and bobby binaries.
var Version = "0.1.0-dev"
