package main

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// forbidden are the packages delta must not link: bobby's browser stack
// (chromedp and its protocol packages), bobby's own packages, the test
// helpers of the model wires (`delta demo` uses model/scripted instead),
// and what made the binary grow by a quarter unnoticed: gRPC (the OTLP
// lane posts over HTTP; the SDK's otlptracehttp client and the OTLP
// collector proto package link gRPC, its gateway and x/net/trace) and
// text/template, whose method lookup by name makes the linker keep every
// exported method of every linked type (TestMethodsDeadCodeEliminated
// checks the link itself). A path ending in "/" bans everything under it.
var forbidden = []string{
	"github.com/chromedp/",
	"github.com/deltaharness/delta/internal/bobby/", // every package of bobby's
	"github.com/deltaharness/delta/internal/model/modeltest",
	"github.com/deltaharness/delta/internal/collector/pgtest",
	"github.com/BurntSushi/toml", // bobby's TOML parser (internal/bobby/config)
	"google.golang.org/grpc",
	"github.com/grpc-ecosystem/",
	"golang.org/x/net/trace",
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp",
	"go.opentelemetry.io/proto/otlp/collector/", // its packages hold the gRPC service stubs
	"text/template",                             // html/template too: it is built on it
	"html/template",
}

// forbiddenExact are single packages delta must not link, though it
// links others under the same path: openai-go's root package (its
// generated types, ~200 init-time registrations and ~4 MB of JSON code
// were 15 MB of a 50 MB binary; the Chat Completions wire posts through
// the responses service instead) and its realtime and live packages,
// which only the root imports. The SDK's option, responses and internal
// packages stay.
var forbiddenExact = []string{
	"github.com/openai/openai-go/v3",
	"github.com/openai/openai-go/v3/realtime",
	"github.com/openai/openai-go/v3/live",
}

// TestDeps keeps delta free of bobby and of test-only packages.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	for _, bad := range forbidden {
		var hits []string
		for _, d := range deps {
			if d == bad || strings.HasPrefix(d, strings.TrimSuffix(bad, "/")+"/") {
				hits = append(hits, d)
			}
		}
		if len(hits) > 0 {
			t.Errorf("delta links %s (%d packages; `go mod why %s` shows the path)", bad, len(hits), hits[0])
		}
	}
	for _, bad := range forbiddenExact {
		if slices.Contains(deps, bad) {
			t.Errorf("delta links %s (`go mod why %s` shows the path)", bad, bad)
		}
	}
	for _, need := range []string{
		"github.com/deltaharness/delta/internal/store",
		"github.com/deltaharness/delta/internal/model/scripted",
		"modernc.org/sqlite",
		"go.opentelemetry.io/otel/exporters/otlp/otlptrace",
		"github.com/openai/openai-go/v3/responses",
	} {
		if !slices.Contains(deps, need) {
			t.Errorf("delta does not link %s (the guard is looking at the wrong package)", need)
		}
	}
}

// TestMethodsDeadCodeEliminated links delta and fails when anything in it
// calls reflect's Method or MethodByName with a name the linker cannot
// see: the linker then keeps every exported method of every reachable
// type (text/template did this, 12 MB of a 62 MB binary). The line names
// the function that does it; `go build -ldflags=-dumpdep` shows the path.
func TestMethodsDeadCodeEliminated(t *testing.T) {
	if testing.Short() {
		t.Skip("links the binary")
	}
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-dumpdep", "-o", filepath.Join(t.TempDir(), "delta"), ".")
	out, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var hits []string
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.Contains(line, "<ReflectMethod>") && len(hits) < 5 {
			hits = append(hits, line)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("go build -ldflags=-dumpdep: %v", err)
	}
	if len(hits) > 0 {
		t.Errorf("delta calls reflect method lookup by a dynamic name, so no unused method is dropped:\n%s", strings.Join(hits, "\n"))
	}
}
