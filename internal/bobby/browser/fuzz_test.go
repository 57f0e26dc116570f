package browser

import (
	"errors"
	"strings"
	"testing"
)

func FuzzTextMatch(f *testing.F) {
	f.Add("exact", "Hello world", "  Hello   world ")
	f.Add("contains", "lo wo", "Hello\nworld")
	f.Add("regex", `^\d+$`, "123")
	f.Add("regex", `(`, "")
	f.Add("fuzzy", "x", "x")
	f.Add("contains", "\xff\xfe", "\xff\xfe")
	f.Fuzz(func(t *testing.T, kind, value, subject string) {
		m, err := TextMatch{Kind: kind, Value: value}.Matcher()
		if err != nil {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("Matcher error %v is not ErrInvalidArgument", err)
			}
			return
		}
		got := m(subject)
		// exact implies contains, on the same normalisation.
		if kind == "exact" && got {
			c, _ := TextMatch{Kind: "contains", Value: value}.Matcher()
			if !c(subject) {
				t.Fatalf("exact %q matches %q but contains does not", value, subject)
			}
		}
	})
}

func FuzzNavigationPolicy(f *testing.F) {
	f.Add("https://example.com/a?b#c", "")
	f.Add("about:blank", "")
	f.Add("file:///etc/passwd", "file")
	f.Add("javascript:alert(1)", "javascript")
	f.Add("http://[::1]:80/", "")
	f.Add("%zz", "")
	f.Add("data:text/html,<script>", "data")
	f.Fuzz(func(t *testing.T, raw, allow string) {
		u, err := NavigationPolicy{AllowSchemes: strings.Split(allow, ",")}.Check(raw)
		if err != nil {
			if !errors.Is(err, ErrInvalidArgument) && !errors.Is(err, ErrPolicyDenied) {
				t.Fatalf("Check(%q) error %v is neither invalid nor denied", raw, err)
			}
			return
		}
		if strings.EqualFold(u.Scheme, "javascript") {
			t.Fatalf("Check(%q) allowed a javascript: url", raw)
		}
		if (u.Scheme == "http" || u.Scheme == "https") && u.Host == "" {
			t.Fatalf("Check(%q) allowed an http url without host", raw)
		}
	})
}

func FuzzParseFlag(f *testing.F) {
	f.Add("--headless")
	f.Add("--window-size=1,2")
	f.Add("-x")
	f.Add("--=v")
	f.Add("--")
	f.Fuzz(func(t *testing.T, flag string) {
		name, value, ok := parseFlag(flag)
		if !ok {
			return
		}
		if name == "" || !strings.HasPrefix(flag, "--") {
			t.Fatalf("parseFlag(%q) = %q, %v, ok", flag, name, value)
		}
		switch v := value.(type) {
		case bool:
			if !v || "--"+name != flag {
				t.Fatalf("parseFlag(%q) = %q, %v", flag, name, v)
			}
		case string:
			if "--"+name+"="+v != flag {
				t.Fatalf("parseFlag(%q) = %q, %q", flag, name, v)
			}
		}
	})
}

func TestHasArg(t *testing.T) {
	want := []byte("--user-data-dir=/tmp/p1")
	tests := []struct {
		cmdline string
		want    bool
	}{
		{"/usr/bin/chromium\x00--user-data-dir=/tmp/p1\x00about:blank", true},
		{"/usr/lib/chromium/chromium --type=renderer --user-data-dir=/tmp/p1 --no-sandbox", true},
		{"chromium --user-data-dir=/tmp/p1", true},
		{"chromium --user-data-dir=/tmp/p10 --x", false},
		{"chromium --user-data-dir=/tmp/p1x", false},
		{"chromium x--user-data-dir=/tmp/p1", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := hasArg([]byte(tt.cmdline), want); got != tt.want {
			t.Errorf("hasArg(%q) = %v, want %v", tt.cmdline, got, tt.want)
		}
	}
}
