package bundle

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"strings"
)

//go:embed review_policy.md
var reviewPolicyTemplate string

// policyReadLimit bounds how much of POLICY.md is read at all. Comments are
// stripped before the budget applies, so the file may exceed the budget, but
// a policy file this large is a mistake either way.
const policyReadLimit = 1 << 20

// loadPolicy decides the policy block:
//   - real rules in POLICY.md → that text (HTML comments removed), which
//     must fit maxTokens or Load fails: fixed rules are never truncated;
//   - missing, unreadable, heading-only or comment-only → the embedded review
//     policy when a write rail exists, else no policy.
func loadPolicy(path string, maxTokens int, hasRail bool, v Vocab) (text, source, warning string, err error) {
	fallback := func() (string, string) {
		if hasRail {
			return EmbeddedPolicy(v), PolicyEmbedded
		}
		return "", PolicyNone
	}
	data, tooBig, rerr := readCapped(path, policyReadLimit)
	switch {
	case tooBig:
		return "", "", "", fmt.Errorf("load %s: file is over %d bytes, far beyond the %d-token policy budget (DELTA_POLICY_MAX_TOKENS): %w",
			path, policyReadLimit, maxTokens, ErrPolicyTooLarge)
	case errors.Is(rerr, os.ErrNotExist):
		text, source = fallback()
		return text, source, "", nil
	case rerr != nil:
		text, source = fallback()
		return text, source, fmt.Sprintf("%s unreadable, using the %s policy: %v", PolicyFile, source, rerr), nil
	}
	custom := strings.TrimSpace(stripComments(string(data)))
	if !hasRules(custom) {
		text, source = fallback()
		return text, source, "", nil
	}
	if tokens := EstimateTokens(custom); tokens > maxTokens {
		return "", "", "", fmt.Errorf("load %s: custom policy is about %d tokens (%d bytes at ≈%d bytes/token), over the %d-token limit (DELTA_POLICY_MAX_TOKENS); shorten it or raise the limit, rules are never truncated: %w",
			path, tokens, len(custom), BytesPerToken, maxTokens, ErrPolicyTooLarge)
	}
	return custom, PolicyCustom, "", nil
}

// EstimateTokens is the budget estimate for text: one token per
// BytesPerToken bytes, rounded up.
func EstimateTokens(s string) int { return (len(s) + BytesPerToken - 1) / BytesPerToken }

// EmbeddedPolicy renders the embedded review policy with v's nouns and
// write suffix.
func EmbeddedPolicy(v Vocab) string {
	return strings.TrimSpace(strings.NewReplacer(
		"{{writeVerbSuffix}}", v.WriteVerbSuffix,
		"{{writeNoun}}", v.WriteNoun,
		"{{taskNoun}}", v.TaskNoun,
		"{{itemNoun}}", v.ItemNoun,
	).Replace(reviewPolicyTemplate))
}

// hasRules reports whether text (comments already stripped) holds anything
// but blank lines and Markdown headings.
func hasRules(text string) bool {
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			return true
		}
	}
	return false
}

// stripComments removes HTML comments (<!-- … -->). An unclosed comment runs
// to the end of the text, as in a Markdown renderer.
func stripComments(s string) string {
	if !strings.Contains(s, "<!--") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "<!--")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		j := strings.Index(s[i+4:], "-->")
		if j < 0 {
			return b.String()
		}
		s = s[i+4+j+3:]
	}
}
