// h builds an element: h("td.n", {title: "x"}, "text", child, …). Text is
// always set as text, never parsed as HTML. Only a plain object in the
// second place is attributes; anything else there is the first child, a
// falsy one included (0 turns is shown as "0").
export function h(spec, attrs, ...kids) {
  const [tag, ...cls] = spec.split(".");
  const el = document.createElement(tag || "div");
  if (cls.length) el.className = cls.join(" ");
  if (attrs !== undefined && (attrs === null || typeof attrs !== "object" || attrs instanceof Node || Array.isArray(attrs))) { kids.unshift(attrs); attrs = null; }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k === "style") el.style.cssText = v; // through CSSOM: the page's CSP refuses style attributes
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const k of kids.flat(Infinity)) {
    if (k === null || k === undefined || k === false) continue;
    el.append(k instanceof Node ? k : String(k));
  }
  return el;
}

export const fill = (el, ...kids) => { el.replaceChildren(); for (const k of kids.flat(Infinity)) if (k) el.append(k); return el; };
export const pretty = (v) => { try { return JSON.stringify(typeof v === "string" ? JSON.parse(v) : v, null, 2); } catch { return String(v); } };
export const short = (s, n = 120) => { s = String(s ?? ""); return s.length > n ? s.slice(0, n) + "…" : s; };
export const time = (t) => t ? new Date(t).toLocaleTimeString([], { hour12: false }) : "";
export const usd = (v) => "$" + Number(v || 0).toFixed(4);
export const badge = (text, cls = "") => h("span.badge" + (cls ? "." + cls : ""), text);
