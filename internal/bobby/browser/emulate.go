package browser

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	// Timezones are checked by name; the embedded database makes that
	// work on hosts without /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// Viewport is an emulated screen: CSS pixels, scale and mobile mode.
type Viewport struct {
	Width             int64   `json:"width"`
	Height            int64   `json:"height"`
	DeviceScaleFactor float64 `json:"deviceScaleFactor,omitempty"`
	Mobile            bool    `json:"mobile,omitempty"`
}

// Emulation is what Emulate changes on one page. Zero fields leave that
// aspect as it is; Device fills Viewport, UserAgent and Touch, and explicit
// fields override the device's.
type Emulation struct {
	Device    string    `json:"device,omitempty"`
	Viewport  *Viewport `json:"viewport,omitempty"`
	UserAgent string    `json:"userAgent,omitempty"`
	// Locale is a BCP 47 tag such as de-DE: navigator.language, Intl and
	// the Accept-Language header follow it.
	Locale string `json:"locale,omitempty"`
	// Timezone is an IANA zone such as Europe/Berlin.
	Timezone string `json:"timezone,omitempty"`
	Touch    *bool  `json:"touch,omitempty"`
}

// IsZero reports whether the emulation changes nothing.
func (e Emulation) IsZero() bool {
	return e.Device == "" && e.Viewport == nil && e.UserAgent == "" && e.Locale == "" && e.Timezone == "" && e.Touch == nil
}

// Device is a named emulation preset.
type Device struct {
	Name      string
	Viewport  Viewport
	UserAgent string
	Touch     bool
}

// Devices are the presets Emulate knows, by name (case-insensitive).
var Devices = []Device{
	{"Desktop", Viewport{1280, 800, 1, false}, "", false},
	{"iPhone 13", Viewport{390, 844, 3, true},
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1", true},
	{"Pixel 7", Viewport{412, 915, 2.625, true},
		"Mozilla/5.0 (Linux; Android 14; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36", true},
	{"iPad", Viewport{820, 1180, 2, true},
		"Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1", true},
}

// DeviceNames lists the preset names.
func DeviceNames() []string {
	out := make([]string, len(Devices))
	for i, d := range Devices {
		out[i] = d.Name
	}
	return out
}

// MaxViewportSide bounds an emulated viewport's width and height.
const MaxViewportSide = 10000

var localeTag = regexp.MustCompile(`^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}$`)

// EmulationState is what a page emulates after Emulate: the merged
// settings, every one of them, so a caller sees the whole effect.
type EmulationState struct {
	Device    string    `json:"device,omitempty"`
	Viewport  *Viewport `json:"viewport,omitempty"`
	UserAgent string    `json:"userAgent,omitempty"`
	Locale    string    `json:"locale,omitempty"`
	Timezone  string    `json:"timezone,omitempty"`
	Touch     bool      `json:"touch"`
}

// resolve merges a device preset and the explicit fields and checks them.
func (e Emulation) resolve() (Emulation, error) {
	out := e
	if e.Device != "" {
		i := slices.IndexFunc(Devices, func(d Device) bool { return strings.EqualFold(d.Name, strings.TrimSpace(e.Device)) })
		if i < 0 {
			return out, invalidf("device %q is unknown: want one of %s", e.Device, strings.Join(DeviceNames(), ", "))
		}
		d := Devices[i]
		out.Device = d.Name
		if out.Viewport == nil {
			v := d.Viewport
			out.Viewport = &v
		}
		if out.UserAgent == "" {
			out.UserAgent = d.UserAgent
		}
		if out.Touch == nil {
			out.Touch = &d.Touch
		}
	}
	if v := out.Viewport; v != nil {
		if v.Width < 1 || v.Height < 1 || v.Width > MaxViewportSide || v.Height > MaxViewportSide {
			return out, invalidf("viewport %dx%d: width and height must be 1..%d", v.Width, v.Height, MaxViewportSide)
		}
		if v.DeviceScaleFactor < 0 || v.DeviceScaleFactor > 10 {
			return out, invalidf("deviceScaleFactor %g: want 0 (default) to 10", v.DeviceScaleFactor)
		}
	}
	if out.Locale != "" && !localeTag.MatchString(out.Locale) {
		return out, invalidf("locale %q is not a BCP 47 tag like en-US", out.Locale)
	}
	if strings.ContainsAny(out.UserAgent, "\r\n") {
		return out, invalidf("userAgent holds a line break")
	}
	return out, nil
}

// Emulate changes how the page presents itself: viewport and screen
// metrics, touch, user agent, locale and timezone. The settings hold for
// this page until it closes (popups it opens do not inherit them) and merge
// with earlier Emulate calls. The page's layout may change at once, so
// callers should treat earlier snapshots and retained context of the page as
// stale. A zero Emulation is refused.
func (p *Page) Emulate(ctx context.Context, e Emulation) (EmulationState, error) {
	if e.IsZero() {
		return EmulationState{}, fmt.Errorf("emulate: %w", invalidf("give at least one of device, viewport, userAgent, locale, timezone, touch"))
	}
	e, err := e.resolve()
	if err != nil {
		return EmulationState{}, fmt.Errorf("emulate: %w", err)
	}
	p.mu.Lock()
	st := p.emulation
	p.mu.Unlock()
	err = p.Do(ctx, func(pctx context.Context) error {
		return applyEmulation(pctx, chromedp.FromContext(pctx).Target, e, &st)
	})
	if err != nil {
		return EmulationState{}, fmt.Errorf("emulate: %w", err)
	}
	p.mu.Lock()
	p.emulation = st
	p.mu.Unlock()
	return st, nil
}

// Emulation returns what the page emulates (zero when nothing).
func (p *Page) Emulation() EmulationState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.emulation
}

