import { session, get, send } from "./api.js";
import { follow } from "./stream.js";
import { fill, h, time, usd } from "./dom.js";
import { renderRunsList, renderRunDetail, renderTimeline } from "./runs.js";
import { renderCallsList, renderCall } from "./calls.js";
import { renderToolsList, renderTool } from "./tools.js";
import { loadTree, openFile } from "./files.js";
import { loadMemory } from "./memory.js";

const $ = (id) => document.getElementById(id);

// state is the live view: runs by id, each run's durable events in arrival
// order (ids never repeat), live text, and what each tab has selected.
const state = {
  runs: new Map(), events: new Map(), order: [], liveText: new Map(),
  selected: "", tab: "runs", capture: false, detail: null, detailError: "", calls: [], call: -1, tool: -1,
  callEvents: new Map(),
  callCount(r) { return Math.max(r.calls || 0, this.capture ? (this.callEvents.get(r.id) || 0) : 0); },
};

function runOf(ev) {
  let r = state.runs.get(ev.run_id);
  if (!r) {
    r = { id: ev.run_id, session_id: ev.session_id, owner: ev.owner || "", status: "queued", steps: 0, usage: {}, calls: 0, input: "", created_at: ev.time };
    state.runs.set(r.id, r);
    if (ev.name !== "run.queued") refreshRun(r.id); // a run from before this page's list
  }
  return r;
}

// A fetched row may have been read before events this page already
// applied: it never moves a run back (status, turns, usage).
const rank = { queued: 0, running: 1, done: 2, failed: 2, cancelled: 2 };
function merge(r, row) {
  if (!r || !row) return;
  const { status, steps, usage } = r;
  Object.assign(r, row);
  if (rank[status] > rank[row.status]) r.status = status;
  if ((steps || 0) > (row.steps || 0)) { r.steps = steps; r.usage = usage; }
  if (rank[row.status] === 2) r.settled = true;
}

// settled marks a row the daemon sent as finished: it never changes again,
// so its run.finished (replayed for every stored run when the page opens)
// fetches nothing. One fetch per run runs at a time; a refresh asked for
// meanwhile runs once after it unless the row it brought is settled.
const fetching = new Map();
async function refreshRun(id) {
  if (fetching.has(id)) { fetching.set(id, "again"); return; }
  fetching.set(id, "once");
  try {
    const d = await get(`/v1/dev/runs/${id}`);
    merge(state.runs.get(id), d.run);
    mergeStored(id, d.events);
    if (id === state.selected) { state.detail = d; state.detailError = ""; }
    schedule();
  } catch { /* gone or not yet visible: the stream keeps it current */ }
  const again = fetching.get(id) === "again";
  fetching.delete(id);
  if (again && !(state.runs.get(id) || {}).settled) refreshRun(id);
}

// mergeStored completes a run's timeline with its stored events when the
// page holds only its later ones: the stream starts at the listed runs'
// first events, so a run older than the list that comes back to life
// (resumed, or an event of its own) arrives without its beginning.
function mergeStored(id, stored) {
  if (!stored || !stored.length) return;
  const have = state.events.get(id) || [];
  if (have.length && have[0].id <= stored[0].id) return;
  const ids = new Set(have.map((e) => e.id));
  state.events.set(id, stored.filter((e) => !ids.has(e.id)).concat(have).sort((a, b) => a.id - b.id));
}

function onEvent(ev) {
  if (!ev.run_id) return;
  const r = runOf(ev);
  if (!ev.id) { // ephemeral: streamed text of a running turn
    if (ev.name === "output_text.delta") state.liveText.set(r.id, (state.liveText.get(r.id) || "") + ev.data.delta);
    return schedule();
  }
  state.order.push(ev.id);
  if (!state.events.has(r.id)) state.events.set(r.id, []);
  state.events.get(r.id).push(ev);
  const d = ev.data || {};
  switch (ev.name) {
    case "run.queued": if (!r.input) refreshRun(r.id); break;
    case "run.started": case "run.resumed": r.status = "running"; if (!r.started_at) r.started_at = ev.time; break;
    case "turn.started": state.liveText.delete(r.id); break;
    case "model.call": r.model = d.model; state.callEvents.set(r.id, (state.callEvents.get(r.id) || 0) + 1);
      // The provider that served the newest call is the live one (a
      // failover shows here as it happens).
      if (d.provider) $("h-provider").textContent = `${d.provider} · ${d.model}`;
      break;
    case "checkpoint": r.steps = d.steps; r.usage = { ...r.usage, ...d.usage }; break;
    case "run.finished": r.status = d.status; r.error = d.error || ""; r.finished_at = ev.time; state.liveText.delete(r.id);
      if (!r.settled) refreshRun(r.id);
      break;
  }
  if (r.id === state.selected && (ev.name === "tool.result" || ev.name === "checkpoint")) refreshSelected();
  schedule();
}

