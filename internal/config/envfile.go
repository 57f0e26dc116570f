package config

import (
	"bufio"
	"io"
	"strings"
)

// ParseEnvFile parses a bundle's delta.env. It is deliberately not a shell
// parser:
//
//   - each line is KEY=value, split at the first '=', key and value trimmed;
//   - blank lines and lines whose first non-blank character is '#' are skipped;
//   - one matching outer pair of ' or " is removed from the value;
//   - there is no export keyword, no $VAR expansion, no escape processing and
//     no inline-comment removal (KEY=a # b keeps "a # b");
//   - a line without '=', with an empty key, or whose key is not
//     [A-Za-z_][A-Za-z0-9_]* is silently dropped ("export K=v" included);
//   - a later duplicate wins.
//
// A leading UTF-8 byte-order mark is ignored so a file saved by a Windows
// editor does not lose its first key. Lines may be any length. A read error
// ends parsing; what was read so far is returned.
func ParseEnvFile(r io.Reader) map[string]string {
	out := map[string]string{}
	br := bufio.NewReader(r)
	first := true
	for {
		line, err := br.ReadString('\n')
		if first {
			line = strings.TrimPrefix(line, "\uFEFF")
			first = false
		}
		if k, v, ok := parseEnvLine(line); ok {
			out[k] = v
		}
		if err != nil { // io.EOF or a read failure: keep what was read
			return out
		}
	}
}

func parseEnvLine(line string) (key, value string, ok bool) {
	line = strings.TrimSpace(line)
	if line == "" || line[0] == '#' {
		return "", "", false
	}
	k, v, found := strings.Cut(line, "=")
	if !found {
		return "", "", false
	}
	k = strings.TrimSpace(k)
	if !validEnvKey(k) {
		return "", "", false
	}
	v = strings.TrimSpace(v)
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
	}
	return k, v, true
}

func validEnvKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
