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
      f.dir ? "▸ " : "", f.path.split("/").pop(), f.dir ? "" : h("span.dim", `  ${f.size} B`), drafts.has(f.path) ? h("span.warn.draft", "  unsaved") : "");
  }), tree.truncated ? h("p.dim", "(more files than shown)") : null);
}

// drafts holds each file's unsaved edit, and the content it started from,
// until it is saved: opening another file or tab keeps it, reopening the
// file brings it back, and leaving the page with one asks first.
const drafts = new Map();
addEventListener("beforeunload", (e) => { if (drafts.size) e.preventDefault(); });

export async function openFile(el, path, saved) {
  let f;
  try { f = await get("/v1/dev/files/" + filePath(path)); } catch (e) { return fill(el, h("p.err", e.message)); }
  const draft = drafts.get(path);
  // A save names the content its edit started from: the daemon refuses it
  // (409) when the file changed meanwhile, instead of overwriting that.
  let base = draft ? draft.base : f.sha256;
  const area = h("textarea", { spellcheck: "false", id: "editor" });
  area.value = draft ? draft.text : f.content;
  area.addEventListener("input", () => {
    drafts.set(path, { text: area.value, base });
    const row = document.querySelector(`#files-tree [data-path="${CSS.escape(path)}"]`);
    if (row && !row.querySelector(".draft")) row.append(h("span.warn.draft", "  unsaved"));
  });
  const note = h("span.dim", { id: "save-note" }, f.writable ? "" : "Read-only: set DELTA_INSPECT_WRITE=1 (delta dev turns it on) to save.");
  if (draft) { note.textContent = "Your unsaved edit, kept from before."; note.className = "warn"; }
  const overwrite = h("button.act", { id: "overwrite", hidden: true, onclick: () => write(false) }, "Overwrite");
  const write = async (checked) => {
    save.disabled = true;
    const body = { content: area.value };
    if (checked && base) body.base_sha256 = base;
    try {
      const r = await send("PUT", "/v1/dev/files/" + filePath(path), body);
      base = r.sha256;
      drafts.delete(path);
      overwrite.hidden = true;
      note.textContent = `Saved ${r.size} bytes to disk.`; note.className = "ok";
      if (saved) saved();
    } catch (e) {
      note.textContent = e.status === 409 ? "Not saved: the file changed on disk since you opened it. Your edit is still here; Overwrite replaces what is on disk, or open the file again in another tab to compare." : e.message;
      note.className = "err";
      overwrite.hidden = e.status !== 409;
    }
    save.disabled = !f.writable;
  };
  const save = h("button.act", { id: "save", disabled: !f.writable, onclick: () => write(true) }, "Save");
  fill(el, h("h2", path), h("p", save, " ", overwrite, " ", note), area);
}
