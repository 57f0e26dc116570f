import { h, fill, time, badge } from "./dom.js";
import { get, send } from "./api.js";

// The Memory tab: DELTA.md revisions (list, compare against the current
// file, restore — an inspection write) and the governed memory rows with
// their provenance, each shown when the daemon serves it.
export async function loadMemory(el, note) {
  const revs = h("section", { id: "memory-revisions" });
  const rows = h("section", { id: "memory-rows" });
  fill(el, revs, rows);
  await Promise.all([loadRevisions(revs, el, note), loadRows(rows)]);
}

// restore writes a revision back as DELTA.md and says what happened in the
// note above the list: which revision is back and where what it replaced
// went, or the daemon's refusal (inspection writes off, an unknown id).
async function restore(tab, note, id) {
  if (!confirm(`Restore revision ${id}?`)) return;
  let r;
  try { r = await send("POST", `/v1/dev/revisions/${id}/restore`); } catch (e) {
    note.textContent = `Restore failed: ${e.message}`; note.className = "err";
    return;
  }
  loadMemory(tab, r.unchanged ? `Revision ${id} is what DELTA.md holds already: nothing changed.` :
    `Restored revision ${id}: DELTA.md is version ${r.version} again` + (r.revision_id ? `; what it replaced is kept as revision ${r.revision_id}.` : "."));
}

async function loadRevisions(el, tab, done) {
  let revs;
  try { revs = await get("/v1/dev/revisions"); } catch (e) {
    // Only a 404 means this daemon serves no revisions; any other failure
    // (the daemon unreachable, a 500) is shown as what it is.
    return fill(el, h("h2", "DELTA.md revisions"), e.status === 404 ?
      h("p.empty", { id: "memory-empty" }, "No DELTA.md revisions on this daemon (not available). Revisions are recorded when the agent rewrites DELTA.md.") :
      h("p.err", "Could not load DELTA.md revisions: ", e.message));
  }
  const list = revs.revisions || [];
  const out = h("div");
  const note = h("p" + (done ? ".ok" : ""), { id: "memory-note", role: "status" }, done || "");
  fill(el, h("h2", "Memory: DELTA.md revisions"),
    revs.current ? h("p", "Current version ", h("b.mono", revs.current.version || "—"), revs.current.bytes !== undefined ? ` · ${revs.current.bytes} bytes` : "") : null,
    note,
    list.length ? h("table", h("thead", h("tr", h("th", "id"), h("th", "version"), h("th", "source"), h("th", "run"), h("th", "when"), h("th", ""))),
      h("tbody", list.map((r) => h("tr", { dataset: { rev: r.id } }, h("td", r.id), h("td.mono", r.version), h("td", badge(r.source || "—")), h("td.mono", (r.run_id || "").slice(0, 17)), h("td", time(r.created_at)),
        h("td", h("button.act.compare", { onclick: () => compare(out, r.id) }, "Compare"), " ",
          h("button.act.restore", { onclick: () => restore(tab, note, r.id) }, "Restore")))))) : h("p.empty", "No revisions yet."),
    out);
}

// loadRows lists governed memory: what each row says, whose it is (scope,
// user, task type), how sure (confidence, held until a second run confirms
// a lesson drawn from untrusted tool output) and which runs produced it.
async function loadRows(el) {
  let res;
  try { res = await get("/v1/dev/memory"); } catch (e) {
    return fill(el, h("h2", "Governed memory"), e.status === 404 ?
      h("p.empty", { id: "memory-rows-empty" }, "No governed memory on this daemon (not available).") :
      h("p.err", "Could not load governed memory: ", e.message));
  }
  const list = res.data || [];
  fill(el, h("h2", `Governed memory (${list.length})`),
    list.length ? h("table", { id: "memory-table" }, h("thead", h("tr", h("th", "id"), h("th", "kind"), h("th", "scope"), h("th", "content"), h("th", "confidence"), h("th", "runs"), h("th", "provenance"))),
      h("tbody", list.map((m) => h("tr", { dataset: { memory: m.id } },
        h("td", m.id), h("td", badge(m.kind || "—")),
        h("td", m.scope, m.user_id ? ` · ${m.user_id}` : "", m.task_type ? ` · ${m.task_type}` : ""),
        h("td", m.content, m.held ? h("span.dim", " (held: from untrusted tool output, awaiting a second run)") : ""),
        h("td", (m.confidence ?? 0).toFixed(2), m.rubric ? ` · ${m.rubric}` : ""),
        h("td", m.runs ?? ""),
        h("td.mono", (m.provenance || []).map((p) => h("div", (p.run_id || "").slice(0, 17), " ", (p.confidence ?? 0).toFixed(2), p.untrusted ? " untrusted" : "", " ", time(p.created_at)))))))) :
      h("p.empty", "No memory rows yet. Reflection (DELTA_REFLECT=1 or metadata.reflect) writes them after successful runs."));
}

async function compare(el, id) {
  try {
    const c = await get(`/v1/dev/revisions/${id}/compare`);
    fill(el, h("h3", `Revision ${id} → current`), h("pre.diff", (c.diff || "").split("\n").map((l) => h("div" + (/^(\+\+\+|---|@@)/.test(l) ? ".dim" : l.startsWith("+") ? ".add" : l.startsWith("-") ? ".del" : ""), l))));
  } catch (e) { fill(el, h("p.err", e.message)); }
}
