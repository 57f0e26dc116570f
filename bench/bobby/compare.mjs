// compare.mjs runs bobby and @playwright/mcp side by side through the same
// official TypeScript MCP client (stdio for both) on the same fixture pages,
// served by a small static server in this script on 127.0.0.1, and prints
// the figures of issue 7:
//   (a) tools/list bytes in the default phase,
//   (b) snapshot bytes for the same page, with the actionable coverage
//       (buttons, links, text inputs, checkboxes, comboboxes) each reports,
//   (c) click → settled-outcome latency (median of CLICKS clicks on a button
//       whose handler fetches /api/items with a server delay of API_DELAY_MS),
//   (d) session start time (spawn → first navigation ready),
//   (e) the signup form loop (observe → fill → submit, verified; the Team
//       plan reveals a Team name field): content text bytes over the calls
//       each runtime needs, and whether the password is echoed,
//   (f) a 120-card catalogue: snapshot content text bytes and how many
//       cards' buttons the text makes targetable (name and ref).
// Byte counts are UTF-8 bytes. Two are reported for tool results: the
// whole JSON-RPC `result` (content + structuredContent), and the content
// text, which is what a host forwards to the model (delta, Claude and most
// hosts send content, not structuredContent, when both are present). The
// ≤ 0.5× goal of (b) and the click answer is on the content text: it is
// what the agent pays for in tokens. structuredContent is the typed contract
// a client program validates; it stays whole, so the whole result is larger.
//
// bobby runs twice: on Chromium, and on Firefox ESR over WebDriver BiDi
// (a config file with [browser] engine = "firefox"), as a third column; a
// figure whose tools Firefox does not run prints n/a with the reason.
//
// Environment: BOBBY_BIN (required), PEERS_DIR (default ../../test/peers),
// CHROMIUM (default /usr/bin/chromium), FIREFOX (default
// /usr/bin/firefox-esr; without it the Firefox column is left out), CLICKS (default 15), API_DELAY_MS
// (default 50), RESULT_JSON (optional path for the raw figures).
import { createServer } from "node:http";
import { readFile, mkdtemp, writeFile, rm } from "node:fs/promises";
import { existsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { performance } from "node:perf_hooks";

const here = path.dirname(fileURLToPath(import.meta.url));
const env = process.env;
const peers = path.resolve(env.PEERS_DIR ?? path.join(here, "..", "..", "test", "peers"));
const sdk = (p) => import(pathToFileURL(path.join(peers, "node_modules", "@modelcontextprotocol", "sdk", "dist", "esm", p)).href);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");

const BOBBY_BIN = env.BOBBY_BIN;
const CHROMIUM = env.CHROMIUM ?? "/usr/bin/chromium";
const FIREFOX = env.FIREFOX ?? "/usr/bin/firefox-esr";
const CLICKS = Number(env.CLICKS ?? 15);
const WARMUP = 2;
const WARM_STARTS = 5;
const API_DELAY_MS = Number(env.API_DELAY_MS ?? 50);
if (!BOBBY_BIN) {
  console.error("compare.mjs: BOBBY_BIN is not set");
  process.exit(2);
}

function fail(msg) {
  throw new Error(msg);
}
const bytes = (v) => Buffer.byteLength(JSON.stringify(v), "utf8");
const ms = (a, b) => b - a;
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};
const text = (res) => (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");

// --- fixture server -------------------------------------------------------
const fixtures = path.join(here, "fixtures");
// Pages the Go tests also load are served from their testdata, so the
// benchmark and the tests measure the same bytes.
const repo = path.join(here, "..", "..");
const shared = {
  "catalog.html": path.join(repo, "internal", "bobby", "snapshot", "testdata", "catalog.html"),
  "signup.html": path.join(repo, "internal", "bobby", "pagetest", "pages", "signup.html"),
  "welcome.html": path.join(repo, "internal", "bobby", "pagetest", "pages", "welcome.html"),
};
const server = createServer(async (req, res) => {
  const url = new URL(req.url, "http://x");
  if (url.pathname === "/api/items") {
    await new Promise((r) => setTimeout(r, API_DELAY_MS));
    res.writeHead(200, { "content-type": "application/json", "cache-control": "no-store" });
    res.end(JSON.stringify({ n: Number(url.searchParams.get("n")), items: ["a", "b", "c"] }));
    return;
  }
  const name = path.basename(url.pathname === "/" ? "shop.html" : url.pathname);
  try {
    const body = await readFile(shared[name] ?? path.join(fixtures, name));
    res.writeHead(200, { "content-type": name.endsWith(".html") ? "text/html; charset=utf-8" : "application/octet-stream" });
    res.end(body);
  } catch {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(`<!doctype html><title>${name}</title><h1>${name}</h1>`);
  }
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const base = `http://127.0.0.1:${server.address().port}`;
const PAGE = `${base}/shop.html`;
const SIGNUP = `${base}/signup.html`;
const CATALOG = `${base}/catalog.html`;
// The password of the form loop: no result text may contain it.
const SECRET = "correct-horse";
// Cards in catalog.html, each with one "Add … to cart" button.
const CARDS = 120;

// --- actionable coverage ---------------------------------------------------
// Both snapshots print one node per line as `role "name"`; count the roles an
// agent acts on. searchbox counts as a text input.
const ROLES = { button: /\bbutton "/g, link: /\blink "/g, textbox: /\b(textbox|searchbox)\b/g, checkbox: /\bcheckbox\b/g, combobox: /\bcombobox\b/g };
// bobby renders a run of same-shaped items as a header naming the cells'
// roles, `N × listitem (link [h3] | text | button):`, then one `- cell |
// cell` line per item; those rows are expanded back to `role cell` first.
function expandItems(snapshotText) {
  const out = [];
  let roles = null;
  for (const l of snapshotText.split("\n")) {
    const head = l.match(/^\s*\d+ × (?:\S+ )?\((.*)\):$/);
    if (head) {
      roles = head[1].split(" | ").map((r) => r.split(" ")[0]);
      continue;
    }
    const row = roles && l.match(/^\s*- (.*)$/);
    if (row) {
      row[1].split(" | ").forEach((c, i) => out.push(`${roles[i] ?? "cell"} ${c}`));
      continue;
    }
    roles = null;
    out.push(l);
  }
  return out.join("\n");
}
function coverage(snapshotText) {
  const out = {};
  const t = expandItems(snapshotText);
  for (const [k, re] of Object.entries(ROLES)) out[k] = (t.match(re) ?? []).length;
  return out;
}

// --- the two runtimes, behind one shape ------------------------------------
const work = await mkdtemp(path.join(tmpdir(), "bobby-bench-"));
const playwright = (label, extraArgs) => ({
    label,
    transport: () =>
      new StdioClientTransport({
        command: process.execPath,
        args: [
          path.join(peers, "node_modules", "@playwright", "mcp", "cli.js"),
          "--executable-path", CHROMIUM, "--headless", "--isolated", "--no-sandbox",
          "--output-dir", path.join(work, "pw-out"),
          ...extraArgs,
        ],
        cwd: work,
        env: { PATH: env.PATH, HOME: work, PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: "1" },
        stderr: "pipe",
      }),
    async navigate(c, url) {
      const r = await c.callTool({ name: "browser_navigate", arguments: { url } });
      if (r.isError) fail(`browser_navigate: ${text(r)}`);
      return {};
    },
    async snapshots(c) {
      const r = await c.callTool({ name: "browser_snapshot", arguments: {} });
      if (r.isError) fail(`browser_snapshot: ${text(r)}`);
      return [{ name: "browser_snapshot", result: r, text: text(r) }];
    },
    // One browser_click: Playwright clicks, sleeps the settle time, waits for
    // the requests the click started, sleeps again, and snapshots the page
    // (0.0.83 writes it to --output-dir and links it from the answer).
    async click(c, ctx, k) {
      const ref = ctx.ref ?? (ctx.ref = (ctx.snapText.match(/button "Load data" \[ref=(e\d+)\]/) ?? [])[1]);
      if (!ref) fail("no ref for the Load data button in Playwright's snapshot");
      const r = await c.callTool({ name: "browser_click", arguments: { element: "Load data button", target: ref } });
      if (r.isError) fail(`browser_click: ${text(r)}`);
      return { observed: text(r).includes(`loaded ${k}`), bytes: bytes(r), result: r };
    },
    // When the click's answer does not show the outcome yet, wait for it.
    async confirm(c, ctx, k) {
      const r = await c.callTool({ name: "browser_wait_for", arguments: { text: `loaded ${k}` } });
      if (r.isError) fail(`browser_wait_for: ${text(r)}`);
    },
    // The signup loop as an agent does it with Playwright's tools: snapshot,
    // fill the visible fields, snapshot again to find the field the Team
    // plan revealed, fill it, click submit, wait for the welcome text.
    async formLoop(c) {
      const calls = [];
      const call = async (name, args) => {
        const r = await c.callTool({ name, arguments: args });
        if (r.isError) fail(`${name}: ${text(r)}`);
        calls.push({ name, result: r });
        return text(r);
      };
      const ref = (snap, role, name) => {
        const m = snap.match(new RegExp(`${role} "${name}"[^\\n]*?\\[ref=([a-z0-9]+)\\]`));
        if (!m) fail(`no ref for ${role} "${name}" in Playwright's snapshot:\n${snap}`);
        return m[1];
      };
      await c.callTool({ name: "browser_navigate", arguments: { url: SIGNUP } });
      const snap = await call("browser_snapshot", {});
      await call("browser_fill_form", {
        fields: [
          { name: "Email", type: "textbox", target: ref(snap, "textbox", "Email"), value: "ada@example.com" },
          { name: "Full name", type: "textbox", target: ref(snap, "textbox", "Full name"), value: "Ada Lovelace" },
          { name: "Password", type: "textbox", target: ref(snap, "textbox", "Password"), value: SECRET },
          { name: "Plan", type: "combobox", target: ref(snap, "combobox", "Plan"), value: "Team" },
          { name: "I accept the terms", type: "checkbox", target: ref(snap, "checkbox", "I accept the terms"), value: "true" },
        ],
      });
      const snap2 = await call("browser_snapshot", {});
      await call("browser_fill_form", { fields: [{ name: "Team name", type: "textbox", target: ref(snap2, "textbox", "Team name"), value: "Analytical Engines" }] });
      await call("browser_click", { element: "Create account button", target: ref(snap2, "button", "Create account") });
      const done = await call("browser_wait_for", { text: "Welcome aboard" });
      return { calls, verified: /welcome\.html/.test(done) || /Welcome aboard/.test(done) };
    },
    async catalogue(c) {
      await c.callTool({ name: "browser_navigate", arguments: { url: CATALOG } });
      const r = await c.callTool({ name: "browser_snapshot", arguments: {} });
      if (r.isError) fail(`browser_snapshot: ${text(r)}`);
      return { result: r };
    },
});
// bobbyConfig writes the config file of a bobby on another engine.
const bobbyConfig = (engine) => {
  const file = path.join(work, `bobby-${engine}.toml`);
  writeFileSync(file, `[browser]\nengine = "${engine}"\npath = "${FIREFOX}"\n`);
  return file;
};
// Unsupported is a tool bobby does not run on the engine: the row prints
// n/a with the reason.
class Unsupported extends Error {
  constructor(tool, reason) {
    super(`${tool}: ${reason}`);
    this.tool = tool;
    this.reason = reason;
  }
}
const bobby = (label, engine) => ({
    label,
    engine,
    transport: () =>
      new StdioClientTransport({
        command: BOBBY_BIN,
        args: engine ? ["stdio", "--config", bobbyConfig(engine)] : ["stdio"],
        cwd: work,
        env: { PATH: env.PATH, HOME: work, TMPDIR: work },
        stderr: "pipe",
      }),
    async navigate(c, url) {
      const r = await c.callTool({ name: "workflow_start", arguments: { profile: "default", url } });
      if (r.isError) fail(`workflow_start: ${text(r)}`);
      return { handle: r.structuredContent.workflowHandle };
    },
    async snapshots(c, ctx) {
      const out = [];
      for (const [name, extra] of [["a11y_snapshot", {}], ["a11y_snapshot interesting", { interesting: true }]]) {
        const r = await c.callTool({ name: "a11y_snapshot", arguments: { workflowHandle: ctx.handle, ...extra } });
        if (r.isError) fail(`a11y_snapshot: ${text(r)}`);
        out.push({ name, result: r, text: r.structuredContent?.evidence?.accessibility?.text ?? text(r) });
      }
      return out;
    },
    // One click: bobby clicks natively, then settles (network quiet: 150 ms
    // without requests, capped at 3 s). No snapshot is attached, so the
    // outcome text is not in the answer.
    async click(c, ctx, k) {
      const r = await c.callTool({ name: "click", arguments: { workflowHandle: ctx.handle, target: { role: "button", name: "Load data" } } });
      if (r.isError) fail(`click: ${text(r)}`);
      return { observed: false, bytes: bytes(r), result: r };
    },
    // wait_for the status text: the outcome observed by the agent.
    // On Firefox, whose wait_for takes no CSS selector, the page's text.
    async confirm(c, ctx, k) {
      const condition = engine === "firefox"
        ? { kind: "text", matcher: { kind: "regex", value: `\\bloaded ${k}\\b` } }
        : { kind: "text", selector: "#status", matcher: { kind: "exact", value: `loaded ${k}` } };
      const r = await c.callTool({ name: "wait_for", arguments: { workflowHandle: ctx.handle, condition } });
      if (r.isError) fail(`wait_for: ${text(r)}`);
    },
    // The standard form loop: observe with forms, complete the form (the
    // Team plan reveals Team name, filled in the same call), submit and
    // verify the welcome page.
    async formLoop(c) {
      const calls = [];
      const call = async (name, args) => {
        const r = await c.callTool({ name, arguments: args });
        if (r.isError && r.structuredContent?.error?.code === "unsupportedOnEngine") throw new Unsupported(name, r.structuredContent.error.message);
        if (r.isError) fail(`${name}: ${text(r)}`);
        calls.push({ name, result: r });
        return r;
      };
      const st = await c.callTool({ name: "workflow_start", arguments: { profile: "default", url: SIGNUP } });
      if (st.isError) fail(`workflow_start: ${text(st)}`);
      const h = st.structuredContent.workflowHandle;
      await call("workflow_observe", { workflowHandle: h, includeForms: true });
      await call("intent_complete_form", {
        workflowHandle: h,
        values: { Email: "ada@example.com", "Full name": "Ada Lovelace", Password: SECRET, Plan: "Team", "Team name": "Analytical Engines", "I accept the terms": true },
      });
      const sub = await call("intent_submit_and_verify", { workflowHandle: h, expect: { textContains: "Welcome aboard" } });
      return { calls, verified: sub.structuredContent?.evidence?.submission?.status === "verified" };
    },
    async catalogue(c) {
      const st = await c.callTool({ name: "workflow_start", arguments: { profile: "default", url: CATALOG } });
      if (st.isError) fail(`workflow_start: ${text(st)}`);
      const r = await c.callTool({ name: "a11y_snapshot", arguments: { workflowHandle: st.structuredContent.workflowHandle } });
      if (r.isError) fail(`a11y_snapshot: ${text(r)}`);
      return { result: r };
    },
});
const runtimes = {
  playwright: playwright("@playwright/mcp", []),
  // The same with Playwright's post-action settle (default 500 ms, slept
  // once after the action and once more after triggered requests) cut to
  // bobby's 150 ms quiet window: how much of (c) is fixed sleeps.
  playwright150: playwright("@playwright/mcp --timeout-settle 150", ["--timeout-settle", "150"]),
  bobby: bobby("bobby", null),
  // bobby on Firefox ESR over WebDriver BiDi ([browser] engine = "firefox").
  bobbyFirefox: bobby("bobby firefox", "firefox"),
};

async function measure(key) {
  const rt = runtimes[key];
  const client = new Client({ name: "bobby-bench", version: "1.0.0" });
  const transport = rt.transport();
  let stderr = "";
  const t0 = performance.now();
  await client.connect(transport);
  transport.stderr?.on("data", (d) => (stderr += d));
  const tConnected = performance.now();
  try {
    const list = await client.listTools();
    const ctx = await rt.navigate(client, PAGE);
    const tReady = performance.now();

    const snaps = (await rt.snapshots(client, ctx)).map((s) => ({
      name: s.name,
      resultBytes: bytes(s.result),
      textBytes: Buffer.byteLength(s.text, "utf8"),
      contentTextBytes: Buffer.byteLength(text(s.result), "utf8"),
      structuredBytes: s.result.structuredContent ? bytes(s.result.structuredContent) : 0,
      result: s.result,
      coverage: coverage(s.text),
      text: s.text,
    }));
    ctx.snapText = snaps[0].text;

    const clickOnly = [];
    const settled = [];
    const clickBytes = [];
    const clickTextBytes = [];
    let observedInClick = 0;
    let clickSample;
    for (let k = 1; k <= WARMUP + CLICKS; k++) {
      const a = performance.now();
      const r = await rt.click(client, ctx, k);
      const b = performance.now();
      if (!r.observed) await rt.confirm(client, ctx, k);
      const c = performance.now();
      if (k > WARMUP) {
        clickOnly.push(ms(a, b));
        settled.push(ms(a, c));
        clickBytes.push(r.bytes);
        clickTextBytes.push(Buffer.byteLength(text(r.result), "utf8"));
        clickSample ??= r.result;
        if (r.observed) observedInClick++;
      }
    }
    // A tool the engine does not run leaves the row n/a, with the reason.
    let loop, loopNA;
    try {
      loop = await rt.formLoop(client);
    } catch (e) {
      if (!(e instanceof Unsupported)) throw e;
      loopNA = e.message;
      loop = { calls: [], verified: false };
    }
    const loopText = loop.calls.map((x) => text(x.result)).join("\n");
    // bobby never echoes a secret; Playwright's answers quote the code they
    // ran, password included: reported, not enforced.
    if (key.startsWith("bobby") && loopText.includes(SECRET)) fail("bobby echoed the password in a result text");
    const cat = await rt.catalogue(client);
    const catText = text(cat.result);
    // Warm start: the next page an agent opens on a running browser, after
    // a second of thinking. bobby opens a new isolated session with its
    // page each time; Playwright navigates its one page.
    const warm = [];
    for (let k = 0; k < WARM_STARTS; k++) {
      await new Promise((res) => setTimeout(res, 1000));
      const a = performance.now();
      await rt.navigate(client, PAGE);
      warm.push(performance.now() - a);
    }
    return {
      formLoop: {
        na: loopNA,
        verified: loop.verified,
        echoesPassword: loopText.includes(SECRET),
        calls: loop.calls.map((x) => ({ name: x.name, contentTextBytes: Buffer.byteLength(text(x.result), "utf8"), resultBytes: bytes(x.result) })),
        contentTextBytes: Buffer.byteLength(loopText, "utf8"),
        resultBytes: loop.calls.reduce((a, x) => a + bytes(x.result), 0),
        texts: loop.calls.map((x) => text(x.result)),
      },
      catalogue: {
        contentTextBytes: Buffer.byteLength(catText, "utf8"),
        resultBytes: bytes(cat.result),
        // A card's button is targetable when its name is followed by a ref on
        // the same line (Playwright's `button "…" [ref=eN]`, or a cell of
        // bobby's compact rows).
        targetableButtons: (catText.match(/"Add [^"]* to cart"[^"\n|]*\[ref=[a-z0-9]+\]/g) ?? []).length,
        text: catText,
      },
      runtime: rt.label,
      tools: list.tools.length,
      toolsListBytes: bytes(list),
      toolsBreakdown: list.tools.reduce((acc, t) => {
        const { description, inputSchema, outputSchema, ...rest } = t;
        acc.description += description ? bytes(description) : 0;
        acc.inputSchema += inputSchema ? bytes(inputSchema) : 0;
        acc.outputSchema += outputSchema ? bytes(outputSchema) : 0;
        acc.other += bytes(rest);
        return acc;
      }, { description: 0, inputSchema: 0, outputSchema: 0, other: 0 }),
      largestTools: list.tools.map((t) => ({ name: t.name, bytes: bytes(t) })).sort((a, b) => b.bytes - a.bytes).slice(0, 6),
      connectMs: ms(t0, tConnected),
      sessionStartMs: ms(t0, tReady),
      firstNavigateMs: ms(tConnected, tReady),
      warmStartMedianMs: median(warm),
      snapshots: snaps,
      click: {
        n: CLICKS,
        clickCallMedianMs: median(clickOnly),
        settledMedianMs: median(settled),
        settledP90Ms: pct(settled, 90),
        observedInClickAnswer: observedInClick,
        clickAnswerBytesMedian: median(clickBytes),
        clickAnswerTextBytesMedian: median(clickTextBytes),
        sample: clickSample,
      },
    };
  } catch (e) {
    e.message += stderr ? `\n${key} stderr:\n${stderr.slice(-2000)}` : "";
    throw e;
  } finally {
    await client.close().catch(() => {});
  }
}

const results = {};
try {
  for (const key of ["playwright", "bobby", "playwright150", "bobbyFirefox"]) {
    if (key === "bobbyFirefox" && !existsSync(FIREFOX)) {
      console.error(`compare.mjs: no Firefox at ${FIREFOX}; the bobby firefox column is left out`);
      continue;
    }
    results[key] = await measure(key);
  }
} finally {
  server.close();
  await rm(work, { recursive: true, force: true }).catch(() => {});
}

// --- report ----------------------------------------------------------------
const pw = results.playwright;
const bb = results.bobby;
const ff = results.bobbyFirefox;
const f = (x) => (typeof x === "number" ? (Number.isInteger(x) ? String(x) : x.toFixed(1)) : String(x));
const ratio = (a, b) => (typeof a === "number" && b ? (a / b).toFixed(2) + "×" : "-");
const cov = (c) => `b${c.button} l${c.link} t${c.textbox} c${c.checkbox} s${c.combobox}`;
const pSnap = pw.snapshots[0];
const bSnap = bb.snapshots[0];
// A row: its label, Playwright's figure, a bobby result's figure (asked of
// bobby on Chromium and on Firefox), the goal, and whether the bobby/pw
// ratio is printed. A form-loop figure of an engine that does not run the
// loop's tools is n/a.
const NA = "n/a";
const loopFig = (r, v) => (r.formLoop.na ? NA : v(r));
const spec = [
  ["(a) tools/list bytes, default phase", pw.toolsListBytes, (r) => r.toolsListBytes, "≤ 0.50×", true],
  ["    tools listed", pw.tools, (r) => r.tools, "", false],
  ["(b) snapshot content text bytes (what the model reads)", pSnap.contentTextBytes, (r) => r.snapshots[0].contentTextBytes, "≤ 0.50×", true],
  ["    whole result bytes (content + structuredContent)", pSnap.resultBytes, (r) => r.snapshots[0].resultBytes, "", true],
  ["    structuredContent bytes", pSnap.structuredBytes, (r) => r.snapshots[0].structuredBytes, "", false],
  ["    snapshot text alone bytes", pSnap.textBytes, (r) => r.snapshots[0].textBytes, "", true],
  ["    bobby interesting:true content text bytes", pSnap.contentTextBytes, (r) => r.snapshots[1].contentTextBytes, "", true],
  ["    bobby interesting:true whole result bytes", pSnap.resultBytes, (r) => r.snapshots[1].resultBytes, "", true],
  ["    coverage default (button link text check select)", cov(pSnap.coverage), (r) => cov(r.snapshots[0].coverage), "equal", false],
  ["    coverage bobby interesting:true", cov(pSnap.coverage), (r) => cov(r.snapshots[1].coverage), "equal", false],
  [`(c) click→settled outcome median ms (n=${CLICKS})`, pw.click.settledMedianMs, (r) => r.click.settledMedianMs, "≤ 0.50×", true],
  ["    settled p90 ms", pw.click.settledP90Ms, (r) => r.click.settledP90Ms, "", false],
  ["    playwright --timeout-settle 150: settled median ms", results.playwright150.click.settledMedianMs, (r) => r.click.settledMedianMs, "", true],
  ["    click call alone median ms", pw.click.clickCallMedianMs, (r) => r.click.clickCallMedianMs, "", true],
  ["    outcome in click answer (of n)", pw.click.observedInClickAnswer, (r) => r.click.observedInClickAnswer, "", false],
  ["    click answer content text bytes (median)", pw.click.clickAnswerTextBytesMedian, (r) => r.click.clickAnswerTextBytesMedian, "", true],
  ["    click answer whole result bytes (median)", pw.click.clickAnswerBytesMedian, (r) => r.click.clickAnswerBytesMedian, "", true],
  ["(e) signup form loop content text bytes (observe → fill → submit, verified)", pw.formLoop.contentTextBytes, (r) => loopFig(r, (r) => r.formLoop.contentTextBytes), "≤ 0.50×", true],
  ["    verified", pw.formLoop.verified, (r) => loopFig(r, (r) => r.formLoop.verified), "true", false],
  ["    password echoed in the text", pw.formLoop.echoesPassword, (r) => loopFig(r, (r) => r.formLoop.echoesPassword), "false", false],
  ["    calls", pw.formLoop.calls.length, (r) => loopFig(r, (r) => r.formLoop.calls.length), "", false],
  ["    whole result bytes", pw.formLoop.resultBytes, (r) => loopFig(r, (r) => r.formLoop.resultBytes), "", true],
  [`(f) ${CARDS}-card catalogue snapshot content text bytes`, pw.catalogue.contentTextBytes, (r) => r.catalogue.contentTextBytes, "≤ 0.50×", true],
  ["    card buttons targetable (name + ref in the text)", pw.catalogue.targetableButtons, (r) => r.catalogue.targetableButtons, String(CARDS), false],
  ["    whole result bytes", pw.catalogue.resultBytes, (r) => r.catalogue.resultBytes, "", true],
  ["(d) session start ms (spawn→first page ready)", pw.sessionStartMs, (r) => r.sessionStartMs, "", true],
  ["    spawn→initialized ms", pw.connectMs, (r) => r.connectMs, "", false],
  ["    first navigate ms", pw.firstNavigateMs, (r) => r.firstNavigateMs, "", false],
  [`(g) warm start ms: the next page, 1 s after the last (median of ${WARM_STARTS}; bobby: new isolated session + page + navigation)`, pw.warmStartMedianMs, (r) => r.warmStartMedianMs, "", true],
];
const head = ["figure", "playwright-mcp", "bobby", "bobby/pw"];
if (ff) head.push("bobby firefox", "firefox/pw");
head.push("goal");
const rows = [head];
for (const [label, p, of, goal, withRatio] of spec) {
  const row = [label, p, of(bb), withRatio ? ratio(of(bb), p) : ""];
  if (ff) row.push(of(ff), withRatio ? ratio(of(ff), p) : "");
  row.push(goal);
  rows.push(row);
}
const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => f(r[i]).length)));
for (const r of rows) console.log(r.map((c, i) => (i === 0 ? f(c).padEnd(widths[i]) : f(c).padStart(widths[i]))).join("  "));
console.log(`\nfixture ${PAGE} (API delay ${API_DELAY_MS} ms); coverage b=buttons l=links t=text inputs c=checkboxes s=comboboxes`);
console.log("(c) playwright: browser_click = actionability wait + click + settle sleep (500 ms default) + wait for the requests it started" +
  " + a second settle sleep + page snapshot (written to --output-dir, linked from the answer); then browser_wait_for text 'loaded N'" +
  " when the answer lacks it (it always does: the snapshot is a file link).");
