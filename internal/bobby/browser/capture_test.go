package browser

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"image/png"
	"math"
	"testing"
)

func TestScreenshot(t *testing.T) {
	ctx := context.Background()
	p := pageAt(t, "/click.html")
	tests := []struct {
		name       string
		opts       ScreenshotOptions
		minW, minH int
		maxW, maxH int
	}{
		{"viewport", ScreenshotOptions{}, DefaultWindowWidth / 2, 300, DefaultWindowWidth, DefaultWindowHeight},
		{"full page", ScreenshotOptions{FullPage: true}, DefaultWindowWidth / 2, 1500, DefaultWindowWidth, MaxScreenshotHeight},
		{"element", ScreenshotOptions{Node: &NodeRef{Selector: "#btn"}}, 10, 5, 200, 60},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shot, err := p.Screenshot(ctx, tt.opts)
			if err != nil {
				t.Fatalf("Screenshot: %v", err)
			}
			cfg, err := png.DecodeConfig(bytes.NewReader(shot.PNG))
			if err != nil {
				t.Fatalf("not a PNG: %v", err)
			}
			sum := sha256.Sum256(shot.PNG)
			if shot.SHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("sha256 = %s, want the digest of the bytes", shot.SHA256)
			}
			if cfg.Width < tt.minW || cfg.Width > tt.maxW || cfg.Height < tt.minH || cfg.Height > tt.maxH {
				t.Errorf("image %dx%d, want within %dx%d..%dx%d", cfg.Width, cfg.Height, tt.minW, tt.minH, tt.maxW, tt.maxH)
			}
			if math.Abs(float64(cfg.Width)-shot.Width) > 1.5 || math.Abs(float64(cfg.Height)-shot.Height) > 1.5 {
				t.Errorf("reported %gx%g, image is %dx%d", shot.Width, shot.Height, cfg.Width, cfg.Height)
			}
		})
	}
	if _, err := p.Screenshot(ctx, ScreenshotOptions{FullPage: true, Node: &NodeRef{Selector: "#btn"}}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("fullPage+node = %v, want ErrInvalidArgument", err)
	}
	if _, err := p.Screenshot(ctx, ScreenshotOptions{Node: &NodeRef{Selector: "#gone"}}); !errors.Is(err, ErrNotInteractable) {
		t.Errorf("screenshot of a hidden element = %v, want ErrNotInteractable", err)
	}
}

func TestEvaluate(t *testing.T) {
	ctx := context.Background()
	p := pageAt(t, "/home.html")
	tests := []struct {
		expr string
		want string
	}{
		{`1 + 2`, `3`},
		{`({a: [1, "x", null], b: true})`, `{"a":[1,"x",null],"b":true}`},
		{`document.title`, `"Home"`},
		{`undefined`, `null`},
		{`NaN`, `"NaN"`},
		{`-Infinity`, `"-Infinity"`},
		{`10n ** 20n`, `"100000000000000000000n"`},
		{`new Promise(r => setTimeout(() => r("later"), 50))`, `"later"`},
	}
	for _, tt := range tests {
		got, err := p.Evaluate(ctx, tt.expr)
		if err != nil {
			t.Errorf("Evaluate(%s): %v", tt.expr, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("Evaluate(%s) = %s, want %s", tt.expr, got, tt.want)
		}
	}
	var ee *EvalError
	if _, err := p.Evaluate(ctx, `throw new TypeError("nope")`); !errors.As(err, &ee) || ee.Text != "TypeError: nope" {
		t.Errorf("throwing Evaluate = %v, want EvalError TypeError: nope", err)
	}
	if _, err := p.Evaluate(ctx, `Promise.reject(new Error("async nope"))`); !errors.As(err, &ee) {
		t.Errorf("rejected promise = %v, want EvalError", err)
	}
	if _, err := p.Evaluate(ctx, `{{{`); !errors.As(err, &ee) {
		t.Errorf("syntax error = %v, want EvalError", err)
	}
	if _, err := p.Evaluate(ctx, "  "); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("empty expression = %v, want ErrInvalidArgument", err)
	}
}

func TestInspect(t *testing.T) {
	ctx := context.Background()
	p := pageAt(t, "/form.html")
	eval[any](t, p, `document.getElementById("pw").value = "typed-secret"; null`)

	pw, err := p.Inspect(ctx, NodeRef{Selector: "#pw"})
	if err != nil {
		t.Fatal(err)
	}
	if pw.Tag != "input" || pw.Attributes["type"] != "password" || pw.Attributes["name"] != "pw" {
		t.Errorf("password input = %+v", pw)
	}
	if v, ok := pw.Attributes["value"]; !ok || v != "" {
		t.Errorf("password value attribute = %q (present %v), want present and blank", v, ok)
	}
	if pw.Text != "" || !pw.Visible || !pw.InViewport || pw.Box == nil || pw.Box.Width <= 0 || pw.BackendNodeID == 0 {
		t.Errorf("password input info = %+v", pw)
	}

	name, err := p.Inspect(ctx, NodeRef{Selector: "#name"})
	if err != nil {
		t.Fatal(err)
	}
	if name.Attributes["value"] != "old" {
		t.Errorf("text input value attribute = %q, want old", name.Attributes["value"])
	}
	byBackend, err := p.Inspect(ctx, NodeRef{BackendNodeID: name.BackendNodeID})
	if err != nil || byBackend.Attributes["id"] != "name" {
		t.Errorf("Inspect by backend node = %+v, %v", byBackend, err)
	}

	open(t, p, "/click.html")
	gone, err := p.Inspect(ctx, NodeRef{Selector: "#gone"})
	if err != nil {
		t.Fatal(err)
	}
	if gone.Visible || gone.Box != nil {
		t.Errorf("display:none button = %+v, want invisible with no box", gone)
	}
	far, err := p.Inspect(ctx, NodeRef{Selector: "#far"})
	if err != nil {
		t.Fatal(err)
	}
	if !far.Visible || far.InViewport || far.Text != "Far below" {
		t.Errorf("below-the-fold button = %+v, want visible, outside the viewport", far)
	}
}
