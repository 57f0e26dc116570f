package bidi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// SessionCapabilities is what session.new reports of the browser.
type SessionCapabilities struct {
	BrowserName    string `json:"browserName"`
	BrowserVersion string `json:"browserVersion"`
	PlatformName   string `json:"platformName"`
	UserAgent      string `json:"userAgent"`
}

// NewSession opens the BiDi session every other command needs. Prompts
// (alert, confirm, beforeunload) are left open for the client to handle
// rather than dismissed by the browser, so none is answered unseen.
func (c *Conn) NewSession(ctx context.Context) (SessionCapabilities, error) {
	var out struct {
		Capabilities SessionCapabilities `json:"capabilities"`
	}
	params := map[string]any{"capabilities": map[string]any{
		"alwaysMatch": map[string]any{"unhandledPromptBehavior": map[string]string{"default": "ignore"}},
	}}
	err := c.Call(ctx, "session.new", params, &out)
	return out.Capabilities, err
}

// Subscribe subscribes the session to events (module names such as "log"
// or event names such as "browsingContext.load"), for the given contexts or,
// with none, all of them. It returns the subscription id.
func (c *Conn) Subscribe(ctx context.Context, events []string, contexts ...string) (string, error) {
	p := map[string]any{"events": events}
	if len(contexts) > 0 {
		p["contexts"] = contexts
	}
	var out struct {
		Subscription string `json:"subscription"`
	}
	err := c.Call(ctx, "session.subscribe", p, &out)
	return out.Subscription, err
}

// CreateUserContext makes an isolated user context: its own cookies,
// storage and cache, like a Chromium browser context.
func (c *Conn) CreateUserContext(ctx context.Context) (string, error) {
	var out struct {
		UserContext string `json:"userContext"`
	}
	err := c.Call(ctx, "browser.createUserContext", nil, &out)
	return out.UserContext, err
}

// RemoveUserContext closes a user context and every tab in it.
func (c *Conn) RemoveUserContext(ctx context.Context, userContext string) error {
	return c.Call(ctx, "browser.removeUserContext", map[string]string{"userContext": userContext}, nil)
}

// CreateTab opens a background tab in userContext ("" = the default one)
// and returns its browsing context id.
func (c *Conn) CreateTab(ctx context.Context, userContext string) (string, error) {
	p := map[string]any{"type": "tab", "background": true}
	if userContext != "" {
		p["userContext"] = userContext
	}
	var out struct {
		Context string `json:"context"`
	}
	err := c.Call(ctx, "browsingContext.create", p, &out)
	return out.Context, err
}

// CloseContext closes the browsing context bc without running beforeunload.
func (c *Conn) CloseContext(ctx context.Context, bc string) error {
	return c.Call(ctx, "browsingContext.close", map[string]string{"context": bc}, nil)
}

// ReadyState is how far Navigate waits: "none", "interactive" or "complete".
type ReadyState string

// The ready states BiDi knows.
const (
	WaitNone        ReadyState = "none"
	WaitInteractive ReadyState = "interactive"
	WaitComplete    ReadyState = "complete"
)

// Navigation is what browsingContext.navigate answered.
type Navigation struct {
	Navigation string `json:"navigation"`
	URL        string `json:"url"`
}

// Navigate loads url in the browsing context bc and waits as wait says.
func (c *Conn) Navigate(ctx context.Context, bc, url string, wait ReadyState) (Navigation, error) {
	var out Navigation
	err := c.Call(ctx, "browsingContext.navigate", map[string]string{"context": bc, "url": url, "wait": string(wait)}, &out)
	return out, err
}

// Info is one browsing context of the tree.
type Info struct {
	Context     string `json:"context"`
	URL         string `json:"url"`
	UserContext string `json:"userContext"`
	Parent      string `json:"parent"`
	Children    []Info `json:"children"`
}

// Tree lists the top-level browsing contexts with their frames.
func (c *Conn) Tree(ctx context.Context) ([]Info, error) {
	var out struct {
		Contexts []Info `json:"contexts"`
	}
	err := c.Call(ctx, "browsingContext.getTree", nil, &out)
	return out.Contexts, err
}

// Screenshot captures bc's viewport as PNG bytes.
func (c *Conn) Screenshot(ctx context.Context, bc string) ([]byte, error) {
	var out struct {
		Data string `json:"data"`
	}
	if err := c.Call(ctx, "browsingContext.captureScreenshot", map[string]string{"context": bc}, &out); err != nil {
		return nil, err
	}
	b, err := base64.StdEncoding.DecodeString(out.Data)
	if err != nil {
		return nil, fmt.Errorf("bidi browsingContext.captureScreenshot: decode: %w", err)
	}
	return b, nil
}

