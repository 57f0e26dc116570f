package browser

import (
	"context"
	"errors"
	"hash/fnv"
	"regexp"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// Persona is one coherent browser identity for the fingerprint policy: a
// user agent whose operating system matches the platform, the language
// headers and the Intl locale, a timezone that fits the locale, and a
// common screen of that platform.
type Persona struct {
	Name     string   `json:"name"`
	OS       string   `json:"os"` // user-agent OS token
	Platform string   `json:"platform"`
	UAPlat   string   `json:"-"` // Sec-CH-UA-Platform
	Locale   string   `json:"locale"`
	Timezone string   `json:"timezone"`
	Viewport Viewport `json:"viewport"`
}

// Personas are the identities a fingerprinted session can take; the
// profile name picks one, so a profile always presents the same one.
var Personas = []Persona{
	{"windows-en-us", "Windows NT 10.0; Win64; x64", "Win32", "Windows", "en-US", "America/New_York", Viewport{1536, 864, 1.25, false}},
	{"mac-en-gb", "Macintosh; Intel Mac OS X 10_15_7", "MacIntel", "macOS", "en-GB", "Europe/London", Viewport{1440, 900, 2, false}},
	{"windows-de-de", "Windows NT 10.0; Win64; x64", "Win32", "Windows", "de-DE", "Europe/Berlin", Viewport{1920, 1080, 1, false}},
	{"linux-en-us", "X11; Linux x86_64", "Linux x86_64", "Linux", "en-US", "America/Chicago", Viewport{1366, 768, 1, false}},
}

// PersonaFor returns the persona of a profile name.
func PersonaFor(profile string) Persona {
	h := fnv.New32a()
	h.Write([]byte(profile))
	return Personas[h.Sum32()%uint32(len(Personas))]
}

// Persona returns the identity the session presents when its execution
// policy has Fingerprint, and false otherwise.
func (s *Session) Persona() (Persona, bool) {
	if !s.policy.Fingerprint {
		return Persona{}, false
	}
	return PersonaFor(s.Profile), true
}

var chromeMajor = regexp.MustCompile(`Chrome/(\d+)`)

// userAgent builds the persona's user agent on the running Chrome's major
// version, in the reduced form current Chrome sends (minor parts zero), and
// without the "Headless" marker.
func (ps Persona) userAgent(product string) (ua, major string) {
	major = "140"
	if m := chromeMajor.FindStringSubmatch(product); m != nil {
		major = m[1]
	}
	return "Mozilla/5.0 (" + ps.OS + ") AppleWebKit/537.36 (KHTML, like Gecko) Chrome/" + major + ".0.0.0 Safari/537.36", major
}

// applyFingerprint gives a new page of a fingerprinted session its
// persona: user agent and client hints, navigator.platform, language
// headers and Intl locale, timezone, and viewport and screen metrics. It
// runs when the page attaches, so every page of the session (popups
// included) agrees. A popup's very first request leaves before the
// overrides exist.
func (p *Page) applyFingerprint(pctx context.Context) error {
	ps, ok := p.session.Persona()
	if !ok {
		return nil
	}
	c := chromedp.FromContext(pctx)
	ver, err := chromedp.CallBrowser(pctx, browser.GetVersion, cdp.Empty{})
	if err != nil {
		return err
	}
	ua, major := ps.userAgent(ver.Product)
	if _, err := cdp.Call(pctx, c.Target, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{
		UserAgent:      ua,
		AcceptLanguage: acceptLanguage(ps.Locale),
		Platform:       ps.Platform,
		UserAgentMetadata: &emulation.UserAgentMetadata{
			Brands: []*emulation.UserAgentBrandVersion{
				{Brand: "Chromium", Version: major}, {Brand: "Google Chrome", Version: major}, {Brand: "Not=A?Brand", Version: "24"},
			},
			Platform: ps.UAPlat, PlatformVersion: "10.0.0", Architecture: "x86", Model: "", Mobile: false,
		},
	}); err != nil {
		return err
	}
	if err := setLocale(pctx, c.Target, ps.Locale); err != nil {
		// A popup shares its opener's renderer, whose locale override
		// (the same persona's) Chromium will not let a second session
		// replace; it is already the right one.
		if !p.popup || !errors.Is(err, ErrInvalidArgument) {
			return err
		}
	}
	v := ps.Viewport
	st := EmulationState{UserAgent: ua, Locale: ps.Locale}
	if err := applyEmulation(pctx, c.Target, Emulation{Viewport: &v, Timezone: ps.Timezone}, &st); err != nil {
		return err
	}
	p.mu.Lock()
	p.emulation = st
	p.mu.Unlock()
	return nil
}
