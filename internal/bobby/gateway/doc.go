// Package gateway is bobby's MCP surface: the tool table, capability
// gating, phases, argument validation, command envelopes and outcomes,
// workflow handles, retained context, resources, prompts, and the two
// transports (stdio and streamable HTTP), over the browser runtime of
// package browser and the snapshot/form engines of packages snapshot and
// form.
//
// # Engines
//
// The tools reach the browser through the engine seam (engine.go): Chromium
// (package browser, over CDP) or Firefox (package firefox, over WebDriver
// BiDi), chosen by [browser] engine. Each tool of the table declares the
// engines it runs on; on another engine tools/list leaves it out and a call
// (or a command_execute envelope of its kind) answers unsupportedOnEngine
// with the reason. Results are the browser package's types on both
// engines, so a tool answers in the same shape wherever it runs.
//
// # Sessions, principals, servers
//
// Every MCP session gets its own *mcp.Server (stdio has one; streamable
// HTTP creates one per Mcp-Session-Id through the SDK's getServer
// callback), so tools/list and notifications/tools/list_changed are per
// session and per principal. The server registers the tools the
// principal's capabilities allow; a receiving middleware filters tools/list
// by phase and answers every tools/call itself, so a tool hidden by the
// phase stays callable and every call re-checks the caller's capabilities
// (HTTP: the bearer of that very request). toolset_select re-registers one
// tool, so the SDK sends exactly one list_changed, to this session only.
// Each MCP session also has its own workflow-handle registry: a new
// initialize (a new session) never sees the handles of another. Browser sessions and pages belong to the principal that created
// them; anyone else gets notFound, the same answer as for an unknown ID.
//
// Protocol versions 2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05 are
// negotiated through initialize; an accepted initialize starts a new
// generation of the session's handle registry. 2026-07-28 has no
// initialize and no MCP session: over stdio the process is the context
// (everything works as with initialize); over HTTP the SDK serves it only
// statelessly, on one context per principal shared by its 2026-07-28
// clients, where toolset_select is refused (see statelessContexts).
//
// # Capabilities
//
// Static requirements decide advertisement and are re-checked per call;
// dynamic ones depend on the arguments. Served as bobby://capabilities,
// derived from the tool table (table.go), which is the authority; this
// summary is for reading.
//
//	tool                      capability         dynamic                                  phases
//	session_create            -                  fingerprint/humanize/zigzagzig caps      all
//	session_list              -                                                           all
//	session_close             -                                                           all
//	page_open                 -                  url → browser:mutate                      all
//	page_close                -                                                           all
//	page_list                 -                                                           all
//	page_activate             -                                                           all
//	runtime_info              -                                                           all
//	toolset_select            -                                                           all
//	workflow_start            browser:mutate                                              all
//	workflow_observe          browser:mutate     includeForms → page:read                  all
//	navigate                  browser:mutate                                              explore act
//	click                     browser:mutate                                              act
//	type_text                 browser:mutate                                              act
//	a11y_snapshot             page:read                                                   explore act verify
//	form_snapshot             page:read                                                   explore intent verify
//	control_action            browser:mutate     setFiles → file:upload                    act intent
//	wait_for                  page:read                                                   act intent verify
//	screenshot                artifact:capture   (artifact:// read needs artifact:read)    verify
//	inspect                   page:read                                                   verify
//	extract_structured        page:read                                                   verify
//	context_ask               page:read                                                   explore intent verify
//	evaluate_javascript       browser:mutate     session executionPolicy.javascriptEvaluation act
//	dialog                    browser:mutate                                              act
//	intent_locate             page:read                                                   intent
//	intent_fill               browser:mutate                                              intent
//	intent_complete_form      browser:mutate                                              explore intent
//	intent_submit_and_verify  browser:mutate                                              explore intent
//	click_and_wait_for_popup  browser:mutate                                              act
//	upload_files              file:upload        also browser:mutate                       act intent
//	download_url              browser:mutate     artifact:capture → artifact:// resource   act verify
//	pdf                       artifact:capture   (artifact:// read needs artifact:read)    verify
//	emulate                   browser:mutate                                              act
//	cookie_get                page:read                                                   act verify
//	cookie_set                browser:mutate                                              act
//	cookie_delete             browser:mutate                                              act
//	network_log               page:read                                                   act verify
//	context_neighbors         page:read                                                   intent verify
//	intent_follow             browser:mutate                                              intent
//	intent_extract            page:read                                                   intent verify
//	intent_wait_for_state     page:read                                                   intent verify
//	intent_dismiss_obstruction browser:mutate                                             intent
//	command_execute           -                  the capability of the envelope's kind     act
//
// "-" means any authenticated principal. browser:fingerprint and
// browser:humanize gate the execution-policy flags of the same names; the
// godmode flag zigzagzig (both at once) is advertised only to principals
// holding both. Both flags change what pages see (see runtimeFeatures):
// humanize, the pointer path and typing cadence; fingerprint, a coherent
// persona per profile. visionAssist is refused (visionAssistFailed): no
// vision provider is wired, and runtime_info lists no vision feature.
//
// # Tool listing
//
// Every tool is one entry of the tool table (table.go): name, title,
// annotations, capability, phases, argument schema, typed arguments and
// typed result. The listing, the resources below, the workflowHandle
// allowlist and command_execute's kinds are derived from it.
//
// tools/list advertises abridged schemas (see advertised): no length,
// range or count bounds, a semantic target as one compact object, an
// output schema of the result type's top-level properties and their types
// ({"type":"object"} alone in the explore phase, the budgeted startup
// listing), and in the explore phase no workflowId, evidenceDetail,
// timeoutMs or idempotencyKey, and workflow_start's executionPolicy
// pointing at session_create's. Every call is still validated against the
// full schemas, which bobby://schemas publishes with the full output
// schemas generated from the result types.
//
// # Results
//
// Arguments are validated with github.com/google/jsonschema-go against
// schemas resolved at startup (validate.go says how its errors become
// {pointer, constraint}).
//
// Command tools (the flat browser tools, intent_* and command_execute) build
// an envelope with a server-generated commandId and deadline and return a
// CommandOutcome {status, commandId, workflowId, sessionId, pageId, kind,
// evidence, error{code, message, repair{action, doc}}}. A status other than
// completed sets isError. evidenceDetail "compact" (the default) leaves
// timings out and never attaches a snapshot to an action; "full" adds
// diagnostics and structured snapshot nodes, and its text content is the
// header line followed by the whole structuredContent JSON. Arguments are validated here,
// not by the SDK: a violation is a tool error whose structuredContent holds
// {reason:"schemaViolation", pointer, constraint} naming the schema location
// and keyword, never the submitted value; a malformed request (non-object
// arguments, unknown tool) is JSON-RPC -32602 with the same data.
//
// structuredContent is the whole typed result. The text content is what a
// model reads (hosts forward it, not structuredContent), so it is a compact
// rendering, never the JSON again: a header line "<status> <tool>" with only
// the ids a next call needs (a workflowHandle with the sessionId, pageId and
// workflowId it stands for, the id of a session or page just created, a
// minted workflowId, a page picked as the active one; never commandId),
// the scalar evidence on that line ("; ref=e12; networkQuiet=true;
// page=<url> (complete)"), then "error <code>[ at <pointer> (<constraint>)]:
// <message>" and "repair: <action> <doc>" on failure, form evidence one
// fact per line (formtext.go: "Plan = Team", "Password = (13 chars)",
// "Team name = Acme (revealed and filled) [ref=e7]", an "invalid …" line
// per failed constraint, "verified by button "Sign up" [ref=e9]: navigated
// to <url> (POST 200 Document)", a form snapshot as one line per form and
// control; never a password or file path), one line of compact JSON per
// other object or list of evidence, and last, unescaped, the snapshot
// text of a11y_snapshot or workflow_observe (the header carries the page
// title, URL and node count).
// A completed screenshot also carries its PNG as image content, for a
// principal holding artifact:read: hosts show content to the model and
// rarely read artifact:// resources.
//
// # Lifetimes
//
// Under `bobby serve` browser sessions are bounded (reaper.go): past
// [http] max_sessions the least recently used is closed, and one idle for
// [http] idle_timeout is swept; runtime_info reports the counts. A request
// before initialize answers -32002 (stdio) or HTTP 400 with -32600 (no
// Mcp-Session-Id). The stdio bridge (bridge.go) re-initializes once when
// the server lost its MCP session and otherwise exits non-zero.
//
// # Resources and prompts
//
// bobby://failure-taxonomy (every code: meaning, repair, retry rule),
// bobby://capabilities (the table above), bobby://phases (phase → tools),
// bobby://schemas (every tool's input/output schema and each envelope
// kind's input), artifact://{id} for screenshots, PDFs and downloads, and
// bobby://checkpoints/{commandId} for the caller's recorded checkpoints
// (checkpoint.go: files under [browser] data_dir that outlast a restart,
// pruned after a week). Prompts:
// fill_and_submit_form, extract_from_page, recover_workflow, each taking
// sessionId and pageId.
package gateway
