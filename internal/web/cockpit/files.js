import { h, fill } from "./dom.js";
import { get, send, filePath } from "./api.js";

// The workspace tree (the API never lists .delta or secrets files) and an
// editor that saves bytes to disk.
export async function loadTree(el, open) {
  let tree;
  try { tree = await get("/v1/dev/files"); } catch (e) { return fill(el, h("p.err.pad", e.message)); }
  fill(el, tree.data.map((f) => {
    const depth = f.path.split("/").length - 1;
    return h("div.row" + (f.dir ? ".dir" : ""), { dataset: { path: f.path }, style: `padding-left:${12 + depth * 14}px`, onclick: f.dir ? null : () => open(f.path) },
      f.dir ? "▸ " : "", f.path.split("/").pop(), f.dir ? "" : h("span.dim", `  ${f.size} B`));
  }), tree.truncated ? h("p.dim", "(more files than shown)") : null);
}

export async function openFile(el, path, saved) {
  let f;
  try { f = await get("/v1/dev/files/" + filePath(path)); } catch (e) { return fill(el, h("p.err", e.message)); }
  const area = h("textarea", { spellcheck: "false", id: "editor" });
  area.value = f.content;
  const note = h("span.dim", { id: "save-note" }, f.writable ? "" : "Read-only: set DELTA_INSPECT_WRITE=1 (delta dev turns it on) to save.");
  const save = h("button.act", { id: "save", disabled: !f.writable, onclick: async () => {
    save.disabled = true;
    try { const r = await send("PUT", "/v1/dev/files/" + filePath(path), { content: area.value }); note.textContent = `Saved ${r.size} bytes to disk.`; note.className = "ok"; if (saved) saved(); }
    catch (e) { note.textContent = e.message; note.className = "err"; }
    save.disabled = false;
  } }, "Save");
  fill(el, h("h2", path), h("p", save, " ", note), area);
}
