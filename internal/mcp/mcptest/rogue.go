package mcptest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// EnvRogue selects a misbehaving stdio peer instead of the SDK server: a
// hand-written newline-delimited JSON-RPC loop that can break the protocol
// in ways no SDK server would. Its value is a comma-separated list of
// behaviours (RogueSilent, …); the peer lists the tools of RogueTools
// (echo, hang, huge, exit) unless told otherwise.
const EnvRogue = "MCPTEST_ROGUE"

// Rogue behaviours.
const (
	RogueSilent       = "silent"        // reads stdin and never answers anything
	RogueBanner       = "banner"        // prints a non-JSON banner line on stdout before serving, and a debug line before each answer
	RogueGarbageCall  = "garbage_call"  // answers tools/call with a non-JSON line
	RogueExitListed   = "exit_listed"   // exits right after answering tools/list
	RogueStderrFlood  = "stderr_flood"  // writes megabytes to stderr before and during serving
	RogueDeaf         = "deaf"          // ignores SIGTERM and stdin EOF (only SIGKILL ends it)
	RogueGrandchild   = "grandchild"    // starts a sleeping grandchild that inherits its pipes
	RogueSchemas      = "schemas"       // lists tools with unusable or huge schemas next to good ones
	RogueEchoEnvToErr = "stderr_secret" // writes its MCPTEST_SECRET to stderr at start
	RogueListFlood    = "list_flood"    // announces tool changes; its flood tool sends 2,000 notifications/tools/list_changed
	RogueWedge        = "wedge"         // get_hang wedges the whole server: nothing is answered after it, ping included
)

// Env variables the rogue peer reads besides EnvRogue.
const (
	EnvRogueHugeBytes = "MCPTEST_HUGE_BYTES" // size of the huge tool's text (default 20 MiB)
	EnvRoguePIDFile   = "MCPTEST_PID_FILE"   // the peer (and its grandchild) append their pids here
	EnvRogueExtra     = "MCPTEST_EXTRA"      // comma-separated names of more tools, each answering like echo
)

// RogueTools are the tools the rogue peer lists: echo answers, hang never
// answers (and ignores cancellation), huge answers with EnvRogueHugeBytes
// of text on one line, exit exits mid-call, get_lists counts the
// tools/list requests it answered, flood floods (see RogueListFlood).
var RogueTools = []string{"echo", "get_hang", "get_huge", "exit_now", "get_lists", "flood"}

