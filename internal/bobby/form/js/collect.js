// collect walks the subtree of `this` (a document or an element) in document
// order, entering open shadow roots and same-origin iframes, and returns the
// form controls, their forms and submit buttons, and the iframes they sit in.
// Elements travel in `els` (deep serialization gives their backend node ids);
// everything else travels as one JSON string in `data`, which refers to
// elements by their index in `els`.
const max = opts.max;
const els = [];
const keep = (el) => { els.push(el); return els.length - 1; };
const frames = [];
const frameIndex = new Map();
const forms = [];
const formIndex = new Map();
const controls = [];
let total = 0;

const formOf = (f) => {
  if (!f) return -1;
  if (formIndex.has(f)) return formIndex.get(f);
  const i = forms.length;
  forms.push({el: keep(f), id: f.id || '', name: f.getAttribute('name') || '',
    action: f.getAttribute('action') || '', method: (f.method || 'get').toLowerCase(),
    noValidate: !!f.noValidate, submits: [], controls: 0,
    label: f.getAttribute('aria-label') || (f.getAttribute('aria-labelledby') ? byIdRef(f, f.getAttribute('aria-labelledby')) : '')});
  formIndex.set(f, i);
  return i;
};

const stack = [[this, -1]];
while (stack.length) {
  const [node, frame] = stack.pop();
  if (node.nodeType === 1) {
    const type = controlType(node);
    if (type) {
      total++;
      const fi = formOf(node.form || null);
      if (fi >= 0) forms[fi].controls++;
      if (controls.length < max) {
        const c = readControl(node);
        c.el = keep(node);
        c.frame = frame;
        c.form = fi;
        delete c.connected;
        delete c.focused;
        delete c.length;
        delete c.selected;
        controls.push(c);
      }
    } else if (isSubmitter(node) && node.form) {
      const fi = formOf(node.form);
      if (forms[fi].submits.length < 5) {
        forms[fi].submits.push({el: keep(node), label: norm(node.localName === 'input' ? (node.value || node.alt) : node.textContent)});
      }
    }
  }
  const kids = [];
  if (node.nodeType === 1 && node.shadowRoot) kids.push([node.shadowRoot, frame]);
  if (node.nodeType === 1 && (node.localName === 'iframe' || node.localName === 'frame')) {
    let doc = null;
    try { doc = node.contentDocument; } catch (e) { doc = null; }
    if (doc && doc.documentElement) {
      if (!frameIndex.has(node)) { frameIndex.set(node, frames.length); frames.push(keep(node)); }
      kids.push([doc, frameIndex.get(node)]);
    }
  }
  // Skip what cannot hold controls a person fills.
  if (!(node.nodeType === 1 && ['script', 'style', 'template', 'svg', 'noscript'].includes(node.localName))) {
    for (const c of (node.children || [])) kids.push([c, frame]);
  }
  for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]);
}
let url = '';
try { url = (this.ownerDocument || this).location.href; } catch (e) { url = ''; }
return {els, data: JSON.stringify({controls, forms, frames, total, url})};
