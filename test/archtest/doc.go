// Package archtest holds the guards that keep the module's shape honest:
// every package under internal/ and cmd/ has a package doc comment, and the
// import edges between the module's own packages are exactly the ones
// ARCHITECTURE.md lists. Its tests run `go list` on the module; the package
// itself has no code.
package archtest
