package gateway

import (
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/deltaharness/delta/internal/bobby/browser"
	"github.com/deltaharness/delta/internal/bobby/policy"
)

// browserTools are the rows of toolTable for popups, files, browser state
// and the second tier of intents; buildTools appends them before
// command_execute, so they are command kinds like the rest.
func browserTools() []*toolDef {
	mutate, read := policy.BrowserMutate, policy.PageRead
	A, I, V := PhaseAct, PhaseIntent, PhaseVerify
	in := func(ps ...Phase) []Phase { return ps }
	web := func(an Annotations) Annotations { an.OpenWorld = true; return an }
	return []*toolDef{
		command(toolSpec{
			name: "click_and_wait_for_popup", title: "Click and wait for popup", engineGap: "bobby's Firefox pages are the tabs it opened; it does not adopt window.open or target=_blank tabs yet",
			desc:       "Click a target that opens a page (window.open, target=_blank) and return the new pageId, registered in the session (page_list); timeoutMs bounds the wait for it (default 15000), after which the answer is notVerified. autoCheckpoint records the click under commandId/attemptId so a retry with the same ids replays instead of opening a second page.",
			capability: mutate, ann: web(Annotations{}), phases: in(A), handle: true,
			props: map[string]*jsonschema.Schema{
				"target":         targetSchema,
				"selector":       selectorProp,
				"modifiers":      &jsonschema.Schema{Type: "array", Items: enum("", "shift", "ctrl", "alt", "meta"), MaxItems: ptr(4), UniqueItems: true},
				"autoCheckpoint": boolean("record the click as a checkpoint (replayed, not repeated, on retry with the same commandId and attemptId)"),
				"commandId":      strN("pin the commandId (with autoCheckpoint)", 1, 64),
				"attemptId":      strN("pin the attempt (with autoCheckpoint)", 1, 64),
			},
		}, commandSpec{mutates: true, timeout: 30 * time.Second, checkpoint: popupCheckpoint}, runClickAndWaitForPopup),
		needing(command(toolSpec{
			name: "upload_files", title: "Upload files", engines: bothEngines,
			desc:       "Put local files on a file input: the input, its label, a container holding it, or a button that opens a file chooser (hidden inputs work). Paths are never echoed.",
			capability: policy.FileUpload, dynamic: "also browser:mutate", ann: web(Annotations{}), phases: in(A, I), handle: true,
			props: map[string]*jsonschema.Schema{
				"target": targetSchema, "selector": selectorProp,
				"paths": array("local file paths", strN("", 1, 4096), browser.MaxUploadFiles),
			},
			required: []string{"paths"},
		}, commandSpec{mutates: true, timeout: 30 * time.Second}, runUploadFiles), func(uploadArgs) []policy.Capability { return []policy.Capability{mutate} }),
		command(toolSpec{
			name: "download_url", title: "Download URL", engines: bothEngines,
			desc:       "Fetch a URL with the session's cookies into the downloads root: saveAs relative to it or directly under it. Returns savedTo and sha256; maxBytes defaults to and is capped by [http].max_download_bytes.",
			capability: mutate, dynamic: "artifact:capture makes the file an artifact:// resource",
			ann: web(Annotations{}), phases: in(A, V), handle: true,
			props: map[string]*jsonschema.Schema{
				"url":      strN("absolute http(s) URL", 1, 65536),
				"saveAs":   strN("path relative to the downloads root, or absolute directly under it", 1, 4096),
				"maxBytes": &jsonschema.Schema{Type: "integer", Description: "1..[http].max_download_bytes (runtime_info limits.maxDownloadBytes)"},
			},
			required: []string{"url", "saveAs"},
		}, commandSpec{timeout: 10 * time.Minute}, runDownloadURL),
		command(toolSpec{
			name: "pdf", title: "Print to PDF", engineGap: "printing over BiDi (browsingContext.print) is not wired yet",
			desc:       "Print the page to PDF, stored as an artifact:// resource.",
			capability: policy.ArtifactCapture, dynamic: "(artifact:// read needs artifact:read)",
			ann: web(Annotations{ReadOnly: true, Idempotent: true}), phases: in(V), handle: true,
			props: map[string]*jsonschema.Schema{
				"landscape": boolean(""), "printBackground": boolean(""),
				"scale":       &jsonschema.Schema{Type: "number", Minimum: ptr(0.1), Maximum: ptr(2.0)},
				"paperWidth":  &jsonschema.Schema{Type: "number", Description: "inches", Minimum: ptr(1.0), Maximum: ptr(100.0)},
				"paperHeight": &jsonschema.Schema{Type: "number", Description: "inches", Minimum: ptr(1.0), Maximum: ptr(100.0)},
				"pageRanges":  strN("e.g. 1-5, 8", 1, 256),
			},
		}, commandSpec{readOnly: true, timeout: 60 * time.Second}, runPDF),
		command(toolSpec{
			name: "emulate", title: "Emulate device", engineGap: "device, locale and timezone emulation are CDP's Emulation domain",
			desc:       "Change the page's viewport, device, touch, user agent, locale or timezone (layout changes at once; navigator and headers after the next load). Invalidates retained context.",
			capability: mutate, ann: web(Annotations{Idempotent: true}), phases: in(A), handle: true,
			props: map[string]*jsonschema.Schema{
				"device": enum("a device preset", browser.DeviceNames()...),
				"viewport": object(map[string]*jsonschema.Schema{
					"width": integer("", 1, browser.MaxViewportSide), "height": integer("", 1, browser.MaxViewportSide),
					"deviceScaleFactor": &jsonschema.Schema{Type: "number", Minimum: ptr(0.0), Maximum: ptr(10.0)},
					"mobile":            boolean(""),
				}, "width", "height"),
				"userAgent": strN("", 1, 1024),
				"locale":    strN("BCP 47, e.g. de-DE", 2, 35),
				"timezone":  strN("IANA, e.g. Europe/Berlin", 1, 64),
				"touch":     boolean(""),
			},
		}, commandSpec{mutates: true, timeout: 15 * time.Second}, runEmulate),
		command(toolSpec{
			name: "cookie_get", title: "Get cookies", engines: bothEngines,
			desc:       "The session's cookies, filtered by url (those a request to it sends), name or domain.",
			capability: read, ann: Annotations{ReadOnly: true, Idempotent: true}, phases: in(A, V), handle: true,
			props: cookieFilterProps(),
		}, commandSpec{readOnly: true, timeout: 10 * time.Second}, runCookieGet),
		command(toolSpec{
			name: "cookie_set", title: "Set cookies", engines: bothEngines,
			desc:       "Store cookies in the session (every page of it sends them). Each needs url or domain.",
			capability: mutate, ann: Annotations{Idempotent: true}, phases: in(A), handle: true,
			props: map[string]*jsonschema.Schema{"cookies": array("", object(map[string]*jsonschema.Schema{
				"name": strN("", 1, 256), "value": strN("", 0, 4096),
				"url": strN("", 1, 4096), "domain": strN("", 1, 255), "path": strN("", 1, 1024),
				"expires":  &jsonschema.Schema{Type: "integer", Description: "Unix seconds; omit for a session cookie", Minimum: ptr(0.0)},
				"httpOnly": boolean(""), "secure": boolean(""), "sameSite": enum("", "Strict", "Lax", "None"),
			}, "name", "value"), 50)},
			required: []string{"cookies"},
		}, commandSpec{mutates: true, timeout: 10 * time.Second}, runCookieSet),
		command(toolSpec{
			name: "cookie_delete", title: "Delete cookies", engines: bothEngines,
			desc:       "Delete the session's cookies matching name, domain or url; all:true deletes every one.",
			capability: mutate, ann: Annotations{Destructive: true, Idempotent: true}, phases: in(A), handle: true,
			props: func() map[string]*jsonschema.Schema {
				p := cookieFilterProps()
				p["all"] = boolean("delete every cookie of the session")
				return p
			}(),
		}, commandSpec{mutates: true, timeout: 10 * time.Second}, runCookieDelete),
		command(toolSpec{
			name: "network_log", title: "Network log", engineGap: "the request log is built from CDP's Network domain; BiDi's network events are not wired yet",
			desc:       "The page's recent requests (bounded, newest kept): method, status, type, bytes, timing; no headers, no bodies unless includeBodies. Pass since=lastSeq to read only new ones.",
			capability: read, ann: Annotations{ReadOnly: true, Idempotent: true}, phases: in(A, V), handle: true,
			props: map[string]*jsonschema.Schema{
				"since":         &jsonschema.Schema{Type: "integer", Minimum: ptr(0.0)},
				"limit":         integer("", 1, browser.DefaultNetLogSize),
				"urlContains":   strN("", 1, 2048),
				"types":         array("resource types: Document, XHR, Fetch, Script, Stylesheet, Image, …", strN("", 1, 32), 16),
				"failedOnly":    boolean("failed requests and HTTP ≥ 400 only"),
				"includeBodies": boolean("read response bodies of text responses (at most 20)"),
				"maxBodyBytes":  integer("", 1, browser.MaxNetBodyBytes),
			},
		}, commandSpec{readOnly: true, timeout: 15 * time.Second}, runNetworkLog),
		declare(toolSpec{
			name: "context_neighbors", title: "Context neighbors", engines: bothEngines, capability: read,
			desc: "What surrounds a ref of the retained snapshot: its section heading, ancestors (card, form, region), siblings and children. Nothing when no snapshot is retained; a ref it does not hold fails targetNotFound.",
			ann:  Annotations{ReadOnly: true, Idempotent: true}, phases: in(I, V), scoped: true, handle: true,
			props: map[string]*jsonschema.Schema{
				"ref":      strN("a ref from the last snapshot", 1, 32),
				"question": strN("or a description, answered as context_ask does", 1, 1000),
				"limit":    integer("siblings and children on each side", 1, 20),
			},
		}, handleContextNeighbors),
		command(toolSpec{
			name: "intent_follow", title: "Follow", engineGap: "it tells navigations, popups and same-document changes apart with CDP's target and page events",
			desc:       "Follow a link or control (target, selector or description) and report where it led: navigated, popup (new pageId), sameDocument; refused links are refused before the click.",
			capability: mutate, ann: web(Annotations{Destructive: true}), phases: in(I), handle: true, idemKey: true,
			props: map[string]*jsonschema.Schema{
				"target": targetSchema, "selector": selectorProp,
				"description": strN("e.g. 'the pricing link'", 1, 1000),
			},
		}, commandSpec{mutates: true, timeout: 45 * time.Second}, runIntentFollow),
		command(toolSpec{
			name: "intent_extract", title: "Extract", engineGap: "its region reader resolves regions through CDP's DOM domain",
			desc:       "Read a region as data by its shape: a table as headers and rows, a list or cards as items with links, else text and links. Default region: main.",
			capability: read, ann: web(Annotations{ReadOnly: true, Idempotent: true}), phases: in(I, V), handle: true, idemKey: true,
			props: map[string]*jsonschema.Schema{
				"target": targetSchema, "selector": selectorProp,
				"description": strN("e.g. 'the price table'", 1, 1000),
				"limit":       integer("max rows, items or links", 1, browser.MaxExtractItems),
			},
		}, commandSpec{readOnly: true, timeout: 20 * time.Second}, runIntentExtract),
		command(toolSpec{
			name: "intent_wait_for_state", title: "Wait for state", engineGap: "the multi-condition wait runs on CDP (and networkQuiet has no BiDi signal); use wait_for one condition at a time",
			desc:       "Wait until every condition holds at once (text, value, document, url, element, networkQuiet; not:true inverts one). timeoutMs is the wait (default 10000).",
			capability: read, ann: web(Annotations{ReadOnly: true, Idempotent: true}), phases: in(I, V), handle: true, idemKey: true,
			props: map[string]*jsonschema.Schema{
				"conditions": array("all must hold", stateConditionSchema, browser.MaxStateConditions),
			},
			required: []string{"conditions"},
		}, commandSpec{readOnly: true, waits: true}, runIntentWaitForState),
		command(toolSpec{
			name: "intent_dismiss_obstruction", title: "Dismiss obstruction", engineGap: "it finds covering layers through CDP's DOM and layer hit tests",
			desc:       "Dismiss cookie banners, modals and covering overlays the way a person would (reject/accept, close, Escape) and check they are gone.",
			capability: mutate, ann: web(Annotations{}), phases: in(I), handle: true, idemKey: true,
			props: map[string]*jsonschema.Schema{"prefer": enum("consent answer (default reject)", "reject", "accept")},
		}, commandSpec{mutates: true, timeout: 30 * time.Second}, runIntentDismissObstruction),
	}
}

func cookieFilterProps() map[string]*jsonschema.Schema {
	return map[string]*jsonschema.Schema{
		"url": strN("cookies a request to this URL sends", 1, 4096), "name": strN("", 1, 256), "domain": strN("", 1, 255),
	}
}

// stateConditionSchema is a wait condition (see waitConditionSchema) with
// an optional not.
var stateConditionSchema = func() *jsonschema.Schema {
	s := *waitConditionSchema
	s.OneOf = nil
	for _, v := range waitConditionSchema.OneOf {
		c := *v
		props := map[string]*jsonschema.Schema{"not": boolean("the condition must not hold")}
		for k, p := range v.Properties {
			props[k] = p
		}
		c.Properties = props
		s.OneOf = append(s.OneOf, &c)
	}
	return &s
}()