let pending = false;
function schedule() { if (!pending) { pending = true; requestAnimationFrame(render); } }

function render() {
  pending = false;
  let tokens = 0, cost = 0, captured = 0;
  for (const r of state.runs.values()) {
    const u = r.usage || {};
    tokens += (u.input_tokens || 0) + (u.output_tokens || 0); cost += u.cost_usd || 0;
    if (state.callCount(r) > 0) captured++;
  }
  $("h-tokens").textContent = tokens.toLocaleString(); $("h-cost").textContent = usd(cost); $("h-captured").textContent = captured;
  // The list stays current behind other tabs (it is small); the detail,
  // with its timeline, is rebuilt only while it is shown.
  renderRunsList($("runs-list"), state, select);
  if (state.tab === "runs") renderRunDetail($("run-detail"), state, state.detail);
  // The first run to arrive while Calls or Tools says there is none.
  if ((state.tab === "calls" || state.tab === "tools") && !state.selected && state.runs.size) showTab(state.tab);
}

function runPicker(onPick) {
  const rows = [...state.runs.values()].sort((a, b) => (b.created_at || "").localeCompare(a.created_at || ""));
  return h("div.picker", "Run ",
    h("select", { onchange: (e) => { select(e.target.value, true); onPick(); } },
      rows.map((r) => h("option", { value: r.id, selected: r.id === state.selected }, `${r.id.slice(0, 17)} · ${r.status}`))));
}

async function select(id, quiet) {
  state.selected = id; state.detail = null; state.detailError = ""; state.call = -1; state.tool = -1;
  await refreshSelected();
  if (!quiet) schedule();
}

let refreshing = null;
async function refreshSelected() {
  if (refreshing) return refreshing;
  refreshing = (async () => {
    const id = state.selected;
    if (!id) return;
    try { state.detail = await get(`/v1/dev/runs/${id}`); state.detailError = ""; state.calls = state.detail.calls; merge(state.runs.get(id), state.detail.run); }
    catch (e) { state.detail = null; state.detailError = e.message; state.calls = []; }
    schedule();
    if (state.tab === "calls") showCalls();
    if (state.tab === "tools") showTools();
  })();
  try { await refreshing; } finally { refreshing = null; }
}

// noRuns fills a per-run tab when there is no run to pick.
function noRuns(list, detail) {
  if (state.runs.size) return false;
  fill(list, h("p.empty.pad", "No runs yet. Send a task: delta send, or POST /v1/tasks."));
  fill(detail);
  list.shown = detail.shown = null;
  return true;
}

// redraw calls draw unless key is what el shows already. The Calls and
// Tools tabs are shown again on every checkpoint and tool result of the
// selected run; a call or tool call that did not change keeps what the
// operator did with it (sections opened, text selected).
function redraw(el, key, draw) {
  const k = JSON.stringify(key);
  if (el.shown === k) return;
  el.shown = k;
  draw();
}

const pickerKey = () => [state.selected, [...state.runs.values()].map((r) => r.id + " " + r.status)];

function showCalls() {
  const list = $("calls-list"), detail = $("call-detail");
  if (noRuns(list, detail)) return;
  const pick = (i) => { state.call = i; showCalls(); };
  const ids = (cs) => cs.map((c) => c && c.id);
  redraw(list, [pickerKey(), ids(state.calls), state.call, state.capture], () => {
    fill(list, runPicker(showCalls), h("div"));
    renderCallsList(list.lastChild, state.calls, state.call, pick, state.capture);
  });
  // A call is drawn with the diff against the one before it.
  redraw(detail, [state.selected, state.call, ids(state.calls.slice(Math.max(0, state.call - 1), state.call + 1))],
    () => renderCall(detail, state.calls, state.call));
}

