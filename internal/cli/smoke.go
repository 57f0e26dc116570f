package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/deltaharness/delta/internal/clip"
	"github.com/deltaharness/delta/internal/config"
)

// smokeCommand runs the production acceptance checks against a deployed
// daemon: liveness and version, one real run that must end "completed"
// (a terminal failure is a valid Responses object with HTTP 200, so the
// status is what counts), the inspection view of the configuration and of
// that run. It prints one line per check and SMOKE_RUN_ID=<id> last, so a
// collector can be checked for the run's events afterwards.
type smokeCommand struct{ env }

// SmokeFailure names the check that failed and why.
type SmokeFailure struct {
	Check  string // healthz, response, config, run
	Reason string
}

func (f *SmokeFailure) Error() string { return "smoke: " + f.Check + ": " + f.Reason }

// defaultSmokeInput asks for an answer without side effects.
const defaultSmokeInput = "This is a deployment smoke check. Reply with one short sentence saying you are ready; do not change any file."

func (c *smokeCommand) Run(ctx context.Context, args []string) error {
	fs := newFlagSet("smoke")
	const synopsis = "[--url URL] [--timeout D]   (DELTA_URL, DELTA_CONTROL_TOKEN, DELTA_INSPECT_TOKEN, SMOKE_INPUT, SMOKE_TOOL)"
	urlFlag := fs.String("url", "", "daemon base URL (default DELTA_URL)")
	timeout := fs.Duration("timeout", 5*time.Minute, "bound on the whole check, the run included")
	if err := parseFlags(fs, c.env, synopsis, args, ""); err != nil {
		return helpOK(err)
	}
	sc, err := config.LoadSmoke(c.lookup)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	if *timeout <= 0 {
		return usageFor(c.env, fs, synopsis, "--timeout %s: want a positive duration, e.g. 5m", *timeout)
	}
	if *urlFlag != "" {
		// Held to DELTA_URL's rule, which LoadSmoke applied to the variable.
		if err := config.CheckBaseURL(*urlFlag); err != nil {
			return usageFor(c.env, fs, synopsis, "--url %q: %v", config.RedactUserinfo(*urlFlag), err)
		}
		sc.URL = *urlFlag
	}
	if sc.URL == "" {
		return usageFor(c.env, fs, synopsis, "no daemon: set DELTA_URL or pass --url")
	}
	if sc.Input == "" {
		sc.Input = defaultSmokeInput
		if sc.Tool != "" {
			sc.Input = "Call " + sc.Tool + " once using read-only smoke-test arguments, then report its result and the exact tool name."
		}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	s := &smoke{cfg: sc, base: strings.TrimRight(sc.URL, "/"), http: &http.Client{}, out: c.stdout}
	return s.run(ctx)
}

type smoke struct {
	cfg  config.Smoke
	base string
	http *http.Client
	out  io.Writer
}

func (s *smoke) run(ctx context.Context) error {
	// Liveness and build identity.
	var health struct {
		OK      bool   `json:"ok"`
		Version string `json:"version"`
		Build   string `json:"build"`
	}
	if err := s.get(ctx, "healthz", "/healthz", "", &health); err != nil {
		return err
	}
	if !health.OK || health.Version == "" {
		return &SmokeFailure{"healthz", fmt.Sprintf("answer has ok=%v version=%q", health.OK, health.Version)}
	}
	s.pass("healthz", "version %s build %s", health.Version, orNone(health.Build))

	// One synchronous run through the model (and the tool, when named).
	body, _ := json.Marshal(map[string]any{"input": s.cfg.Input})
	var resp struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Error  *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		OutputText string `json:"output_text"`
	}
	if err := s.do(ctx, "response", http.MethodPost, "/v1/responses", s.cfg.ControlToken, body, &resp); err != nil {
		return err
	}
	if resp.ID == "" {
		return &SmokeFailure{"response", "answer has no id"}
	}
	if resp.Status != "completed" {
		reason := fmt.Sprintf("run %s ended with status %q, want \"completed\"", resp.ID, resp.Status)
		if resp.Error != nil {
			reason += ": " + strings.TrimSpace(resp.Error.Code+" "+resp.Error.Message)
		}
		fmt.Fprintf(s.out, "SMOKE_RUN_ID=%s\n", resp.ID)
		return &SmokeFailure{"response", reason}
	}
	s.pass("response", "run %s completed: %s", resp.ID, clipLine(resp.OutputText, 120))

	// The configuration as the daemon sees it.
	var dc struct {
		Version       string `json:"version"`
		Build         string `json:"build"`
		SchemaVersion int    `json:"schema_version"`
		Model         struct {
			Primary string `json:"primary"`
		} `json:"model"`
		MCPServers json.RawMessage `json:"mcp_servers"`
		Tools      struct {
			MCP     []string `json:"mcp"`
			Builtin struct {
				Registered []string `json:"registered"`
			} `json:"builtin"`
		} `json:"tools"`
		Credentials map[string]bool `json:"credentials"`
	}
	if err := s.get(ctx, "config", "/v1/dev/config", s.cfg.InspectToken, &dc); err != nil {
		return err
	}
	if dc.Version != health.Version || dc.Build != health.Build {
		return &SmokeFailure{"config", fmt.Sprintf("version %s build %q differs from /healthz (%s, %q)", dc.Version, dc.Build, health.Version, health.Build)}
	}
	if s.cfg.Tool != "" && !slices.Contains(dc.Tools.MCP, s.cfg.Tool) && !slices.Contains(dc.Tools.Builtin.Registered, s.cfg.Tool) {
		return &SmokeFailure{"config", fmt.Sprintf("tool %s is not registered (MCP tools: %s)", s.cfg.Tool, orNone(strings.Join(dc.Tools.MCP, ", ")))}
	}
	var present []string
	for k, v := range dc.Credentials {
		if v {
			present = append(present, k)
		}
	}
	slices.Sort(present)
	s.pass("config", "model %s, schema %d, %d MCP tools, credentials present: %s",
		dc.Model.Primary, dc.SchemaVersion, len(dc.Tools.MCP), orNone(strings.Join(present, ", ")))

	// The run as inspection recorded it.
	var run struct {
		Task struct {
			Status string `json:"status"`
		} `json:"task"`
		Journal []struct {
			Name    string `json:"name"`
			IsError bool   `json:"is_error"`
		} `json:"journal"`
	}
	if err := s.get(ctx, "run", "/v1/dev/runs/"+resp.ID, s.cfg.InspectToken, &run); err != nil {
		return err
	}
	if run.Task.Status != "done" {
		return &SmokeFailure{"run", fmt.Sprintf("run %s is %q in inspection, want done", resp.ID, run.Task.Status)}
	}
	detail := fmt.Sprintf("run %s recorded, %d tool calls", resp.ID, len(run.Journal))
	if s.cfg.Tool != "" {
		ok := slices.ContainsFunc(run.Journal, func(j struct {
			Name    string `json:"name"`
			IsError bool   `json:"is_error"`
		}) bool {
			return j.Name == s.cfg.Tool && !j.IsError
		})
		if !ok {
			return &SmokeFailure{"run", fmt.Sprintf("run %s made no successful call of %s", resp.ID, s.cfg.Tool)}
		}
		detail += ", " + s.cfg.Tool + " succeeded"
	}
	s.pass("run", "%s", detail)
	fmt.Fprintf(s.out, "SMOKE_RUN_ID=%s\n", resp.ID)
	return nil
}

