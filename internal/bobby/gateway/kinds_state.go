package gateway

import (
	"context"

	"github.com/deltaharness/delta/internal/bobby/browser"
)

type emulateArgs struct {
	browser.Emulation
}

func runEmulate(ctx context.Context, x *execCtx, in emulateArgs) (map[string]any, map[string]any, error) {
	st, err := x.page.Emulate(ctx, in.Emulation)
	if err != nil {
		return nil, nil, err
	}
	// Emulate reflows the page: the pipeline invalidates its retained
	// context (the kind mutates), and says so.
	return map[string]any{"emulation": st, "retainedContext": "invalidated", "page": pageState(x.page)}, nil, nil
}

type cookieFilterArgs struct {
	URL    string `json:"url"`
	Name   string `json:"name"`
	Domain string `json:"domain"`
}

func (a cookieFilterArgs) filter() browser.CookieFilter {
	return browser.CookieFilter{URL: a.URL, Name: a.Name, Domain: a.Domain}
}

func runCookieGet(ctx context.Context, x *execCtx, in cookieFilterArgs) (map[string]any, map[string]any, error) {
	cookies, truncated, err := x.es.Cookies(ctx, in.filter())
	if err != nil {
		return nil, nil, err
	}
	if cookies == nil {
		cookies = []browser.Cookie{}
	}
	return map[string]any{"cookies": cookies, "count": len(cookies), "truncated": truncated}, nil, nil
}

type cookieSetArgs struct {
	Cookies []browser.NewCookie `json:"cookies"`
}

func runCookieSet(ctx context.Context, x *execCtx, in cookieSetArgs) (map[string]any, map[string]any, error) {
	if err := x.es.SetCookies(ctx, in.Cookies); err != nil {
		return nil, nil, err
	}
	names := make([]string, len(in.Cookies))
	for i, c := range in.Cookies {
		names[i] = c.Name
	}
	// Values are not echoed: a cookie may be a credential.
	return map[string]any{"set": len(in.Cookies), "names": names}, nil, nil
}

type cookieDeleteArgs struct {
	cookieFilterArgs
	All bool `json:"all"`
}

func runCookieDelete(ctx context.Context, x *execCtx, in cookieDeleteArgs) (map[string]any, map[string]any, error) {
	f := in.filter()
	if f == (browser.CookieFilter{}) && !in.All {
		return nil, nil, errorf(CodeInvalidRequest, "give name, domain or url, or all:true to delete every cookie of the session")
	}
	if in.All && f != (browser.CookieFilter{}) {
		return nil, nil, errorf(CodeInvalidRequest, "all:true deletes every cookie: give it without name, domain or url")
	}
	n, err := x.es.DeleteCookies(ctx, f)
	if err != nil {
		return nil, nil, err
	}
	return map[string]any{"deleted": n}, nil, nil
}

type networkLogArgs struct {
	browser.NetQuery
}

func runNetworkLog(ctx context.Context, x *execCtx, in networkLogArgs) (map[string]any, map[string]any, error) {
	log, err := x.page.NetLog(ctx, in.NetQuery)
	if err != nil {
		return nil, nil, err
	}
	return map[string]any{"network": log}, nil, nil
}
