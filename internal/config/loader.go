package config

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// loader reads variables and collects every problem instead of stopping at
// the first, so one boot attempt reports all of them.
type loader struct {
	lookup func(string) (string, bool)
	errs   []error
}

func (l *loader) fail(name, value string, format string, a ...any) {
	if IsSecret(name) {
		value = ""
	}
	l.errs = append(l.errs, &FieldError{Var: name, Value: value, Err: fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, a...)...)})
}

// get returns the trimmed value and whether the variable is set to something
// other than blanks. An exported empty variable counts as unset.
func (l *loader) get(name string) (string, bool) {
	v, ok := l.lookup(name)
	if !ok {
		return "", false
	}
	v = strings.TrimSpace(v)
	return v, v != ""
}

func (l *loader) str(name, def string) string {
	if v, ok := l.get(name); ok {
		return v
	}
	return def
}

// integer reads a whole number; want is the failure's text, the accepted
// values in full (an integer too large for int64 is refused with the same
// words as one out of range, so the message always says what to send).
func (l *loader) integer(name, want string) (int64, string, bool) {
	return parsed(l, name, want, func(v string) (int64, bool) {
		n, err := strconv.ParseInt(v, 10, 64)
		return n, err == nil
	})
}

// parsed is name's value read by parse, with the text it was read from;
// ok is false when name is unset, or when parse refuses the text (a
// failure saying want).
func parsed[T any](l *loader, name, want string, parse func(string) (T, bool)) (_ T, text string, ok bool) {
	var zero T
	v, ok := l.get(name)
	if !ok {
		return zero, "", false
	}
	n, ok := parse(v)
	if !ok {
		l.fail(name, v, "%s", want)
		return zero, v, false
	}
	return n, v, true
}

func (l *loader) intRange(name string, def, lo, hi int) int {
	want := fmt.Sprintf("want an integer from %d to %d", lo, hi)
	n, v, ok := l.integer(name, want)
	if !ok {
		return def
	}
	if n < int64(lo) || n > int64(hi) {
		l.fail(name, v, "%s", want)
		return def
	}
	return int(n)
}

func (l *loader) intClamp(name string, def, lo, hi int) int {
	n, _, ok := l.integer(name, fmt.Sprintf("want an integer (held to %d–%d)", lo, hi))
	if !ok {
		return def
	}
	return int(min(max(n, int64(lo)), int64(hi)))
}

// millis reads a non-negative millisecond count; zero says what 0 (or a
// small value) means for this variable, for the refusal's text.
func (l *loader) millis(name string, def time.Duration, zero string) time.Duration {
	want := "want milliseconds, an integer ≥ 0 (" + zero + ")"
	n, v, ok := l.integer(name, want)
	if !ok {
		return def
	}
	const maxMS = math.MaxInt64 / int64(time.Millisecond)
	if n < 0 || n > maxMS {
		l.fail(name, v, "%s", want)
		return def
	}
	return time.Duration(n) * time.Millisecond
}

func (l *loader) csv(name string) []string {
	v, ok := l.get(name)
	if !ok {
		return nil
	}
	var out []string
	for part := range strings.SplitSeq(v, ",") {
		if p := strings.TrimSpace(part); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// boolean accepts 1/true/yes/on and 0/false/no/off/"" (any case).
func (l *loader) boolean(name string) bool {
	v, _ := l.get(name)
	b, err := parseBool(v)
	if err != nil {
		l.fail(name, v, "%v", err)
	}
	return b
}

func parseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true, nil
	case "", "0", "false", "no", "off":
		return false, nil
	}
	return false, errors.New("want a boolean: 1, true, yes, on, or 0, false, no, off")
}

// regexp compiles a regular expression; empty or unset is nil. An invalid
// expression refuses to boot: a pattern that silently matched nothing (or
// everything) would change behaviour without a word.
func (l *loader) regexp(name string) *regexp.Regexp {
	v, _ := l.get(name)
	if strings.TrimSpace(v) == "" {
		return nil
	}
	re, err := regexp.Compile(v)
	if err != nil {
		l.fail(name, v, "not a valid regular expression: %v", err)
		return nil
	}
	return re
}