type rogueMsg struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// serveRogue runs the misbehaving peer on stdin/stdout until stdin ends.
func serveRogue(modes string) {
	has := map[string]bool{}
	for m := range strings.SplitSeq(modes, ",") {
		has[strings.TrimSpace(m)] = true
	}
	if f := os.Getenv(EnvRoguePIDFile); f != "" {
		appendLine(f, strconv.Itoa(os.Getpid()))
	}
	if has[RogueDeaf] {
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	}
	if has[RogueGrandchild] {
		// A grandchild that holds the child's stdout and stderr open and
		// outlives it unless its whole process group is ended.
		c := exec.CommandContext(context.Background(), "sleep", "300")
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		if c.Start() == nil {
			if f := os.Getenv(EnvRoguePIDFile); f != "" {
				appendLine(f, strconv.Itoa(c.Process.Pid))
			}
		}
	}
	if has[RogueEchoEnvToErr] {
		fmt.Fprintf(os.Stderr, "starting with token %s\n", os.Getenv(EnvSecret))
	}
	if has[RogueStderrFlood] {
		flood()
		go func() {
			for {
				flood()
				time.Sleep(10 * time.Millisecond)
			}
		}()
	}
	out := bufio.NewWriter(os.Stdout)
	send := func(v any) {
		b, _ := json.Marshal(v)
		// A peer whose stdout is gone has no one left to answer.
		_, _ = out.Write(b)
		_ = out.WriteByte('\n')
		_ = out.Flush()
	}
	if has[RogueBanner] {
		fmt.Fprintln(out, "Weather MCP server v0.1 listening on stdio")
		out.Flush()
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	lists := 0 // tools/list requests answered
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			if has[RogueDeaf] {
				for { // stdin closed: keep running anyway (a sleep, not select{}, which the runtime would call a deadlock)
					time.Sleep(time.Hour)
				}
			}
			os.Exit(0)
		}
		var m rogueMsg
		if json.Unmarshal(line, &m) != nil || len(m.ID) == 0 || has[RogueSilent] {
			continue // notifications, and everything when silent
		}
		reply := func(result any) { send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result}) }
		if has[RogueBanner] {
			fmt.Fprintln(out, "  debug: handling "+m.Method)
			out.Flush()
		}
		switch m.Method {
		case "initialize":
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			_ = json.Unmarshal(m.Params, &p)
			reply(map[string]any{"protocolVersion": p.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{"listChanged": has[RogueListFlood]}},
				"serverInfo": map[string]any{"name": "rogue", "version": "0"}})
		case "tools/list":
			lists++
			reply(map[string]any{"tools": rogueTools(has[RogueSchemas])})
			if has[RogueExitListed] {
				os.Exit(0)
			}
		case "tools/call":
			var p struct {
				Name      string         `json:"name"`
				Arguments map[string]any `json:"arguments"`
			}
			_ = json.Unmarshal(m.Params, &p)
			if has[RogueGarbageCall] {
				fmt.Fprintln(out, "<html><body>Internal error</body></html>")
				out.Flush()
				continue
			}
			switch p.Name {
			case "flood":
				for range 2000 {
					send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
				}
				reply(map[string]any{"content": []any{map[string]any{"type": "text", "text": "flooded"}}})
			case "get_lists":
				reply(map[string]any{"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("lists=%d", lists)}}})
			case "get_hang":
				if has[RogueWedge] {
					for { // stuck for good, still holding its pipes
						time.Sleep(time.Hour)
					}
				}
				continue // never answered
			case "exit_now":
				os.Exit(4)
			case "get_huge":
				n, _ := strconv.Atoi(os.Getenv(EnvRogueHugeBytes))
				if n <= 0 {
					n = 20 << 20
				}
				reply(map[string]any{"content": []any{map[string]any{"type": "text", "text": strings.Repeat("x", n)}}})
			default:
				reply(map[string]any{"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("%s: %v", p.Name, p.Arguments["text"])}}})
			}
		default:
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found: " + m.Method}})
		}
	}
}

func rogueTools(schemas bool) []any {
	obj := map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}
	var out []any
	for _, n := range RogueTools {
		out = append(out, map[string]any{"name": n, "description": "rogue " + n, "inputSchema": obj})
	}
	for n := range strings.SplitSeq(os.Getenv(EnvRogueExtra), ",") {
		if n != "" {
			out = append(out, map[string]any{"name": n, "description": "rogue extra " + n, "inputSchema": obj})
		}
	}
	if schemas {
		out = append(out,
			map[string]any{"name": "string_schema", "inputSchema": map[string]any{"type": "string"}},
			map[string]any{"name": "array_schema", "inputSchema": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}},
			map[string]any{"name": "bad_properties", "inputSchema": map[string]any{"type": "object", "properties": "nope"}},
			map[string]any{"name": "bad_required", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{}, "required": "x"}},
			map[string]any{"name": "huge_schema", "inputSchema": hugeSchema()},
			map[string]any{"name": "huge_description", "description": strings.Repeat("d", 200<<10), "inputSchema": obj},
			map[string]any{"name": "ok_no_props", "inputSchema": map[string]any{"type": "object"}},
		)
	}
	return out
}

func hugeSchema() map[string]any {
	props := map[string]any{}
	for i := range 5000 {
		props[fmt.Sprintf("field_%04d", i)] = map[string]any{"type": "string", "description": strings.Repeat("p", 100)}
	}
	return map[string]any{"type": "object", "properties": props}
}

func flood() {
	line := strings.Repeat("e", 200) + "\n"
	var b strings.Builder
	for range 5000 {
		b.WriteString(line)
	}
	_, _ = os.Stderr.WriteString(b.String())
}

func appendLine(path, s string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintln(f, s)
}
