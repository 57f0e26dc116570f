// Package web holds the Cockpit, the embedded inspection application served
// at /dev: an HTML shell, plain ES modules and a stylesheet, with no build
// step and nothing fetched from elsewhere, so it works offline. It carries
// no runtime data or credentials; everything it shows it reads from the
// /v1/dev/* API after loading. Login is the small form that trades the
// inspect token for a session cookie when the daemon has one.
package web

import (
	"embed"
	"io/fs"
	"strings"
)

//go:embed cockpit
var files embed.FS

// Assets is the Cockpit's files by name (index.html, app.js, …).
var Assets, _ = fs.Sub(files, "cockpit")

// Index is the /dev page.
var Index, _ = fs.ReadFile(Assets, "index.html")

// Size is the Cockpit's embedded bytes, uncompressed.
func Size() int {
	n := 0
	_ = fs.WalkDir(Assets, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := fs.ReadFile(Assets, p)
			n += len(b)
		}
		return nil
	})
	return n
}

const login = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Delta Cockpit · sign in</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:14px/1.5 system-ui,sans-serif;background:#0f1115;color:#e6e6e6;display:grid;place-items:center;height:100vh;margin:0}
form{background:#181b22;padding:24px 28px;border-radius:8px;min-width:320px}h1{font-size:17px;margin:0 0 12px}
input{width:100%;box-sizing:border-box;padding:8px;margin:8px 0 12px;background:#0f1115;color:#e6e6e6;border:1px solid #333;border-radius:4px}
button{padding:7px 16px;background:#3b82f6;color:#fff;border:0;border-radius:4px}p.err{color:#f87171}</style></head>
<body><form method="post" action="/v1/dev/session"><h1>Delta Cockpit</h1>{{err}}
<label>Inspection token (DELTA_INSPECT_TOKEN)<input type="password" name="token" autocomplete="current-password" autofocus></label>
<button type="submit">Sign in</button></form></body></html>`

// Login is the sign-in page; failed adds a line saying the token was wrong.
func Login(failed bool) []byte {
	msg := ""
	if failed {
		msg = `<p class="err">That token is not the inspection token.</p>`
	}
	return []byte(strings.Replace(login, "{{err}}", msg, 1))
}