// SetViewport sets bc's viewport in CSS pixels.
func (c *Conn) SetViewport(ctx context.Context, bc string, width, height int) error {
	return c.Call(ctx, "browsingContext.setViewport", map[string]any{
		"context": bc, "viewport": map[string]int{"width": width, "height": height},
	}, nil)
}

// HandlePrompt accepts or dismisses the open prompt of bc; text is
// typed into a prompt() first when not empty.
func (c *Conn) HandlePrompt(ctx context.Context, bc string, accept bool, text string) error {
	p := map[string]any{"context": bc, "accept": accept}
	if text != "" {
		p["userText"] = text
	}
	return c.Call(ctx, "browsingContext.handleUserPrompt", p, nil)
}

// RemoteValue is a value serialized by the browser: Type is "string",
// "number", "boolean", "null", "undefined", "array", "object", "node", …
// and Value its payload.
type RemoteValue struct {
	Type     string          `json:"type"`
	Value    json.RawMessage `json:"value,omitempty"`
	Handle   string          `json:"handle,omitempty"`
	SharedID string          `json:"sharedId,omitempty"`
}

// ScriptError is a script that threw: Text is the exception's message.
type ScriptError struct {
	Text string
}

func (e *ScriptError) Error() string { return "script threw: " + e.Text }

type evalResult struct {
	Type             string      `json:"type"` // success | exception
	Result           RemoteValue `json:"result"`
	ExceptionDetails struct {
		Text string `json:"text"`
	} `json:"exceptionDetails"`
}

func (r evalResult) value() (RemoteValue, error) {
	if r.Type == "exception" {
		return RemoteValue{}, &ScriptError{Text: r.ExceptionDetails.Text}
	}
	return r.Result, nil
}

// Evaluate runs expression in bc's page realm, awaiting a promise it
// returns. A thrown exception is a *ScriptError.
func (c *Conn) Evaluate(ctx context.Context, bc, expression string) (RemoteValue, error) {
	var out evalResult
	err := c.Call(ctx, "script.evaluate", map[string]any{
		"expression": expression, "target": map[string]string{"context": bc},
		"awaitPromise": true, "userActivation": true,
	}, &out)
	if err != nil {
		return RemoteValue{}, err
	}
	return out.value()
}

// CallFunction calls the function declaration fn in bc's page realm
// with args (Go values, serialized as BiDi local values: strings, numbers,
// booleans, nil, slices and string-keyed maps), awaiting a returned promise.
func (c *Conn) CallFunction(ctx context.Context, bc, fn string, args ...any) (RemoteValue, error) {
	return c.CallFunctionIn(ctx, bc, "", fn, args...)
}

// CallFunctionIn is CallFunction in the named sandbox of bc ("" = the page
// realm): an isolated realm over the same DOM whose globals page scripts
// neither see nor replace. A sandbox lives as long as its document.
func (c *Conn) CallFunctionIn(ctx context.Context, bc, sandbox, fn string, args ...any) (RemoteValue, error) {
	local := make([]any, len(args))
	for i, a := range args {
		v, err := LocalValue(a)
		if err != nil {
			return RemoteValue{}, fmt.Errorf("bidi script.callFunction: argument %d: %w", i, err)
		}
		local[i] = v
	}
	target := map[string]string{"context": bc}
	if sandbox != "" {
		target["sandbox"] = sandbox
	}
	var out evalResult
	err := c.Call(ctx, "script.callFunction", map[string]any{
		"functionDeclaration": fn, "arguments": local, "target": target,
		"awaitPromise": true, "userActivation": true,
	}, &out)
	if err != nil {
		return RemoteValue{}, err
	}
	return out.value()
}