console.log("    bobby: click (native click + settle: network quiet 150 ms, ≤ 3 s; no snapshot attached) + wait_for text 'loaded N' on #status.");
if (ff) console.log("    bobby firefox: click (native click over BiDi + settle: 150 ms, then the document complete, ≤ 3 s; Firefox gives bobby no network-idle signal) + wait_for text 'loaded N' in the page's text (wait_for takes no CSS selector on Firefox).");
if (ff?.formLoop.na) console.log(`(e) bobby firefox n/a: ${ff.formLoop.na}`);
console.log("tools/list bytes by part (description / inputSchema / outputSchema / name+title+annotations):");
for (const r of [pw, bb, ff].filter(Boolean)) console.log(`  ${r.runtime}: ` + Object.values(r.toolsBreakdown).join(" / "));
console.log("largest tool definitions (bytes):");
for (const r of [pw, bb, ff].filter(Boolean)) console.log(`  ${r.runtime}: ` + r.largestTools.map((t) => `${t.name} ${t.bytes}`).join(", "));
console.log(`bobby click answer text: ${text(bb.click.sample)}`);
console.log(`bobby snapshot answer text, first line: ${text(bSnap.result).split("\n")[0]}`);
console.log("(e) calls (content text bytes):");
for (const r of [pw, bb, ff].filter(Boolean)) console.log(`  ${r.runtime}: ` + r.formLoop.calls.map((x) => `${x.name} ${x.contentTextBytes}`).join(", "));
if (env.BENCH_VERBOSE) {
  for (const r of [pw, bb]) console.log(`\n--- ${r.runtime} form loop texts ---\n` + r.formLoop.texts.join("\n---\n"));
  for (const r of [pw, bb]) console.log(`\n--- ${r.runtime} catalogue text (first 1500 bytes) ---\n` + r.catalogue.text.slice(0, 1500));
}
if (env.RESULT_JSON) await writeFile(env.RESULT_JSON, JSON.stringify(results, null, 2));

const mismatch = Object.keys(ROLES).filter((k) => pSnap.coverage[k] !== bSnap.coverage[k]);
if (mismatch.length) console.log(`\nNOTE: actionable coverage differs (default snapshot) in: ${mismatch.join(", ")}`);
