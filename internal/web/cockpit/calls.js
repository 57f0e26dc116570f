import { h, fill, short, usd, pretty, badge } from "./dom.js";

const same = (a, b) => a.role === b.role && a.content === b.content && JSON.stringify(a.tool_calls || null) === JSON.stringify(b.tool_calls || null);

// diff says what changed in the prompt from the previous turn: whether the
// cache-stable prefix (system spine and tool schemas) is the same, which
// system blocks changed, which messages are new and which of the previous
// turn's are gone (its per-turn blocks, rebuilt every turn), which tools
// joined or left.
export function diff(prev, cur) {
  const p = prev.request, c = cur.request;
  let common = 0;
  while (common < p.messages.length && common < c.messages.length && same(p.messages[common], c.messages[common])) common++;
  const pt = new Set(p.tools.map((t) => t.name)), ct = new Set(c.tools.map((t) => t.name));
  return {
    prefixHeld: p.prefix_key === c.prefix_key,
    system: c.system.map((s, i) => s !== p.system[i]).reduce((n, ch, i) => ch ? n.concat(i) : n, []),
    kept: common,
    added: c.messages.slice(common),
    removed: p.messages.slice(common),
    toolsAdded: [...ct].filter((n) => !pt.has(n)),
    toolsRemoved: [...pt].filter((n) => !ct.has(n)),
    effort: p.reasoning_effort !== c.reasoning_effort ? `${p.reasoning_effort || "default"} → ${c.reasoning_effort || "default"}` : "",
  };
}

const msgLine = (m) => h("span", h("span.kind", m.kind), h("b", m.role), " ", m.tool_calls ? "→ " + m.tool_calls.map((t) => t.name).join(", ") : short(m.content, 160));

// renderCallsList lists a run's captured calls; with none, capture says
// why: this daemon captures (the run had no model call that served a turn)
// or it does not (how to turn it on).
export function renderCallsList(el, calls, sel, pick, capture) {
  if (!calls.length) return fill(el, h("p.empty.pad", capture ? "No captured calls for this run: no model call of it served a turn." :
    "No captured calls for this run. Capture is on under delta dev; elsewhere set DELTA_CAPTURE_CALLS=1."));
  fill(el, calls.map((c, i) => {
    const held = i > 0 ? diff(calls[i - 1], c).prefixHeld : null;
    return h("div.row" + (i === sel ? ".sel" : ""), { dataset: { call: c.id }, onclick: () => pick(i) },
      h("div.t", h("span", `turn ${c.turn}`), h("span.dim", c.model)),
      h("div.s", `${c.usage.input_tokens} in (${c.usage.cache_read_tokens} cached) · ${c.usage.output_tokens} out · ${c.latency_ms} ms · ${usd(c.usage.cost_usd)}`),
      h("div.s", held === null ? "first turn" : held ? "prefix held" : "prefix changed"));
  }));
}

export function renderCall(el, calls, i) {
  const c = calls[i];
  if (!c) return fill(el, h("p.empty", "Select a turn to see its request and response."));
  const rq = c.request, rs = c.response;
  const d = i > 0 ? diff(calls[i - 1], c) : null;
  fill(el,
    h("h2", `Turn ${c.turn} · step ${c.step}`),
    d ? h("div.diff", h("h3", "Against the previous turn"),
      h("p", d.prefixHeld ? h("span.ok", "Cached prefix held") : h("span.err", "Cached prefix changed"), ` (prefix ${rq.prefix_key}) · ${d.kept} message${d.kept === 1 ? "" : "s"} unchanged, ${d.added.length} new, ${d.removed.length} gone`),
      d.system.length ? h("p", "System blocks changed: ", d.system.join(", ")) : null,
      d.toolsAdded.length ? h("p.add", "+ tools: ", d.toolsAdded.join(", ")) : null,
      d.toolsRemoved.length ? h("p.del", "− tools: ", d.toolsRemoved.join(", ")) : null,
      d.effort ? h("p", "effort: ", d.effort) : null,
      d.removed.map((m) => h("div.del", "− ", msgLine(m))), d.added.map((m) => h("div.add", "+ ", msgLine(m)))) : null,
    h("h3", "Request"),
    h("p", "model ", h("b", rq.model || "—"), " · effort ", h("b", rq.reasoning_effort || "default"), " · ", rq.messages.length, " messages · ", rq.tools.length, " tools"),
    h("details.system", h("summary", `System spine (${rq.system.length} blocks)`), rq.system.map((s) => h("pre", s))),
    h("details.messages", { open: true }, h("summary", "Messages"), rq.messages.map((m) => h("div.msg",
      h("div", h("span.kind", m.kind), h("b", m.role), m.name ? " " + m.name : "", m.images ? ` · ${m.images.length} image(s) as markers` : ""),
      m.content ? h("pre", m.content) : null, m.tool_calls ? h("pre", pretty(m.tool_calls)) : null))),
    h("details.tools", h("summary", "Tool schemas"), rq.tools.map((t) => h("details.tool", h("summary", h("b", t.name), " ", h("span.dim", short(t.description, 100))), h("pre", pretty(t.parameters))))),
    h("h3", "Response"),
    h("p", "model ", h("b", rs.model), " · provider ", h("b", rs.provider || "—"), " · ", rs.latency_ms, " ms", rs.retries ? ` · ${rs.retries} retries` : "", rs.fallback ? " · fallback" : "", rs.finish_reason ? " · " + rs.finish_reason : ""),
    h("p", `${rs.usage.input_tokens} in · ${rs.usage.cache_read_tokens || 0} cached · ${rs.usage.output_tokens} out · ${usd(rs.usage.cost_usd)}`),
    rs.text ? h("pre.reply", rs.text) : null,
    rs.tool_calls ? rs.tool_calls.map((t) => h("div", badge(t.name), h("pre", pretty(t.arguments)))) : null);
}
