// Drives bobby with the official TypeScript MCP client over stdio (the SDK
// spawns `bobby stdio` with the bootstrap variables) and over streamable HTTP
// (a running `bobby serve`, bearer in requestInit.headers). For each
// transport: initialize, tools/list in the default phase, runtime_info,
// workflow_start on a loopback fixture page, a11y_snapshot,
// toolset_select → notifications/tools/list_changed, a hidden tool still
// callable, the popup, browser-state and second-tier intent tools on
// families.html, and a schema violation as an isError tool result.
// Exits non-zero with a message on the first mismatch.
//
// Environment:
//   BOBBY_BIN            the built bobby binary (stdio run)
//   BOBBY_STDIO_HOME     HOME/TMPDIR for the stdio child
//   BOBBY_HTTP_URL       http://127.0.0.1:PORT/v1/mcp of a running `bobby serve`
//   BOBBY_HTTP_TOKEN     its bearer token
//   BOBBY_HTTP_EXPIRES   the credential's expires_at as configured (RFC 3339)
//   FIXTURE_URL          loopback page with a button "Go" and a link "Next"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const env = process.env;
for (const k of ["BOBBY_BIN", "BOBBY_HTTP_URL", "BOBBY_HTTP_TOKEN", "FIXTURE_URL"]) {
  if (!env[k]) {
    console.error(`FAIL: ${k} is not set`);
    process.exit(2);
  }
}

class Mismatch extends Error {}

function check(cond, msg) {
  if (!cond) throw new Mismatch(msg);
}

