// Package pagetest holds the fixture pages that more than one of bobby's
// test suites drive — the signup form and the welcome page it posts to —
// as one embedded copy, and serves them beside a suite's own testdata;
// Slow is the slow endpoint those suites share.
package pagetest

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"
	"time"
)

//go:embed pages
var embedded embed.FS

// Pages are the shared fixture pages (signup.html, welcome.html).
var Pages = mustSub(embedded, "pages")

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err)
	}
	return sub
}

// Dir is http.Dir(dir) with the shared pages behind it: a name dir has no
// file for is looked up among Pages, so a suite keeps only its own pages.
func Dir(dir string) http.FileSystem {
	return overlay{own: http.Dir(dir), shared: http.FS(Pages)}
}

type overlay struct{ own, shared http.FileSystem }

func (o overlay) Open(name string) (http.File, error) {
	f, err := o.own.Open(name)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return f, err
	}
	return o.shared.Open(name)
}

// Slow answers "slow done" after ?ms= milliseconds (at most 5 s), or
// nothing when the request or stop ends first, so a slow request never
// holds up the server's Close.
func Slow(stop <-chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ms, _ := strconv.Atoi(r.URL.Query().Get("ms"))
		select {
		case <-time.After(time.Duration(min(ms, 5000)) * time.Millisecond):
		case <-r.Context().Done():
			return
		case <-stop:
			return
		}
		fmt.Fprint(w, "slow done")
	}
}