// LocalValue serializes a Go value as a BiDi local value.
func LocalValue(v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return map[string]string{"type": "null"}, nil
	case string:
		return map[string]any{"type": "string", "value": x}, nil
	case bool:
		return map[string]any{"type": "boolean", "value": x}, nil
	case int:
		return map[string]any{"type": "number", "value": x}, nil
	case int64:
		return map[string]any{"type": "number", "value": x}, nil
	case float64:
		return map[string]any{"type": "number", "value": x}, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			lv, err := LocalValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = lv
		}
		return map[string]any{"type": "array", "value": out}, nil
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = map[string]any{"type": "string", "value": e}
		}
		return map[string]any{"type": "array", "value": out}, nil
	case map[string]any:
		pairs := make([]any, 0, len(x))
		for k, e := range x {
			lv, err := LocalValue(e)
			if err != nil {
				return nil, err
			}
			pairs = append(pairs, []any{k, lv})
		}
		return map[string]any{"type": "object", "value": pairs}, nil
	default:
		return nil, fmt.Errorf("cannot serialize %T as a BiDi local value", v)
	}
}

// Decode turns a remote value into plain Go values: strings, float64,
// bool, nil (null and undefined), []any and map[string]any (object and map
// keys that are strings). Nodes, functions and other handles-only values
// decode as nil with no error: a page can return anything.
func (v RemoteValue) Decode() (any, error) {
	switch v.Type {
	case "null", "undefined":
		return nil, nil
	case "string", "boolean":
		var out any
		if err := json.Unmarshal(v.Value, &out); err != nil {
			return nil, fmt.Errorf("bidi: %s value: %w", v.Type, err)
		}
		return out, nil
	case "number":
		var out any
		if err := json.Unmarshal(v.Value, &out); err != nil {
			return nil, fmt.Errorf("bidi: number value: %w", err)
		}
		if s, ok := out.(string); ok { // NaN, -0, Infinity, -Infinity
			return s, nil
		}
		return out, nil
	case "array", "set":
		var items []RemoteValue
		if len(v.Value) > 0 {
			if err := json.Unmarshal(v.Value, &items); err != nil {
				return nil, fmt.Errorf("bidi: %s value: %w", v.Type, err)
			}
		}
		out := make([]any, len(items))
		for i, it := range items {
			d, err := it.Decode()
			if err != nil {
				return nil, err
			}
			out[i] = d
		}
		return out, nil
	case "object", "map":
		var pairs [][2]json.RawMessage
		if len(v.Value) > 0 {
			if err := json.Unmarshal(v.Value, &pairs); err != nil {
				return nil, fmt.Errorf("bidi: %s value: %w", v.Type, err)
			}
		}
		out := make(map[string]any, len(pairs))
		for _, p := range pairs {
			var key string
			if err := json.Unmarshal(p[0], &key); err != nil {
				continue // a non-string key (a map keyed by objects)
			}
			var val RemoteValue
			if err := json.Unmarshal(p[1], &val); err != nil {
				return nil, fmt.Errorf("bidi: %s entry %q: %w", v.Type, key, err)
			}
			d, err := val.Decode()
			if err != nil {
				return nil, err
			}
			out[key] = d
		}
		return out, nil
	default:
		return nil, nil
	}
}

// Field returns the entry named key of an object value.
func (v RemoteValue) Field(key string) (RemoteValue, bool) {
	if v.Type != "object" && v.Type != "map" {
		return RemoteValue{}, false
	}
	var pairs [][2]json.RawMessage
	if json.Unmarshal(v.Value, &pairs) != nil {
		return RemoteValue{}, false
	}
	for _, p := range pairs {
		var k string
		if json.Unmarshal(p[0], &k) != nil || k != key {
			continue
		}
		var out RemoteValue
		if json.Unmarshal(p[1], &out) != nil {
			return RemoteValue{}, false
		}
		return out, true
	}
	return RemoteValue{}, false
}

// Items returns the elements of an array or set value.
func (v RemoteValue) Items() []RemoteValue {
	if v.Type != "array" && v.Type != "set" {
		return nil
	}
	var out []RemoteValue
	if json.Unmarshal(v.Value, &out) != nil {
		return nil
	}
	return out
}

// WindowContext returns the browsing context id of a window value (a
// frame's contentWindow), "" for any other value.
func (v RemoteValue) WindowContext() string {
	if v.Type != "window" {
		return ""
	}
	var w struct {
		Context string `json:"context"`
	}
	if json.Unmarshal(v.Value, &w) != nil {
		return ""
	}
	return w.Context
}

// Cookie is a cookie as BiDi's storage module reports it.
type Cookie struct {
	Name     string `json:"name"`
	Value    string `json:"value"`
	Domain   string `json:"domain"`
	Path     string `json:"path"`
	HTTPOnly bool   `json:"httpOnly"`
	Secure   bool   `json:"secure"`
	SameSite string `json:"sameSite"`
	Expiry   int64  `json:"expiry,omitempty"`
}

