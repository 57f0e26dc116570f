// Package web holds the embedded inspection page served at /dev: a single
// static file that follows /v1/dev/stream in the browser. It carries no
// runtime data or credentials; everything it shows it reads from the API.
package web

import _ "embed"

// Index is the /dev page.
//
//go:embed index.html
var Index []byte