// applyEmulation sends the overrides of e and records them in st.
func applyEmulation(ctx context.Context, t *chromedp.Target, e Emulation, st *EmulationState) error {
	if e.Device != "" {
		st.Device = e.Device
	}
	if v := e.Viewport; v != nil {
		dsf := v.DeviceScaleFactor
		if dsf == 0 {
			dsf = 1
		}
		if _, err := cdp.Call(ctx, t, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
			Width: v.Width, Height: v.Height, DeviceScaleFactor: dsf, Mobile: v.Mobile,
			ScreenWidth: v.Width, ScreenHeight: v.Height,
		}); err != nil {
			return fmt.Errorf("viewport: %w", err)
		}
		vv := *v
		vv.DeviceScaleFactor = dsf
		st.Viewport = &vv
	}
	if e.Touch != nil {
		params := emulation.SetTouchEmulationEnabledParams{Enabled: *e.Touch}
		if *e.Touch {
			params.MaxTouchPoints = 5
		}
		if _, err := cdp.Call(ctx, t, emulation.SetTouchEmulationEnabled, params); err != nil {
			return fmt.Errorf("touch: %w", err)
		}
		st.Touch = *e.Touch
	}
	if e.UserAgent != "" || e.Locale != "" {
		ua := e.UserAgent
		if ua == "" {
			ua = st.UserAgent
		}
		if ua == "" {
			if err := evalValue(ctx, t, "navigator.userAgent", &ua); err != nil {
				return fmt.Errorf("read user agent: %w", err)
			}
		}
		locale := e.Locale
		if locale == "" {
			locale = st.Locale
		}
		params := emulation.SetUserAgentOverrideParams{UserAgent: ua}
		if locale != "" {
			params.AcceptLanguage = acceptLanguage(locale)
		}
		if _, err := cdp.Call(ctx, t, emulation.SetUserAgentOverride, params); err != nil {
			return fmt.Errorf("user agent: %w", err)
		}
		st.UserAgent = ua
	}
	if e.Locale != "" {
		if err := setLocale(ctx, t, e.Locale); err != nil {
			return err
		}
		st.Locale = e.Locale
	}
	if e.Timezone != "" {
		if _, err := time.LoadLocation(e.Timezone); err != nil || e.Timezone == "Local" || e.Timezone == "" {
			return invalidf("timezone %q is not an IANA zone (e.g. Europe/Berlin)", e.Timezone)
		}
		if _, err := cdp.Call(ctx, t, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: e.Timezone}); err != nil {
			if isProtocolError(err) {
				return invalidf("timezone %q is not an IANA zone the browser knows (e.g. Europe/Berlin)", e.Timezone)
			}
			return fmt.Errorf("timezone: %w", err)
		}
		st.Timezone = e.Timezone
	}
	return nil
}

// setLocale overrides the Intl locale. Chromium keeps one override per
// renderer and refuses a second ("another locale override is already in
// effect", also when a popup inherits its opener's), so an existing one is
// cleared first.
func setLocale(ctx context.Context, t *chromedp.Target, locale string) error {
	_, err := cdp.Call(ctx, t, emulation.SetLocaleOverride, emulation.SetLocaleOverrideParams{Locale: locale})
	if err != nil && isProtocolError(err) {
		if _, cerr := cdp.Call(ctx, t, emulation.SetLocaleOverride, emulation.SetLocaleOverrideParams{}); cerr == nil {
			_, err = cdp.Call(ctx, t, emulation.SetLocaleOverride, emulation.SetLocaleOverrideParams{Locale: locale})
		}
	}
	if err != nil {
		if isProtocolError(err) {
			return invalidf("locale %q: the browser refused it (%v)", locale, err)
		}
		return fmt.Errorf("locale: %w", err)
	}
	return nil
}

// acceptLanguage builds an Accept-Language value from a locale: "de-DE"
// → "de-DE,de" (Chromium derives navigator.languages from it, so it takes
// no q-values).
func acceptLanguage(locale string) string {
	lang, _, found := strings.Cut(locale, "-")
	if !found {
		return locale
	}
	return locale + "," + lang
}