// inspect is on unless explicitly turned off.
func (l *loader) inspect(name string) bool {
	v, ok := l.get(name)
	if !ok {
		return true
	}
	b, err := parseBool(v)
	if err != nil {
		l.fail(name, v, "want off to disable inspection (or on)")
		return true
	}
	return b
}

func (l *loader) apiKey() string {
	// Presence, not content, decides: an exported empty MODEL_API_KEY
	// deliberately suppresses the OpenRouter fallback.
	if v, ok := l.lookup("MODEL_API_KEY"); ok {
		return strings.TrimSpace(v)
	}
	v, _ := l.lookup("OPENROUTER_API_KEY")
	return strings.TrimSpace(v)
}

func (l *loader) baseURL(name, def string) string {
	v, ok := l.get(name)
	if !ok {
		return def
	}
	if CheckBaseURL(v) != nil {
		l.fail(name, v, "want an absolute http or https URL")
		return def
	}
	return v
}

// telemetryURL is an absolute http or https URL; plain http only to a
// loopback host unless insecure, because the exporter's bearer may be the
// control token.
func (l *loader) telemetryURL(name string, insecure bool) string {
	v, ok := l.get(name)
	if !ok || v == "" {
		return ""
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		l.fail(name, v, "want an absolute http or https URL")
		return ""
	}
	if u.Scheme == "http" && !insecure {
		if !loopbackHost(u.Hostname()) {
			l.fail(name, v, "plain http to a non-loopback host would send the bearer in clear text; use https or set TELEMETRY_ALLOW_INSECURE=1")
			return ""
		}
	}
	return v
}

func (l *loader) modelAPI(name string) string {
	v, _ := l.get(name)
	switch strings.ToLower(v) {
	case APIAnthropic:
		return APIAnthropic
	case APIResponses:
		return APIResponses
	}
	return APIChat
}

func (l *loader) primary() string {
	if v, ok := l.get("DELTA_MODEL_PRIMARY"); ok {
		return v
	}
	return l.str("DELTA_MODEL", DefaultModelPrimary)
}

func (l *loader) utilityModel() string {
	// An explicitly empty value means "use the main cascade".
	v, ok := l.lookup("DELTA_UTILITY_MODEL")
	if !ok {
		return DefaultUtilityModel
	}
	return strings.TrimSpace(v)
}

func (l *loader) profile(name string) string {
	v, ok := l.get(name)
	if !ok {
		return ProfileTrusted
	}
	p, known := CanonicalProfile(v)
	if !known {
		// An unknown tier never falls open to the widest one: refuse to boot.
		l.fail(name, v, "want trusted or safe (aliases work, chat)")
		return ProfileSafe
	}
	return p
}

