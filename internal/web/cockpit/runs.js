import { h, fill, short, time, usd, badge } from "./dom.js";
import { send } from "./api.js";

// cancelNotes holds, per run, what the operator's cancel got back when it
// failed (a finished run just shows its new status).
const cancelNotes = new Map();

// cancelButton stops a queued or running run, whoever owns it.
function cancelButton(el, state, r) {
  const b = h("button.act.cancel", { id: "cancel-run", onclick: async () => {
    b.disabled = true;
    try { await send("POST", `/v1/dev/runs/${encodeURIComponent(r.id)}/cancel`); cancelNotes.delete(r.id); }
    catch (e) { cancelNotes.set(r.id, "Cancel failed: " + e.message); el.shown = null; renderRunDetail(el, state, state.detail); }
    b.disabled = false;
  } }, "Cancel run");
  return b;
}

// One run's live timeline: every durable event of the run, newest last.
// Built into a fragment and swapped in once, so a long run renders in one
// layout pass.
export function renderTimeline(events) {
  const body = document.createDocumentFragment();
  for (const ev of events) {
    body.append(h("tr", { dataset: { id: ev.id } },
      h("td.n", ev.id), h("td", time(ev.time)), h("td", ev.turn || ""), h("td.n", ev.name), h("td.d", short(JSON.stringify(ev.data || {}), 300))));
  }
  return h("table.tl", h("thead", h("tr", h("th", "id"), h("th", "time"), h("th", "turn"), h("th", "event"), h("th", "data"))), h("tbody", body));
}

// turns groups a run's events by turn: the model call and the tool calls.
function turns(events) {
  const by = new Map();
  for (const ev of events) {
    if (!ev.turn) continue;
    const t = by.get(ev.turn) || { turn: ev.turn, tools: [] };
    if (ev.name === "model.call") t.call = ev.data;
    if (ev.name === "tool.call") t.tools.push(ev.data.name);
    if (ev.name === "tool.result" && ev.data.is_error) t.errors = (t.errors || 0) + 1;
    by.set(ev.turn, t);
  }
  return [...by.values()];
}

// renderRunsList keeps one element per run, with the same children for
// its life: it moves rows into place and changes only their texts and
// classes. The list is rendered on every event of every run; rebuilding it
// would replace the element under the pointer between a press and its
// release, and the browser then fires no click on the row, so an operator
// could not pick a run while any agent was working.
export function renderRunsList(el, state, select) {
  const rows = [...state.runs.values()].sort((a, b) => (b.created_at || "").localeCompare(a.created_at || ""));
  if (!rows.length) { el.rows = null; return fill(el, h("p.empty.pad", "No runs yet. Send a task: delta send, or POST /v1/tasks.")); }
  if (!el.rows) { el.replaceChildren(); el.rows = new Map(); }
  const seen = new Set();
  let prev = null;
  for (const r of rows) {
    const u = r.usage || {};
    const view = [r.status, r.id === state.selected, short(r.input, 90) || "—",
      `${r.steps || 0} turns · ${(u.input_tokens || 0) + (u.output_tokens || 0)} tok · ${usd(u.cost_usd)} · ${state.callCount(r)} calls`];
    const sig = JSON.stringify(view);
    let row = el.rows.get(r.id);
    if (!row) {
      row = h("div.row", { dataset: { run: r.id }, onclick: () => select(r.id) }, h("div.t", h("span.mono", r.id.slice(0, 17)), badge("")), h("div.s"), h("div.s"));
      el.rows.set(r.id, row);
    }
    if (row.sig !== sig) {
      row.sig = sig;
      row.className = "row" + (view[1] ? " sel" : "");
      row.dataset.status = r.status;
      const [t, input, counts] = row.children, b = t.lastChild;
      b.textContent = r.status; b.className = "badge st-" + r.status;
      input.textContent = view[2]; counts.textContent = view[3];
    }
    const at = prev ? prev.nextSibling : el.firstChild;
    if (at !== row) el.insertBefore(row, at);
    prev = row; seen.add(r.id);
  }
  for (const [id, row] of el.rows) if (!seen.has(id)) { row.remove(); el.rows.delete(id); }
}

// renderRunDetail draws the selected run. The page renders on every event
// of every run; the detail is redrawn only when what it shows changed (the
// run's row, its events, its streamed text, the fetched detail), so text an
// operator selected in it stays selected while other runs work.
export function renderRunDetail(el, state, detail) {
  const r = state.runs.get(state.selected);
  if (!r) { el.shown = null; return fill(el, h("p.empty", "Select a run.")); }
  const evs = state.events.get(r.id) || [];
  const u = r.usage || {};
  const out = detail && detail.task && detail.task.result && detail.task.result.output_text;
  // The request in full once the detail is fetched: every input message and
  // the instructions (the list row holds a 200-character preview).
  const req = detail && detail.request;
  const asked = req && Array.isArray(req.input) ? req.input.map((m) => (typeof m.content === "string" ? m.content : "")).filter(Boolean).join("\n\n") : r.input;
  const live = r.status === "running" ? state.liveText.get(r.id) || "" : "";
  // What the detail shows, as a key: a fetched detail that brings nothing
  // new (each finished turn fetches it again) redraws nothing.
  const cancelNote = cancelNotes.get(r.id) || "";
  const shown = JSON.stringify([r.id, r.status, r.session_id, r.owner, r.model, r.steps, u, r.error, evs.length, live.length, out, asked, req && req.instructions, state.detailError, cancelNote]);
  if (el.shown === shown) return;
  el.shown = shown;
  fill(el,
    h("h2", r.id, " ", badge(r.status, "st-" + r.status), " ", r.status === "queued" || r.status === "running" ? cancelButton(el, state, r) : null),
    cancelNote ? h("p.err", { id: "cancel-note" }, cancelNote) : null,
    state.detailError ? h("p.err.detail-error", "Could not load this run's detail: ", state.detailError) : null,
    h("table", h("tbody",
      h("tr", h("th", "session"), h("td.mono", r.session_id), h("th", "owner"), h("td", r.owner || "—")),
      h("tr", h("th", "model"), h("td", r.model || "—"), h("th", "turns"), h("td", r.steps || 0)),
      h("tr", h("th", "tokens"), h("td", `${u.input_tokens || 0} in · ${u.output_tokens || 0} out · ${u.cache_read_tokens || 0} cached`), h("th", "cost"), h("td", usd(u.cost_usd))))),
    h("h3", "Request"), h("pre.request", asked || ""),
    req && req.instructions ? [h("h3", "Instructions"), h("pre.instructions", req.instructions)] : null,
    live ? [h("h3", "Streaming"), h("pre", live)] : null,
    out ? [h("h3", "Final answer"), h("pre.answer", out)] : null,
    r.error ? [h("h3", "Error"), h("pre.err", r.error)] : null,
    h("h3", "Turns"),
    h("table", h("thead", h("tr", h("th", "turn"), h("th", "model"), h("th", "tokens in/out"), h("th", "latency"), h("th", "tools"))),
      h("tbody", turns(evs).map((t) => h("tr", h("td", t.turn), h("td", (t.call && t.call.model) || "…"),
        h("td", t.call ? `${t.call.usage.input_tokens}/${t.call.usage.output_tokens}` : ""), h("td", t.call ? t.call.latency_ms + " ms" : ""),
        h("td", t.tools.join(", ") + (t.errors ? ` (${t.errors} failed)` : "")))))),
    h("h3", `Timeline (${evs.length} events)`), renderTimeline(evs));
}
