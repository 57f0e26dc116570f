import { h, fill, time, badge } from "./dom.js";
import { get, send } from "./api.js";

// DELTA.md revisions, when the daemon serves them: the list, a compare
// against the current file, and restore (an inspection write).
export async function loadMemory(el) {
  let revs;
  try { revs = await get("/v1/dev/revisions"); } catch (e) {
    return fill(el, h("h2", "Memory"), h("p.empty", { id: "memory-empty" }, "No DELTA.md revisions on this daemon (", e.status === 404 ? "not available" : e.message, "). Revisions are recorded when the agent rewrites DELTA.md."));
  }
  const list = revs.revisions || [];
  const out = h("div");
  fill(el, h("h2", "Memory: DELTA.md revisions"),
    revs.current ? h("p", "Current version ", h("b.mono", revs.current.version || "—"), revs.current.bytes !== undefined ? ` · ${revs.current.bytes} bytes` : "") : null,
    list.length ? h("table", h("thead", h("tr", h("th", "id"), h("th", "version"), h("th", "source"), h("th", "run"), h("th", "when"), h("th", ""))),
      h("tbody", list.map((r) => h("tr", { dataset: { rev: r.id } }, h("td", r.id), h("td.mono", r.version), h("td", badge(r.source || "—")), h("td.mono", (r.run_id || "").slice(0, 17)), h("td", time(r.created_at)),
        h("td", h("button.act.compare", { onclick: () => compare(out, r.id) }, "Compare"), " ",
          h("button.act.restore", { onclick: async () => { if (!confirm(`Restore revision ${r.id}?`)) return; try { await send("POST", `/v1/dev/revisions/${r.id}/restore`); loadMemory(el); } catch (e) { alert(e.message); } } }, "Restore")))))) : h("p.empty", "No revisions yet."),
    out);
}

async function compare(el, id) {
  try {
    const c = await get(`/v1/dev/revisions/${id}/compare`);
    fill(el, h("h3", `Revision ${id} → current`), h("pre.diff", (c.diff || "").split("\n").map((l) => h("div" + (/^(\+\+\+|---|@@)/.test(l) ? ".dim" : l.startsWith("+") ? ".add" : l.startsWith("-") ? ".del" : ""), l))));
  } catch (e) { fill(el, h("p.err", e.message)); }
}