func (l *loader) number(name string) (float64, string, bool) {
	return parsed(l, name, "want a number", func(v string) (float64, bool) {
		f, err := strconv.ParseFloat(v, 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	})
}

func (l *loader) steps(name string) *int {
	f, _, ok := l.number(name)
	if !ok {
		return nil
	}
	// A zero-step budget would fail every run before its first call, so the
	// floor is 1; fractions floor; absurd values are held to int32.
	n := int(min(max(math.Floor(f), 1), math.MaxInt32))
	return &n
}

// tokens is a budget in tokens: nil when unset or when not an integer ≥ 0.
func (l *loader) tokens(name string) *int64 {
	const want = "want an integer ≥ 0"
	return notNegative(l, name, func(name string) (int64, string, bool) { return l.integer(name, want) }, want)
}

// cost is a budget in dollars: nil when unset or when not a number ≥ 0.
func (l *loader) cost(name string) *float64 {
	return notNegative(l, name, l.number, "want dollars ≥ 0")
}

// notNegative is what read finds in name, or nil when it is unset or
// unreadable, or below zero (a failure saying want).
func notNegative[T int64 | float64](l *loader, name string, read func(string) (T, string, bool), want string) *T {
	n, v, ok := read(name)
	if !ok {
		return nil
	}
	if n < 0 {
		l.fail(name, v, "%s", want)
		return nil
	}
	return &n
}

func (l *loader) leaseHolder() string {
	if v, ok := l.get("DELTA_LEASE_HOLDER"); ok {
		return v
	}
	if v, ok := l.get("FLY_MACHINE_ID"); ok {
		return v
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "delta"
	}
	return h
}

// oneOf reads an optional value that must be one of allowed (trimmed,
// lowercased); empty means unset.
func (l *loader) oneOf(name string, allowed ...string) string {
	v, _ := l.get(name)
	v = strings.ToLower(strings.TrimSpace(v))
	if v == "" {
		return ""
	}
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	l.fail(name, v, "want one of %s", strings.Join(allowed, ", "))
	return ""
}

// toolList reads a comma-separated list of tool names. Unset gives nil.
// Set but empty, or holding a name that is not a tool name, gives an empty
// non-nil list, floor = true and a warning: an envelope that cannot be read
// falls back to the safe floor rather than to everything.
func (l *loader) toolList(name string, warnings *[]string) (names []string, floor bool) {
	raw, ok := l.lookup(name)
	if !ok {
		return nil, false
	}
	names = []string{}
	seen := map[string]bool{}
	for part := range strings.SplitSeq(raw, ",") {
		n := strings.TrimSpace(part)
		if n == "" {
			continue
		}
		if !validToolName(n) {
			*warnings = append(*warnings, fmt.Sprintf("%s: %q is not a tool name (letters, digits, _ . -, at most 128); using the safe tool floor", name, n))
			return []string{}, true
		}
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		*warnings = append(*warnings, fmt.Sprintf("%s is set but empty; using the safe tool floor", name))
		return names, true
	}
	return names, false
}

// hydrateTools reads the hydration reads (a comma list) and the search tool
// (one name). A malformed name drops that setting with a warning: calling
// a guessed tool before every new session would be worse than calling none.
func (l *loader) hydrateTools(readsVar, searchVar string, warnings *[]string) (reads []string, search string) {
	if raw, ok := l.lookup(readsVar); ok {
		seen := map[string]bool{}
		for part := range strings.SplitSeq(raw, ",") {
			n := strings.TrimSpace(part)
			if n == "" || seen[n] {
				continue
			}
			if !validToolName(n) {
				*warnings = append(*warnings, fmt.Sprintf("%s: %q is not a tool name (letters, digits, _ . -, at most 128); no hydration reads", readsVar, n))
				reads = nil
				break
			}
			seen[n] = true
			reads = append(reads, n)
		}
	}
	if raw, ok := l.lookup(searchVar); ok {
		n := strings.TrimSpace(raw)
		switch {
		case n == "":
		case !validToolName(n):
			*warnings = append(*warnings, fmt.Sprintf("%s: %q is not a tool name (letters, digits, _ . -, at most 128); no hydration search", searchVar, n))
		default:
			search = n
		}
	}
	return reads, search
}

func validToolName(s string) bool {
	if len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return false
		}
	}
	return true
}

// dbURLScheme matches a URL-shaped value ("postgres://…", "mysql://…").
var dbURLScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`)

// dbTarget reads the daemon's database: a SQLite path, or a PostgreSQL URL
// (postgres:// or postgresql://) for a worker sharing that database with
// others. Any other URL is refused and not echoed, since a database URL
// usually carries a password: taken as a path, it would create a folder
// named after the scheme ("mysql:") and run on an empty local database the
// operator never asked for.
func (l *loader) dbTarget(name, def string) string {
	v := l.str(name, def)
	if isPostgresURL(v) {
		return v
	}
	if m := dbURLScheme.FindString(v); m != "" {
		l.fail(name, "", "%s is a database URL delta does not speak: set %s to a SQLite file path (default %s) or a postgres:// URL", strings.TrimSuffix(m, "://")+"://…", name, def)
		return ""
	}
	return v
}

// isPostgresURL reports whether a DELTA_DB value names a PostgreSQL
// database rather than a SQLite file.
func isPostgresURL(v string) bool {
	return strings.HasPrefix(v, "postgres://") || strings.HasPrefix(v, "postgresql://")
}
