import { h, fill, short, pretty, badge } from "./dom.js";

export function renderToolsList(el, journal, sel, pick) {
  if (!journal.length) return fill(el, h("p.empty.pad", "No tool calls in this run."));
  fill(el, journal.map((j, i) => h("div.row" + (i === sel ? ".sel" : ""), { dataset: { tool: j.call_id }, onclick: () => pick(i) },
    h("div.t", h("b", j.name), h("span", badge(j.class === "read_only" ? "read-only" : "mutating"), " ", badge(j.state === "in_doubt" ? "in doubt" : j.is_error ? "error" : "done", j.state === "in_doubt" ? "in_doubt" : j.is_error ? "st-failed" : "st-done"))),
    h("div.s", short(JSON.stringify(j.arguments), 100)),
    h("div.s", j.duration_ms === null ? "no result recorded" : `${j.duration_ms} ms`))));
}

export function renderTool(el, j) {
  if (!j) return fill(el, h("p.empty", "Select a tool call to see its arguments and result."));
  fill(el,
    h("h2", j.name, " ", h("span.dim.mono", j.call_id)),
    h("p", j.class === "read_only" ? "Read-only: an interrupted call runs again on resume." : "Mutating: an interrupted call is never re-fired; it gets an [interrupted] result.",
      j.state === "in_doubt" ? h("b.err", " In doubt: the intent is journalled and no result is.") : ""),
    h("h3", "Arguments"), h("pre", pretty(j.arguments)),
    h("h3", j.is_error ? "Result (error)" : "Result"), h("pre.result" + (j.is_error ? ".err" : ""), j.result || "—"),
    j.spill.length ? [h("h3", "Spilled to"), j.spill.map((p) => h("div.mono", p))] : null,
    j.duration_ms !== null ? h("p.dim", `took ${j.duration_ms} ms`) : null);
}
