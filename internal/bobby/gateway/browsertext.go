package gateway

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/deltaharness/delta/internal/bobby/browser"
)

// browserEvidenceText renders the evidence of the popup, file, state and
// second-tier intent kinds one fact per line, deletes those keys from ev
// and reports the lines. raw is the typed evidence; a key whose value is
// not of the expected type (a replayed outcome decoded from JSON) is left
// to the generic rendering.
func browserEvidenceText(ev map[string]any, raw map[string]any) []string {
	var lines []string
	take := func(k string) { delete(ev, k) }
	if up, ok := raw["upload"].(browser.Upload); ok {
		lines = append(lines, fmt.Sprintf("uploaded %d file%s via %s: %s", up.Files, plural(up.Files), up.Via, strings.Join(up.Names, ", ")))
		take("upload")
	}
	if d, ok := raw["download"].(browser.Download); ok && d.SHA256 != "" {
		line := fmt.Sprintf("saved %d bytes to %s sha256=%s (HTTP %d", d.Bytes, d.SavedTo, d.SHA256, d.HTTPStatus)
		if d.ContentType != "" {
			line += " " + d.ContentType
		}
		line += ")"
		if d.FinalURL != "" && d.FinalURL != d.URL {
			line += " after redirects to " + d.FinalURL
		}
		lines = append(lines, line)
		take("download")
	}
	if st, ok := raw["emulation"].(browser.EmulationState); ok {
		lines = append(lines, emulationLine(st))
		take("emulation")
	}
	if cs, ok := raw["cookies"].([]browser.Cookie); ok {
		for _, c := range cs {
			lines = append(lines, cookieLine(c))
		}
		if len(cs) == 0 {
			lines = append(lines, "no cookies match")
		}
		take("cookies")
	}
	if log, ok := raw["network"].(browser.NetLog); ok {
		lines = append(lines, fmt.Sprintf("%d of %d matching requests; lastSeq=%d; dropped=%d", len(log.Entries), log.Matched, log.LastSeq, log.Dropped))
		for _, e := range log.Entries {
			lines = append(lines, netLine(e)...)
		}
		take("network")
	}
	if f, ok := raw["follow"].(browser.FollowResult); ok {
		lines = append(lines, followLine(f))
		take("follow")
	}
	if x, ok := raw["extraction"].(browser.Extraction); ok {
		lines = append(lines, extractionLines(x)...)
		take("extraction")
	}
	if s, ok := raw["state"].(browser.StateResult); ok {
		verdict := "state reached"
		if !s.Matched {
			verdict = "state not reached"
		}
		lines = append(lines, fmt.Sprintf("%s after %d ms", verdict, s.ElapsedMs))
		for i, c := range s.Conditions {
			l := fmt.Sprintf("%d. %s: %s", i+1, c.Kind, yesNo(c.Matched, "holds", "does not hold"))
			if c.Observed != "" {
				l += " (observed " + strconv.Quote(c.Observed) + ")"
			}
			lines = append(lines, l)
		}
		take("state")
	}
	if d, ok := raw["obstructions"].(browser.Dismissal); ok {
		if d.Found == 0 {
			lines = append(lines, "no obstruction found")
		}
		for _, o := range d.Items {
			l := o.Kind + " " + o.Element
			switch {
			case o.Dismissed:
				l = "dismissed " + l + " with " + strconv.Quote(o.Control)
			default:
				l = "still shown " + l + ": " + o.Note
			}
			lines = append(lines, l)
		}
		take("obstructions")
	}
	if ds, ok := raw["downloads"].([]capturedDownload); ok {
		for _, d := range ds {
			l := "download " + d.SuggestedFilename + ": "
			switch d.State {
			case browser.CaptureCompleted:
				l += fmt.Sprintf("%d bytes sha256=%s", d.Bytes, d.SHA256)
				if uri, _ := d.Artifact["uri"].(string); uri != "" {
					l += " " + uri
				}
			case browser.CaptureInProgress:
				l += fmt.Sprintf("still running after %d bytes", d.Bytes)
			default:
				l += "cancelled: " + d.Error
			}
			lines = append(lines, l)
		}
		take("downloads")
	}
	if p, ok := raw["popup"].(map[string]any); ok {
		l := fmt.Sprintf("popup pageId=%v", p["pageId"])
		if st, ok := p["page"].(browser.PageState); ok && st.URL != nil {
			l += " " + *st.URL + " (" + st.ReadyState + ")"
		}
		lines = append(lines, l)
		take("popup")
	}
	return lines
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func yesNo(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}

func emulationLine(st browser.EmulationState) string {
	var parts []string
	if st.Device != "" {
		parts = append(parts, st.Device)
	}
	if v := st.Viewport; v != nil {
		vp := fmt.Sprintf("%dx%d @%g", v.Width, v.Height, v.DeviceScaleFactor)
		if v.Mobile {
			vp += " mobile"
		}
		parts = append(parts, vp)
	}
	if st.Touch {
		parts = append(parts, "touch")
	}
	if st.Locale != "" {
		parts = append(parts, "locale "+st.Locale)
	}
	if st.Timezone != "" {
		parts = append(parts, "timezone "+st.Timezone)
	}
	if st.UserAgent != "" {
		parts = append(parts, "userAgent "+strconv.Quote(st.UserAgent))
	}
	return "emulating " + strings.Join(parts, "; ")
}

func cookieLine(c browser.Cookie) string {
	attrs := []string{"domain " + c.Domain, "path " + c.Path}
	if c.HTTPOnly {
		attrs = append(attrs, "httpOnly")
	}
	if c.Secure {
		attrs = append(attrs, "secure")
	}
	if c.SameSite != "" {
		attrs = append(attrs, "sameSite "+c.SameSite)
	}
	if c.Expires == nil {
		attrs = append(attrs, "session")
	} else {
		attrs = append(attrs, "expires "+strconv.FormatInt(*c.Expires, 10))
	}
	return c.Name + "=" + c.Value + " (" + strings.Join(attrs, ", ") + ")"
}

func netLine(e browser.NetEntry) []string {
	status := strconv.FormatInt(e.Status, 10)
	switch {
	case e.Failed != "":
		status = "failed " + e.Failed
	case !e.Done:
		status = "pending"
	case e.Redirected:
		status += " redirect"
	}
	l := fmt.Sprintf("#%d %s %s %s %s", e.Seq, e.Method, status, e.Type, e.URL)
	if e.Bytes > 0 {
		l += fmt.Sprintf(" %.0f B", e.Bytes)
	}
	if e.DurationMs > 0 {
		l += fmt.Sprintf(" %.0f ms", e.DurationMs)
	}
	if e.FromCache {
		l += " cached"
	}
	out := []string{l}
	if e.Body != nil {
		out = append(out, "  body: "+strconv.Quote(*e.Body))
	}
	if e.BodyNote != "" {
		out = append(out, "  body "+e.BodyNote)
	}
	return out
}

func followLine(f browser.FollowResult) string {
	switch f.Outcome {
	case browser.FollowNavigated:
		l := "navigated to " + f.URL
		if f.Status != 0 {
			l += " (HTTP " + strconv.FormatInt(f.Status, 10) + ")"
		}
		return l
	case browser.FollowPopup:
		return "opened a popup at " + f.URL
	case browser.FollowSameDocument:
		return "moved within the page to " + f.URL
	case browser.FollowFailed:
		return "the new document failed: " + f.Error
	case browser.FollowDownload:
		return "started a download; still at " + f.URL
	}
	return "led nowhere; still at " + f.URL
}

func extractionLines(x browser.Extraction) []string {
	var out []string
	more := ""
	if x.Truncated {
		more = " (truncated)"
	}
	switch x.Kind {
	case browser.ExtractTable:
		out = append(out, fmt.Sprintf("table, %d rows%s", x.Total, more))
		if len(x.Headers) > 0 {
			out = append(out, strings.Join(x.Headers, " | "))
		}
		for _, r := range x.Rows {
			out = append(out, "- "+strings.Join(r, " | "))
		}
	case browser.ExtractList:
		out = append(out, fmt.Sprintf("list, %d items%s", x.Total, more))
		for _, it := range x.Items {
			out = append(out, "- "+itemText(it))
		}
	default:
		out = append(out, "text"+more+":")
		for _, l := range strings.Split(x.Text, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				out = append(out, l)
			}
		}
		for _, it := range x.Links {
			out = append(out, "link "+itemText(it))
		}
	}
	return out
}

func itemText(it browser.ExtractItem) string {
	if it.Href == "" {
		return it.Text
	}
	return it.Text + " → " + it.Href
}