const short = (v) => {
  const s = JSON.stringify(v);
  return s && s.length > 1500 ? s.slice(0, 1500) + "…" : s;
};

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Mismatch(`${what}: nothing within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

const FORM_LOOP = ["workflow_start", "workflow_observe", "intent_complete_form", "intent_submit_and_verify"];

// call runs a tool and returns its result; the SDK validates
// structuredContent against the tool's outputSchema on success.
async function call(client, name, args) {
  return withTimeout(client.callTool({ name, arguments: args ?? {} }), 60000, `tools/call ${name}`);
}

async function ok(client, name, args) {
  const res = await call(client, name, args);
  const sc = res.structuredContent;
  check(!res.isError && sc && sc.status === "completed", `${name} did not complete: ${short(res)}`);
  return sc;
}

async function toolNames(client) {
  const res = await withTimeout(client.listTools(), 30000, "tools/list");
  return new Set(res.tools.map((t) => t.name));
}

async function scenario(label, transport, expect) {
  const client = new Client({ name: "bobby-ts-test", version: "1.0.0" });
  let changed = 0;
  let wake = null;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    changed++;
    if (wake) wake();
  });
  const nextChange = (ms) =>
    new Promise((resolve, reject) => {
      if (changed > 0) return resolve();
      const timer = setTimeout(() => reject(new Mismatch(`no notifications/tools/list_changed within ${ms} ms`)), ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  try {
    // initialize
    await withTimeout(client.connect(transport), 30000, "initialize");
    const server = client.getServerVersion();
    check(server && server.name, `initialize: no serverInfo: ${short(server)}`);
    const caps = client.getServerCapabilities();
    check(caps?.tools?.listChanged === true, `initialize: tools.listChanged not advertised: ${short(caps)}`);
    check(caps?.resources && caps?.prompts, `initialize: resources/prompts not advertised: ${short(caps)}`);

    // tools/list in the default phase (explore)
    const listed = await withTimeout(client.listTools(), 30000, "tools/list");
    const names = new Set(listed.tools.map((t) => t.name));
    for (const n of FORM_LOOP) check(names.has(n), `explore phase lacks form-loop tool ${n}: ${[...names]}`);
    check(names.has("a11y_snapshot") && names.has("toolset_select"), `explore lacks a11y_snapshot/toolset_select: ${[...names]}`);
    check(!names.has("click"), `click (act phase) is listed in explore: ${[...names]}`);
    for (const t of listed.tools) {
      check(t.title || t.annotations?.title, `tool ${t.name} has no title`);
      check(t.inputSchema?.type === "object" && t.outputSchema?.type === "object", `tool ${t.name} lacks input/output schemas`);
      const a = t.annotations ?? {};
      for (const h of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"]) {
        check(typeof a[h] === "boolean", `tool ${t.name} annotation ${h} = ${a[h]}`);
      }
    }

    // runtime_info
    const info = await ok(client, "runtime_info");
    check(info.principal === expect.principal, `runtime_info.principal = ${info.principal}, want ${expect.principal}`);
    check(info.phase === "explore", `runtime_info.phase = ${info.phase}`);
    const granted = new Set(info.grantedCapabilities ?? []);
    for (const c of expect.caps) check(granted.has(c), `runtime_info.grantedCapabilities lacks ${c}: ${short(info.grantedCapabilities)}`);
    if (expect.expiresAt) {
      check(Date.parse(info.credentialExpiresAt) === Date.parse(expect.expiresAt),
        `runtime_info.credentialExpiresAt = ${info.credentialExpiresAt}, want ${expect.expiresAt}`);
    }

    // workflow_start on the loopback fixture
    const start = await ok(client, "workflow_start", { profile: "default", url: env.FIXTURE_URL });
    check(/^wf_[0-9a-f]{32}$/.test(start.workflowHandle ?? ""), `workflow_start handle = ${start.workflowHandle}`);
    const handle = start.workflowHandle;

    // a11y_snapshot names the fixture's controls
    const snap = await ok(client, "a11y_snapshot", { workflowHandle: handle });
    const text = snap.evidence?.accessibility?.text ?? "";
    check(text.includes('button "Go"'), `a11y_snapshot lacks button "Go": ${short(snap)}`);
    check(text.includes('link "Next"'), `a11y_snapshot lacks link "Next": ${short(snap)}`);
    check(text.includes("textbox"), `a11y_snapshot lacks the textbox: ${short(snap)}`);

    // toolset_select to act → exactly this session gets list_changed
    const before = changed;
    const sel = await ok(client, "toolset_select", { phase: "act" });
    await nextChange(10000);
    check(changed > before, "list_changed counter did not move");
    const actNames = await toolNames(client);
    check(actNames.has("click") && !actNames.has("intent_complete_form"), `act phase tools: ${[...actNames]}`);
    const info2 = await ok(client, "runtime_info");
    check(info2.phase === "act", `runtime_info.phase after toolset_select = ${info2.phase} (${short(sel)})`);

    // A tool hidden by the phase stays callable: form_snapshot is not in act.
    check(!actNames.has("form_snapshot"), `form_snapshot listed in act: ${[...actNames]}`);
    const forms = await ok(client, "form_snapshot", { workflowHandle: handle });
    check(short(forms).includes("Search"), `form_snapshot (hidden in act) lacks the Search field: ${short(forms)}`);
    await ok(client, "click", { workflowHandle: handle, target: { role: "button", name: "Go" } });
    const waited = await ok(client, "wait_for", {
      workflowHandle: handle,
      condition: { kind: "text", matcher: { kind: "exact", value: "clicked plain" }, selector: "#msg" },
    });
    check(waited.status === "completed", `wait_for after click: ${short(waited)}`);

    await families(client, handle);

    // A schema violation is an isError tool result, not a protocol error,
    // naming the schema location and keyword.
    const bad = await call(client, "session_create", {});
    const sv = bad.structuredContent ?? {};
    check(bad.isError === true, `session_create without profile: isError = ${bad.isError}: ${short(bad)}`);
    check(sv.reason === "schemaViolation" && sv.pointer === "/profile" && sv.constraint === "required",
      `session_create without profile: ${short(sv)}`);
    check(sv.repair?.doc === "bobby://failure-taxonomy#schemaViolation", `repair hint: ${short(sv.repair)}`);
    // …and never echoes the submitted value.
    const secret = "sometimes-9f3c";
    const bad2 = await call(client, "session_create", { profile: "default", executionPolicy: { javascriptEvaluation: secret } });
    const sv2 = bad2.structuredContent ?? {};
    check(bad2.isError === true && sv2.reason === "schemaViolation" && typeof sv2.pointer === "string" && typeof sv2.constraint === "string",
      `bad executionPolicy: ${short(bad2)}`);
    check(!JSON.stringify(bad2).includes(secret), `schemaViolation echoes the submitted value: ${short(bad2)}`);

    const closed = await ok(client, "session_close", { sessionId: start.sessionId });
    check(closed.status === "completed", "session_close");
    console.log(`${label}: ok (server ${server.name} ${server.version}, ${listed.tools.length} tools in explore, ${changed} list_changed)`);
  } finally {
    await client.close().catch(() => {});
  }
}

// families exercises the popup, browser-state and second-tier intent tools
// on families.html (beside FIXTURE_URL): each completes and its result
// carries the evidence a next call needs. The SDK checks each
// structuredContent against the tool's outputSchema.
async function families(client, handle) {
  const page = env.FIXTURE_URL.replace(/index\.html$/, "families.html");
  await ok(client, "navigate", { workflowHandle: handle, url: page });
  const dis = await ok(client, "intent_dismiss_obstruction", { workflowHandle: handle });
  check(dis.evidence?.obstructions?.dismissed === 1, `intent_dismiss_obstruction: ${short(dis)}`);
  const pop = await ok(client, "click_and_wait_for_popup", { workflowHandle: handle, selector: "#open" });
  const popupId = pop.evidence?.popup?.pageId;
  const pages = await ok(client, "page_list", { sessionId: pop.sessionId });
  check(popupId && short(pages).includes(popupId), `click_and_wait_for_popup: popup not in page_list: ${short(pop)} ${short(pages)}`);
  const em = await ok(client, "emulate", { workflowHandle: handle, device: "Pixel 7", locale: "de-DE" });
  check(em.evidence?.emulation?.viewport?.width === 412, `emulate: ${short(em)}`);
  await ok(client, "cookie_set", { workflowHandle: handle, cookies: [{ name: "ts", value: "1", url: page }] });
  const got = await ok(client, "cookie_get", { workflowHandle: handle, name: "ts" });
  check(got.evidence?.count === 1, `cookie_get: ${short(got)}`);
  const del = await ok(client, "cookie_delete", { workflowHandle: handle, name: "ts" });
  check(del.evidence?.deleted === 1, `cookie_delete: ${short(del)}`);
  const net = await ok(client, "network_log", { workflowHandle: handle, types: ["Document"] });
  check((net.evidence?.network?.entries ?? []).some((e) => e.url === page && e.status === 200), `network_log: ${short(net)}`);
  const ex = await ok(client, "intent_extract", { workflowHandle: handle, selector: "#prices" });
  check(ex.evidence?.extraction?.kind === "table" && ex.evidence.extraction.rows?.length === 2, `intent_extract: ${short(ex)}`);
  await ok(client, "intent_wait_for_state", {
    workflowHandle: handle,
    conditions: [{ kind: "url", matcher: { kind: "contains", value: "families" } }, { kind: "networkQuiet", idleMs: 100 }],
  });
  await ok(client, "a11y_snapshot", { workflowHandle: handle });
  const nb = await ok(client, "context_neighbors", { workflowHandle: handle, question: "Back to the fixture link" });
  check(nb.neighborhood?.node?.role === "link", `context_neighbors: ${short(nb)}`);
  const fo = await ok(client, "intent_follow", { workflowHandle: handle, selector: "#next" });
  check(fo.evidence?.follow?.outcome === "navigated", `intent_follow: ${short(fo)}`);
}

let failed = false;
const runs = [
  [
    "stdio",
    () =>
      new StdioClientTransport({
        command: env.BOBBY_BIN,
        args: ["stdio"],
        env: {
          PATH: env.PATH ?? "/usr/bin:/bin",
          HOME: env.BOBBY_STDIO_HOME ?? env.HOME ?? "/tmp",
          TMPDIR: env.BOBBY_STDIO_HOME ?? "/tmp",
          AUTOMATION_RUNTIME_BOOTSTRAP_PRINCIPAL: "agent",
          AUTOMATION_RUNTIME_BOOTSTRAP_CAPABILITIES: "browser:mutate,page:read",
        },
        stderr: "inherit",
      }),
    { principal: "agent", caps: ["browser:mutate", "page:read"] },
  ],
  [
    "http",
    () =>
      new StreamableHTTPClientTransport(new URL(env.BOBBY_HTTP_URL), {
        requestInit: { headers: { Authorization: `Bearer ${env.BOBBY_HTTP_TOKEN}` } },
      }),
    { principal: "tsclient", caps: ["browser:mutate", "page:read"], expiresAt: env.BOBBY_HTTP_EXPIRES },
  ],
];
const only = env.BOBBY_TRANSPORTS ? new Set(env.BOBBY_TRANSPORTS.split(",")) : null;
for (const [label, make, expect] of runs) {
  if (only && !only.has(label)) continue;
  try {
    await scenario(label, make(), expect);
  } catch (e) {
    failed = true;
    console.error(`FAIL ${label}: ${e instanceof Mismatch ? e.message : e?.stack ?? e}`);
  }
}
process.exit(failed ? 1 : 0);