func (s *smoke) pass(check, format string, a ...any) {
	fmt.Fprintf(s.out, "ok   %-8s %s\n", check, fmt.Sprintf(format, a...))
}

func (s *smoke) get(ctx context.Context, check, path, token string, into any) error {
	return s.do(ctx, check, http.MethodGet, path, token, nil, into)
}

// do sends one request and decodes a 2xx JSON answer into into; anything
// else is a SmokeFailure of check.
func (s *smoke) do(ctx context.Context, check, method, path, token string, body []byte, into any) error {
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, bytes.NewReader(body))
	if err != nil {
		return &SmokeFailure{check, err.Error()}
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.http.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return &SmokeFailure{check, method + " " + path + ": timed out (see --timeout)"}
		}
		return &SmokeFailure{check, fmt.Sprintf("%s %s: %v", method, path, err)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return &SmokeFailure{check, fmt.Sprintf("%s %s: read answer: %v", method, path, err)}
	}
	if resp.StatusCode/100 != 2 {
		reason := fmt.Sprintf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, clipLine(string(b), 300))
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			reason += " (" + tokenHint(path) + ")"
		}
		return &SmokeFailure{check, reason}
	}
	if err := json.Unmarshal(b, into); err != nil {
		return &SmokeFailure{check, fmt.Sprintf("%s %s: answer is not the expected JSON: %v", method, path, err)}
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// clipLine keeps the first line of s, at most n runes, for one-line output.
func clipLine(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return clip.Runes(s, n)
}