type wireCookie struct {
	Name  string `json:"name"`
	Value struct {
		Type  string `json:"type"`
		Value string `json:"value"`
	} `json:"value"`
	Domain   string `json:"domain"`
	Path     string `json:"path"`
	HTTPOnly bool   `json:"httpOnly"`
	Secure   bool   `json:"secure"`
	SameSite string `json:"sameSite"`
	Expiry   int64  `json:"expiry,omitempty"`
}

func partition(userContext string) map[string]string {
	if userContext == "" {
		userContext = "default"
	}
	return map[string]string{"type": "storageKey", "userContext": userContext}
}

// Cookies lists the cookies of userContext ("" = default), optionally only
// those named name.
func (c *Conn) Cookies(ctx context.Context, userContext, name string) ([]Cookie, error) {
	p := map[string]any{"partition": partition(userContext)}
	if name != "" {
		p["filter"] = map[string]string{"name": name}
	}
	var out struct {
		Cookies []wireCookie `json:"cookies"`
	}
	if err := c.Call(ctx, "storage.getCookies", p, &out); err != nil {
		return nil, err
	}
	cs := make([]Cookie, len(out.Cookies))
	for i, w := range out.Cookies {
		cs[i] = Cookie{Name: w.Name, Value: w.Value.Value, Domain: w.Domain, Path: w.Path, HTTPOnly: w.HTTPOnly,
			Secure: w.Secure, SameSite: w.SameSite, Expiry: w.Expiry}
	}
	return cs, nil
}

// SetCookie stores ck in userContext ("" = default).
func (c *Conn) SetCookie(ctx context.Context, userContext string, ck Cookie) error {
	w := map[string]any{"name": ck.Name, "value": map[string]string{"type": "string", "value": ck.Value}, "domain": ck.Domain}
	if ck.Path != "" {
		w["path"] = ck.Path
	}
	if ck.HTTPOnly {
		w["httpOnly"] = true
	}
	if ck.Secure {
		w["secure"] = true
	}
	if ck.SameSite != "" {
		w["sameSite"] = ck.SameSite
	}
	if ck.Expiry > 0 {
		w["expiry"] = ck.Expiry
	}
	return c.Call(ctx, "storage.setCookie", map[string]any{"cookie": w, "partition": partition(userContext)}, nil)
}

// DeleteCookies deletes the cookies of userContext named name ("" = all).
func (c *Conn) DeleteCookies(ctx context.Context, userContext, name string) error {
	p := map[string]any{"partition": partition(userContext)}
	if name != "" {
		p["filter"] = map[string]string{"name": name}
	}
	return c.Call(ctx, "storage.deleteCookies", p, nil)
}

// PerformActions runs input action sequences (pointer, key, wheel) in bc;
// context; see the WebDriver actions model.
func (c *Conn) PerformActions(ctx context.Context, bc string, actions []any) error {
	return c.Call(ctx, "input.performActions", map[string]any{"context": bc, "actions": actions}, nil)
}

// ReleaseActions releases every key and button input.performActions left
// pressed in context.
func (c *Conn) ReleaseActions(ctx context.Context, bc string) error {
	return c.Call(ctx, "input.releaseActions", map[string]string{"context": bc}, nil)
}

// LocateByRole lists the nodes of bc's document whose role and accessible
// name, as Firefox's own accessibility engine computes them, are role and
// name (name "" = any), up to max (0 = all), searching under the nodes with
// the shared ids start (none = the document; a shadow root's id searches
// inside it, which the document search does not enter). It is the
// browser's truth for what an in-page computation approximates.
func (c *Conn) LocateByRole(ctx context.Context, bc, role, name string, max int, start ...string) ([]RemoteValue, error) {
	v := map[string]string{}
	if role != "" {
		v["role"] = role
	}
	if name != "" {
		v["name"] = name
	}
	p := map[string]any{"context": bc, "locator": map[string]any{"type": "accessibility", "value": v}}
	if max > 0 {
		p["maxNodeCount"] = max
	}
	if len(start) > 0 {
		refs := make([]map[string]string, len(start))
		for i, id := range start {
			refs[i] = map[string]string{"sharedId": id}
		}
		p["startNodes"] = refs
	}
	var out struct {
		Nodes []RemoteValue `json:"nodes"`
	}
	err := c.Call(ctx, "browsingContext.locateNodes", p, &out)
	return out.Nodes, err
}
