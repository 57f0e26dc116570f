package config

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// DevEnv computes the environment of the daemon child that `delta dev`
// starts:
//
//   - start from the launcher's inherited environment and overlay delta.env;
//   - DELTA_WORKSPACE defaults to the bundle directory and DELTA_DB to
//     <bundle>/.delta/delta.db; only a non-empty value in delta.env overrides
//     them (an inherited value is ignored, so a shell that exports a
//     production DELTA_DB cannot leak into a dev session); a relative
//     override resolves against the bundle directory;
//   - DELTA_BIND defaults to 127.0.0.1, DELTA_INSPECT_WRITE and
//     DELTA_CAPTURE_CALLS to 1, unless the merged environment sets them (for
//     the two booleans an explicit empty value counts as set, meaning off);
//   - PORT is always port.
//
// bundleDir is made absolute so the child's working directory does not
// matter. The inputs are not modified.
func DevEnv(bundleDir string, inherited map[string]string, file map[string]string, port int) map[string]string {
	if abs, err := filepath.Abs(bundleDir); err == nil {
		bundleDir = abs
	}
	env := make(map[string]string, len(inherited)+len(file)+6)
	maps.Copy(env, inherited)
	maps.Copy(env, file)

	env["DELTA_WORKSPACE"] = bundleDir
	if v := file["DELTA_WORKSPACE"]; v != "" {
		env["DELTA_WORKSPACE"] = resolveIn(bundleDir, v)
	}
	env["DELTA_DB"] = filepath.Join(bundleDir, ".delta", "delta.db")
	if v := file["DELTA_DB"]; v != "" {
		env["DELTA_DB"] = resolveIn(bundleDir, v)
	}
	if env["DELTA_BIND"] == "" {
		env["DELTA_BIND"] = DefaultBind
	}
	for _, k := range []string{"DELTA_INSPECT_WRITE", "DELTA_CAPTURE_CALLS"} {
		if _, set := env[k]; !set {
			env[k] = "1"
		}
	}
	env["PORT"] = strconv.Itoa(port)
	return env
}

func resolveIn(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// Environ returns the process environment as a map, for DevEnv's inherited
// argument (this package is the one allowed to read it). For a name that
// appears twice the later entry wins, as in exec.Cmd.
func Environ() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			env[k] = v
		}
	}
	return env
}

// EnvList turns an environment map into sorted KEY=value entries for
// exec.Cmd.Env.
func EnvList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// PlumbingEnv is the environment a child process (the code CLI, an MCP
// stdio server) inherits: process plumbing only, never the daemon's
// credentials — PATH, HOME, SHELL, TMPDIR, LANG, TERM and LC_*.
func PlumbingEnv() []string {
	var out []string
	for k, v := range Environ() {
		switch {
		case k == "PATH", k == "HOME", k == "SHELL", k == "TMPDIR", k == "LANG", k == "TERM", strings.HasPrefix(k, "LC_"):
			out = append(out, k+"="+v)
		}
	}
	sort.Strings(out)
	return out
}
