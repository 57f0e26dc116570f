// Package web holds the tools that reach the internet: web_fetch reads one
// page as text, web_search asks Exa's search API.
//
// web_fetch is the model's only way to make the daemon open an arbitrary
// connection, so every connection goes through a guard (guard.go): the host
// is resolved once, any loopback, private, link-local, unique-local, CGNAT,
// multicast, unspecified or cloud-metadata address refuses it, and the
// connection is made to the address that was checked, so DNS rebinding
// cannot slip a private address in between check and dial. Redirects open new
// connections through the same guard and are refused by scheme and count.
// Options.AllowPrivate (DELTA_FETCH_ALLOW_PRIVATE=1) lifts the address check
// for local development.
//
// Both tools are read-only. Failures the model can act on (a refused address,
// a 404, a page that is not text, no API key) are error Results.
package web

import (
	_ "embed"
	"strings"
)

// Tool names, as the model sees them.
const (
	FetchName  = "web_fetch"
	SearchName = "web_search"
)

var (
	//go:embed web_fetch.md
	fetchDoc string
	//go:embed web_search.md
	searchDoc string
)

func doc(s string) string { return strings.TrimSpace(s) }
