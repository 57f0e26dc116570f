package browser

import "testing"

// TestCookieRulesForOtherEngines: the exported filter and cookie rules an
// engine without CDP cookies (Firefox) applies are Cookies' and
// SetCookies' own.
func TestCookieRulesForOtherEngines(t *testing.T) {
	sid := Cookie{Name: "sid", Domain: "shop.example", Path: "/account", Secure: true}
	for _, tt := range []struct {
		name string
		f    CookieFilter
		want bool
	}{
		{"empty filter", CookieFilter{}, true},
		{"name", CookieFilter{Name: "sid"}, true},
		{"other name", CookieFilter{Name: "theme"}, false},
		{"domain with a dot", CookieFilter{Domain: ".shop.example"}, true},
		{"url under the path", CookieFilter{URL: "https://shop.example/account/orders"}, true},
		{"url outside the path", CookieFilter{URL: "https://shop.example/cart"}, false},
		{"http url of a secure cookie", CookieFilter{URL: "http://shop.example/account"}, false},
	} {
		got, err := tt.f.Matches(sid)
		if err != nil || got != tt.want {
			t.Errorf("%s: Matches = %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
	if _, err := (CookieFilter{URL: "ftp://x"}).Matches(sid); err == nil {
		t.Error("an ftp filter url is accepted")
	}
	for _, tt := range []struct {
		name            string
		c               NewCookie
		domain, path    string
		secure, wantErr bool
	}{
		{"url", NewCookie{Name: "a", Value: "1", URL: "https://shop.example/account/orders"}, "shop.example", "/account", false, false},
		{"url at the root", NewCookie{Name: "a", Value: "1", URL: "http://127.0.0.1:8080"}, "127.0.0.1", "/", false, false},
		{"domain", NewCookie{Name: "a", Value: "1", Domain: "shop.example"}, "shop.example", "/", false, false},
		{"sameSite None is Secure", NewCookie{Name: "a", Value: "1", Domain: "shop.example", SameSite: "None"}, "shop.example", "/", true, false},
		{"neither url nor domain", NewCookie{Name: "a", Value: "1"}, "", "", false, true},
		{"bad name", NewCookie{Name: "a b", Value: "1", Domain: "x"}, "", "", false, true},
	} {
		d, p, s, err := tt.c.Resolve()
		if (err != nil) != tt.wantErr || (err == nil && (d != tt.domain || p != tt.path || s != tt.secure)) {
			t.Errorf("%s: Resolve = %q %q %v %v", tt.name, d, p, s, err)
		}
	}
}