function showTools() {
  const list = $("tools-list"), detail = $("tool-detail");
  if (noRuns(list, detail)) return;
  const journal = (state.detail && state.detail.journal) || [];
  const pick = (i) => { state.tool = i; showTools(); };
  redraw(list, [pickerKey(), journal.map((j) => [j.call_id, j.state, j.is_error, j.duration_ms]), state.tool], () => {
    fill(list, runPicker(showTools), h("div"));
    renderToolsList(list.lastChild, journal, state.tool, pick);
  });
  redraw(detail, [state.selected, state.tool, journal[state.tool] || null], () => renderTool(detail, journal[state.tool]));
}

function showTab(tab) {
  state.tab = tab;
  for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("on", b.dataset.tab === tab);
  for (const s of document.querySelectorAll(".tab")) s.classList.toggle("on", s.id === "tab-" + tab);
  if ((tab === "calls" || tab === "tools") && !state.selected) {
    const newest = [...state.runs.values()].sort((a, b) => (b.created_at || "").localeCompare(a.created_at || ""))[0];
    if (newest) return select(newest.id).then(() => showTab(tab));
  }
  if (tab === "calls") showCalls();
  if (tab === "tools") showTools();
  if (tab === "files") {
    const tree = () => loadTree($("files-tree"), (p) => openFile($("file-editor"), p, tree));
    tree();
  }
  if (tab === "memory") loadMemory($("memory"));
  schedule();
}

async function boot() {
  for (const b of document.querySelectorAll("#tabs button")) b.addEventListener("click", () => showTab(b.dataset.tab));
  // Signed in with the inspect token (a session cookie): the header offers
  // to sign out, which revokes the session on the daemon and returns to the
  // sign-in form; a refusal is shown beside the button.
  if ((await session()).via === "cookie") {
    const out = $("signout"), note = $("signout-note");
    out.hidden = false;
    out.addEventListener("click", async () => {
      out.disabled = true; note.textContent = "";
      try { await send("DELETE", "/v1/dev/session"); location.href = "/dev"; }
      catch (e) { note.textContent = `Sign-out failed: ${e.message}`; out.disabled = false; }
    });
  }
  get("/v1/dev/config").then((c) => {
    $("h-agent").textContent = c.agent_id || "(no DELTA_AGENT_ID)";
    $("h-provider").textContent = (c.model && (c.model.provider || c.model.api)) ? `${c.model.provider || c.model.api} · ${c.model.primary || ""}` : "—";
    state.capture = !!c.capture_calls; schedule();
  }).catch(() => { $("h-agent").textContent = "—"; $("h-provider").textContent = "—"; });
  // The list first (newest 200 runs with their counters), then the stream
  // from the first event of those runs: the timeline of every run in view
  // is complete, and a database of months of events costs the page only
  // its runs' (older events are not replayed). Without the list, the
  // stream starts at the beginning.
  let since = 0;
  try {
    const l = await get("/v1/dev/runs?limit=200");
    for (const r of l.data) { state.runs.set(r.id, r); r.settled = rank[r.status] === 2; }
    since = l.events_since || 0;
  } catch { /* the stream fills it */ }
  schedule();
  state.stream = follow({ onEvent, onState, since });
}

// onState shows the stream's state in the header badge. Once a reconnect
// finds no daemon, a banner says so and since when: everything on the page
// is as of then (a run shown running may have ended), and the page keeps
// retrying on its own.
let lostAt = null;
function onState(on, down) {
  const live = $("live"), banner = $("down");
  if (on) { window.cockpit.connected++; lostAt = null; }
  else if (!lostAt) lostAt = new Date();
  live.textContent = on ? "live" : down ? "daemon unreachable" : "reconnecting…";
  live.className = on ? "on" : down ? "down" : "off";
  banner.hidden = !down;
  banner.textContent = down ? `The daemon is unreachable (${down}). What this page shows is as of ${time(lostAt.toISOString())}; it reconnects by itself when the daemon is back.` : "";
}

// For tests and benchmarks: read-only views of the live state.
window.cockpit = {
  state, renderTimeline,
  eventIds: () => state.order.slice(),
  last: () => (state.stream ? state.stream.last() : 0),
  showTab, select,
  drop: () => state.stream && state.stream.drop(),
  connected: 0,
};
boot();
