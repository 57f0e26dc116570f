// The accessibility walker for engines without an accessibility-tree
// protocol (Firefox over WebDriver BiDi). Called as a function declaration
// with (op, arg):
//   op "walk",   arg = the first ref number to hand out when this document
//                has none yet: returns {json, frames}
//   op "read",   arg = a ref number or 0 for the page: returns {json} with
//                its text, value (never a password's), visibility, and the
//                document's url and readyState, for waits
//   op "locate" (or "reveal", which first scrolls it into view), arg = a
//                ref number: returns {json, el, root}, root being
//                the shadow root holding el (null in a document)
//   op "describe", arg = {base, els}: for each element its ref (handed
//                out as a walk hands them out, base as in "walk"), and its
//                role and name when a snapshot would show it: returns
//                {json, frames}, frames[i] the contentWindow of element i
//                when it is an iframe
// json is a JSON text (one round trip, no per-node protocol values); frames
// lists the contentWindow of every iframe node by its index, so the
// protocol serializes each as its browsing-context id; el is the element.
//
// Roles use the role vocabulary of Chromium's accessibility tree (the
// explicit role, else the implicit HTML role; "StaticText", "LabelText",
// "RootWebArea", "Iframe" and "generic" for the rest), so the snapshot
// package renders both engines with one set of rules. Names follow the
// accessible-name computation for the common cases.
function bobbyA11y(op, arg) {
  'use strict';
  const KEY = Symbol.for('bobby.a11y.refs');
  const top = window;
  let st = top[KEY];
  if (!st) {
    // Only the ops that hand out refs start the document's map, from the
    // base they are given: a locate or read of a document with no refs
    // yet finds nothing, and must not start the numbering at its ref.
    const base = arg && typeof arg === 'object' ? arg.base : arg;
    st = { next: Math.max(1, Number(base) || 1), byEl: new WeakMap(), byId: new Map() };
    if (op === 'walk' || op === 'describe') Object.defineProperty(top, KEY, { value: st, enumerable: false });
  }
  const idOf = (el) => {
    let id = st.byEl.get(el);
    if (!id) {
      id = st.next++;
      st.byEl.set(el, id);
      st.byId.set(id, new WeakRef(el));
    }
    return id;
  };

  const norm = (s) => String(s == null ? '' : s).replace(/\s+/g, ' ').trim();
  const styleOf = (el) => {
    try { return el.ownerDocument.defaultView.getComputedStyle(el); } catch (e) { return null; }
  };
  // hiddenSubtree: nothing under el is rendered or exposed.
  const hiddenSubtree = (el) => {
    if (el.getAttribute('aria-hidden') === 'true') return true;
    const s = styleOf(el);
    return !!s && s.display === 'none';
  };
  const invisible = (el) => {
    const s = styleOf(el);
    return !!s && (s.visibility === 'hidden' || s.visibility === 'collapse');
  };
  const textVisible = (t) => {
    const p = t.parentElement;
    if (!p) return true;
    const s = styleOf(p);
    return !s || (s.visibility !== 'hidden' && s.visibility !== 'collapse');
  };

  const known = new Set(('alert alertdialog application article banner blockquote button caption cell checkbox code ' +
    'columnheader combobox complementary contentinfo definition deletion dialog directory document emphasis feed ' +
    'figure form generic grid gridcell group heading img image insertion link list listbox listitem log main mark ' +
    'marquee math menu menubar menuitem menuitemcheckbox menuitemradio meter navigation none note option paragraph ' +
    'presentation progressbar radio radiogroup region row rowgroup rowheader scrollbar search searchbox separator ' +
    'slider spinbutton status strong subscript superscript switch tab table tablist tabpanel term textbox time ' +
    'timer toolbar tooltip tree treegrid treeitem').split(' '));
  const inSection = (el) => !!el.parentElement && !!el.parentElement.closest('article,aside,main,nav,section');
  const hasName = (el) => !!(norm(el.getAttribute('aria-label')) || el.hasAttribute('aria-labelledby') || norm(el.getAttribute('title')));

  function implicitRole(el) {
    const tag = el.localName;
    switch (tag) {
      case 'a': case 'area': return el.hasAttribute('href') ? 'link' : 'generic';
      case 'button': return 'button';
      case 'summary': return 'DisclosureTriangle';
      case 'input': {
        const t = (el.getAttribute('type') || 'text').toLowerCase();
        switch (t) {
          case 'hidden': return '';
          case 'button': case 'submit': case 'reset': case 'image': case 'file': return 'button';
          case 'checkbox': return 'checkbox';
          case 'radio': return 'radio';
          case 'range': return 'slider';
          case 'number': return 'spinbutton';
          case 'search': return el.hasAttribute('list') ? 'combobox' : 'searchbox';
          case 'date': case 'month': case 'week': return 'Date';
          case 'datetime-local': return 'DateTime';
          case 'time': return 'InputTime';
          case 'color': return 'ColorWell';
          default: return el.hasAttribute('list') ? 'combobox' : 'textbox';
        }
      }
      case 'textarea': return 'textbox';
      case 'select': return (el.multiple || el.size > 1) ? 'listbox' : 'combobox';
      case 'option': return 'option';
      case 'optgroup': return 'group';
      case 'h1': case 'h2': case 'h3': case 'h4': case 'h5': case 'h6': return 'heading';
      case 'ul': case 'ol': case 'menu': return 'list';
      case 'li': return 'listitem';
      case 'dl': return 'DescriptionList';
      case 'dt': return 'term';
      case 'dd': return 'definition';
      case 'table': return 'table';
      case 'thead': case 'tbody': case 'tfoot': return 'rowgroup';
      case 'tr': return 'row';
      case 'td': return el.closest('table[role=grid],table[role=treegrid]') ? 'gridcell' : 'cell';
      case 'th': {
        const sc = (el.getAttribute('scope') || '').toLowerCase();
        if (sc === 'row' || sc === 'rowgroup') return 'rowheader';
        return 'columnheader';
      }
      case 'caption': return 'caption';
      case 'header': return inSection(el) ? 'sectionheader' : 'banner';
      case 'footer': return inSection(el) ? 'sectionfooter' : 'contentinfo';
      case 'nav': return 'navigation';
      case 'main': return 'main';
      case 'aside': return 'complementary';
      case 'section': return hasName(el) ? 'region' : 'Section';
      case 'search': return 'search';
      case 'form': return 'form';
      case 'article': return 'article';
      case 'img': return el.getAttribute('alt') === '' && !el.hasAttribute('title') ? 'none' : 'image';
      case 'svg': return 'image';
      case 'dialog': return 'dialog';
      case 'details': return 'Details';
      case 'fieldset': return 'group';
      case 'legend': return 'Legend';
      case 'figure': return 'figure';
      case 'label': return 'LabelText';
      case 'p': return 'paragraph';
      case 'strong': return 'strong';
      case 'em': return 'emphasis';
      case 'code': return 'code';
      case 'pre': return 'Pre';
      case 'blockquote': return 'blockquote';
      case 'hr': return 'separator';
      case 'progress': return 'progressbar';
      case 'meter': return 'meter';
      case 'output': return 'status';
      case 'iframe': case 'frame': return 'Iframe';
      case 'br': return 'LineBreak';
      case 'abbr': return 'Abbr';
      case 'time': return 'time';
      case 'mark': return 'mark';
      case 'sub': return 'subscript';
      case 'sup': return 'superscript';
      case 'ins': return 'insertion';
      case 'del': case 's': return 'deletion';
      case 'canvas': return 'Canvas';
      case 'math': return 'math';
      default: return 'generic';
    }
  }
  function roleOf(el) {
    const attr = norm(el.getAttribute('role')).toLowerCase();
    if (attr) {
      for (const r of attr.split(' ')) {
        if (!known.has(r)) continue;
        if (r === 'presentation') return 'none';
        if (r === 'image') return 'image';
        if (r === 'img') return 'image';
        return r;
      }
    }
    return implicitRole(el);
  }

  const nameFromContent = new Set(['button', 'cell', 'checkbox', 'columnheader', 'gridcell', 'heading', 'link',
    'menuitem', 'menuitemcheckbox', 'menuitemradio', 'option', 'radio', 'rowheader', 'switch', 'tab',
    'tooltip', 'treeitem', 'DisclosureTriangle', 'LabelText', 'caption', 'Legend', 'term', 'sectionheader',
    'sectionfooter', 'strong', 'emphasis', 'code', 'mark', 'time', 'deletion', 'insertion', 'subscript',
    'superscript', 'generic', 'paragraph', 'Abbr', 'none']);
  const blockish = (el) => {
    const s = styleOf(el);
    return !!s && !/^inline/.test(s.display) && s.display !== 'contents';
  };

  // childrenOf lists what a user sees under el: an open shadow root in
  // place of the light children, a slot's assigned (or fallback) nodes.
  function childrenOf(el) {
    if (el.shadowRoot) return Array.from(el.shadowRoot.childNodes);
    if (el.localName === 'slot') {
      const a = el.assignedNodes({ flatten: true });
      return a.length ? a : Array.from(el.childNodes);
    }
    return Array.from(el.childNodes);
  }

  // contentText is the text alternative an element gives its ancestor's
  // name: its own label if it has one, a control's value, else its text.
  function contentText(node, skip, depth) {
    if (depth > 30) return '';
    if (node.nodeType === 3) return textVisible(node) ? node.data : '';
    if (node.nodeType !== 1 || node === skip) return '';
    const el = node;
    if (hiddenSubtree(el)) return '';
    const role = roleOf(el);
    const lab = norm(el.getAttribute('aria-label'));
    if (lab && depth > 0) return lab;
    switch (role) {
      case 'textbox': case 'searchbox': return el.value != null ? String(el.value) : '';
      case 'combobox': case 'listbox':
        if (el.localName === 'select') return Array.from(el.selectedOptions || []).map((o) => o.text).join(' ');
        return el.value != null ? String(el.value) : '';
      case 'spinbutton': case 'slider': return el.value != null ? String(el.value) : '';
    }
    if (el.localName === 'img' || (el.localName === 'input' && el.type === 'image')) return el.getAttribute('alt') || '';
    if (depth > 0 && !nameFromContent.has(role) && !(role in { list: 1, listitem: 1, group: 1, Section: 1 })) {
      // A nested landmark or widget without name-from-content still reads
      // as its text in a parent's name.
    }
    let out = '';
    for (const c of childrenOf(el)) {
      const t = contentText(c, skip, depth + 1);
      if (!t) continue;
      out += (c.nodeType === 1 && blockish(c)) ? ' ' + t + ' ' : t;
    }
    if (!norm(out) && depth > 0) return el.getAttribute('title') || '';
    return out;
  }

  function byIdRefs(el, attr) {
    const ids = norm(el.getAttribute(attr)).split(' ').filter(Boolean);
    const root = el.getRootNode();
    const out = [];
    for (const id of ids) {
      const t = (root.getElementById ? root.getElementById(id) : null) || el.ownerDocument.getElementById(id);
      if (t) out.push(t);
    }
    return out;
  }
  const labelable = (el) => /^(input|textarea|select|button|meter|output|progress)$/.test(el.localName);
  function labelsOf(el) {
    if (!labelable(el)) return [];
    try { return el.labels ? Array.from(el.labels) : []; } catch (e) { return []; }
  }

  // nameOf computes the accessible name and the label elements behind it.
  function nameOf(el, role) {
    const lb = byIdRefs(el, 'aria-labelledby');
    if (lb.length) {
      const n = norm(lb.map((l) => norm(l.getAttribute('aria-label')) || contentText(l, null, 1)).join(' '));
      if (n) return { name: n, labels: lb };
    }
    const al = norm(el.getAttribute('aria-label'));
    if (al) return { name: al, labels: [] };
    const tag = el.localName;
    const type = tag === 'input' ? (el.getAttribute('type') || 'text').toLowerCase() : '';
    if (tag === 'input' && (type === 'button' || type === 'submit' || type === 'reset')) {
      const v = el.getAttribute('value');
      if (v != null && norm(v)) return { name: norm(v), labels: [] };
      if (type === 'submit') return { name: 'Submit', labels: [] };
      if (type === 'reset') return { name: 'Reset', labels: [] };
    }
    if (tag === 'input' && type === 'image') {
      const a = norm(el.getAttribute('alt'));
      if (a) return { name: a, labels: [] };
    }
    const ls = labelsOf(el);
    if (ls.length) {
      const n = norm(ls.map((l) => contentText(l, el, 1)).join(' '));
      if (n) return { name: n, labels: ls };
    }
    if (tag === 'img' || tag === 'area') {
      const a = norm(el.getAttribute('alt'));
      if (a) return { name: a, labels: [] };
    }
    if (tag === 'fieldset') {
      const lg = Array.from(el.children).find((c) => c.localName === 'legend');
      if (lg) { const n = norm(contentText(lg, null, 1)); if (n) return { name: n, labels: [] }; }
    }
    if (tag === 'table') {
      const cap = Array.from(el.children).find((c) => c.localName === 'caption');
      if (cap) { const n = norm(contentText(cap, null, 1)); if (n) return { name: n, labels: [] }; }
    }
    if (tag === 'figure') {
      const fc = Array.from(el.children).find((c) => c.localName === 'figcaption');
      if (fc) { const n = norm(contentText(fc, null, 1)); if (n) return { name: n, labels: [] }; }
    }
    if (nameFromContent.has(role) && !/^(generic|paragraph|none|LabelText|strong|emphasis|code|mark|time|deletion|insertion|subscript|superscript|Abbr|sectionheader|sectionfooter)$/.test(role)) {
      const n = norm(contentText(el, null, 0));
      if (n) return { name: n, labels: [] };
    }
    const ti = norm(el.getAttribute('title'));
    if (ti) return { name: ti, labels: [] };
    if ((tag === 'input' || tag === 'textarea') && norm(el.getAttribute('placeholder'))) {
      return { name: norm(el.getAttribute('placeholder')), labels: [] };
    }
    return { name: '', labels: [] };
  }

  const ariaBool = (el, a) => {
    const v = el.getAttribute(a);
    return v == null ? '' : v.toLowerCase();
  };
  function deepActive() {
    let a = document.activeElement;
    for (;;) {
      if (a && a.shadowRoot && a.shadowRoot.activeElement) { a = a.shadowRoot.activeElement; continue; }
      if (a && (a.localName === 'iframe' || a.localName === 'frame')) {
        let d = null;
        try { d = a.contentDocument; } catch (e) { d = null; }
        if (d && d.activeElement && d.activeElement !== d.body) { a = d.activeElement; continue; }
      }
      return a;
    }
  }

  function propsOf(el, role, active) {
    const p = {};
    const tag = el.localName;
    if (role === 'checkbox' || role === 'radio' || role === 'switch' || role === 'menuitemcheckbox' || role === 'menuitemradio') {
      const ac = ariaBool(el, 'aria-checked');
      if (tag === 'input' && (el.type === 'checkbox' || el.type === 'radio')) {
        p.checked = el.indeterminate ? 'mixed' : (el.checked ? 'true' : 'false');
      } else if (ac) {
        p.checked = ac === 'mixed' ? 'mixed' : (ac === 'true' ? 'true' : 'false');
      }
    }
    const pr = ariaBool(el, 'aria-pressed');
    if (pr && role === 'button') p.pressed = pr === 'mixed' ? 'mixed' : (pr === 'true' ? 'true' : 'false');
    if (role === 'option' && tag === 'option') { if (el.selected) p.selected = 'true'; } else if (ariaBool(el, 'aria-selected') === 'true') p.selected = 'true';
    const ex = ariaBool(el, 'aria-expanded');
    if (ex === 'true' || ex === 'false') p.expanded = ex;
    else if (tag === 'select' && role === 'combobox') p.expanded = 'false';
    else if (role === 'DisclosureTriangle' && el.parentElement && el.parentElement.localName === 'details') p.expanded = el.parentElement.open ? 'true' : 'false';
    let disabled = ariaBool(el, 'aria-disabled') === 'true';
    try { disabled = disabled || el.matches(':disabled'); } catch (e) { /* not a form element */ }
    if (disabled) p.disabled = 'true';
    if ((tag === 'input' || tag === 'textarea') && el.readOnly) p.readonly = 'true';
    else if (ariaBool(el, 'aria-readonly') === 'true') p.readonly = 'true';
    // As Chromium exposes them: required on text entry; a choice control
    // (checkbox, radio, select) that fails its constraints is invalid at
    // once, a text field only once the user edited it (:user-invalid).
    const choice = tag === 'select' || (tag === 'input' && /^(checkbox|radio)$/.test(el.type));
    const entry = (tag === 'input' || tag === 'textarea') && !choice;
    if ((entry && el.required) || ariaBool(el, 'aria-required') === 'true') p.required = 'true';
    const inv = ariaBool(el, 'aria-invalid');
    if (inv && inv !== 'false') p.invalid = 'true';
    else if (choice && el.willValidate && el.validity && !el.validity.valid) p.invalid = 'true';
    else if (entry) { try { if (el.matches(':user-invalid')) p.invalid = 'true'; } catch (e) { /* older engines */ } }
    if (el === active && role !== 'RootWebArea') p.focused = 'true';
    if (role === 'heading') {
      const lv = parseInt(el.getAttribute('aria-level') || '', 10);
      p.level = String(lv > 0 ? lv : (/^h[1-6]$/.test(tag) ? Number(tag[1]) : 2));
    }
    if (role === 'link' && el.href) p.url = String(el.href.baseVal != null ? el.href.baseVal : el.href);
    return p;
  }

  function valueOf(el, role) {
    const tag = el.localName;
    switch (role) {
      case 'textbox': case 'searchbox': case 'combobox': case 'spinbutton': case 'slider':
      case 'Date': case 'DateTime': case 'InputTime': case 'ColorWell':
        if (tag === 'select') {
          const o = el.selectedOptions && el.selectedOptions[0];
          return o ? norm(o.text) : '';
        }
        if (tag === 'input' && el.type === 'password') return el.value ? '\u2022' : '';
        if (tag === 'input' || tag === 'textarea') return String(el.value || '');
        if (el.isContentEditable) return norm(el.textContent);
        return el.getAttribute('aria-valuenow') || el.getAttribute('aria-valuetext') || '';
      case 'progressbar': case 'meter':
        if (tag === 'progress' || tag === 'meter') return el.hasAttribute('value') ? String(el.value) : '';
        return el.getAttribute('aria-valuenow') || '';
    }
    if (tag === 'input' && el.type === 'file') {
      // The text beside the picker button, in Chromium's words.
      const fs = el.files ? el.files.length : 0;
      return fs === 0 ? 'No file chosen' : (fs === 1 ? el.files[0].name : fs + ' files');
    }
    return '';
  }

  const frames = [];
  // walkNode builds the node for an element or text, or null when nothing
  // of it is exposed; push adds it (or, for an ignored box, its children).
  function walkChildren(el, out, active, depth) {
    for (const c of childrenOf(el)) walkNode(c, out, active, depth + 1);
  }
  function walkNode(node, out, active, depth) {
    if (depth > 400) return;
    if (node.nodeType === 3) {
      if (!norm(node.data) || !textVisible(node)) return;
      out.push({ r: 'StaticText', n: node.data.replace(/\s+/g, ' ') });
      return;
    }
    if (node.nodeType !== 1) return;
    const el = node;
    const tag = el.localName;
    if (/^(script|style|template|noscript|head|title|meta|link|datalist)$/.test(tag)) return;
    if (el.hasAttribute('hidden') && hiddenSubtree(el)) return;
    if (hiddenSubtree(el)) return;
    if (tag === 'dialog' && !el.open) return;
    const role = roleOf(el);
    if (role === '') return;
    if (invisible(el)) {
      // A hidden box may hold visible children (visibility: visible).
      walkChildren(el, out, active, depth);
      return;
    }
    const nm = nameOf(el, role);
    const n = { r: role, id: idOf(el) };
    if (nm.name) n.n = nm.name;
    if (nm.labels.length) n.l = nm.labels.map(idOf);
    const v = valueOf(el, role);
    if (v) n.v = v;
    const p = propsOf(el, role, active);
    if (Object.keys(p).length) n.p = p;
    // Inline boxes with no role of their own (span, b, i) are ignored in
    // the accessibility tree: they neither show nor end a text block.
    if (role === 'generic' && !nm.name) {
      const s = styleOf(el);
      if (s && /^inline/.test(s.display) && s.display !== 'inline-block') n.ig = true;
    }
    const kids = [];
    if (role === 'Iframe') {
      n.f = frames.length;
      let win = null, doc = null;
      try { win = el.contentWindow; } catch (e) { win = null; }
      try { doc = el.contentDocument; } catch (e) { doc = null; }
      frames.push(win);
      if (doc && doc.body) {
        n.g = true;
        const fa = doc.activeElement;
        walkChildren(doc.body, kids, fa === doc.body ? null : active, depth);
      }
    } else if (tag === 'select') {
      if (role === 'listbox') {
        for (const o of el.querySelectorAll('option')) {
          if (hiddenSubtree(o)) continue;
          const on = { r: 'option', id: idOf(o), n: norm(o.label || o.text) };
          const op = propsOf(o, 'option', active);
          if (Object.keys(op).length) on.p = op;
          kids.push(on);
        }
      }
    } else if (!/^(input|textarea|img|svg|canvas|math|progress|meter)$/.test(tag)) {
      walkChildren(el, kids, active, depth);
    }
    if (kids.length) n.c = kids;
    out.push(n);
  }

  if (op === 'walk') {
    for (const [id, ref] of st.byId) { if (!ref.deref()) st.byId.delete(id); }
    const active = deepActive();
    const kids = [];
    if (document.body) walkChildren(document.body, kids, active === document.body ? null : active, 0);
    const root = { r: 'RootWebArea', n: document.title, p: { url: location.href }, c: kids };
    return { json: JSON.stringify({ root, next: st.next }), frames };
  }
  if (op === 'read') {
    // What a wait compares: the text, value and visibility of the element
    // behind a ref, or of the page (arg 0), and the document's state.
    const base = { url: location.href, readyState: document.readyState };
    if (!Number(arg)) {
      return { json: JSON.stringify(Object.assign(base, { found: true, connected: true, visible: true,
        text: document.body ? document.body.innerText : '', value: '' })), el: null };
    }
    const ref = st.byId.get(Number(arg));
    const el = ref && ref.deref();
    if (!el || !el.isConnected) return { json: JSON.stringify(Object.assign(base, { found: !!el, connected: false })), el: null };
    const r = el.getBoundingClientRect();
    const s = styleOf(el);
    const visible = r.width > 0 && r.height > 0 && !!s && s.visibility !== 'hidden' && s.visibility !== 'collapse';
    const value = (el.localName === 'input' && el.type === 'password') ? '' : (el.value != null ? String(el.value) : '');
    return { json: JSON.stringify(Object.assign(base, { found: true, connected: true, visible,
      text: el.innerText != null ? el.innerText : el.textContent, value })), el: null };
  }
  if (op === 'locate' || op === 'reveal') {
    const ref = st.byId.get(Number(arg));
    const el = ref && ref.deref();
    if (!el) return { json: JSON.stringify({ found: false }), el: null };
    if (!el.isConnected) return { json: JSON.stringify({ found: true, connected: false }), el: null };
    if (op === 'reveal') {
      // Bring the element (and each frame holding it) into view before a
      // pointer action aims at it.
      let e = el;
      while (e) {
        e.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
        const fw = e.ownerDocument.defaultView;
        e = fw && fw !== top ? fw.frameElement : null;
      }
    }
    // The element's box in the top-level viewport: add each frame's offset
    // (its box plus border and padding) on the way up.
    const r = el.getBoundingClientRect();
    let x = r.left, y = r.top, visible = r.width > 0 && r.height > 0;
    // hit: the point a click aims at lands on the element (or inside it),
    // not on something covering it.
    let hit = false;
    try {
      let at = el.getRootNode().elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
      hit = !!at && (at === el || el.contains(at) || (at.shadowRoot && at.shadowRoot.contains(el)) || (el.labels && Array.from(el.labels).some((l) => l === at || l.contains(at))));
    } catch (e) { hit = false; }
    let w = el.ownerDocument.defaultView, inFrame = false;
    while (w && w !== top && w.frameElement) {
      inFrame = true;
      const fe = w.frameElement;
      const fr = fe.getBoundingClientRect();
      const fs = styleOf(fe);
      x += fr.left + fe.clientLeft + (fs ? parseFloat(fs.paddingLeft) || 0 : 0);
      y += fr.top + fe.clientTop + (fs ? parseFloat(fs.paddingTop) || 0 : 0);
      w = fe.ownerDocument.defaultView;
    }
    return {
      json: JSON.stringify({
        found: true, connected: true, role: roleOf(el), name: nameOf(el, roleOf(el)).name,
        x: x + r.width / 2, y: y + r.height / 2, width: r.width, height: r.height, visible, hit, inFrame,
      }),
      el,
      root: el.getRootNode() instanceof ShadowRoot ? el.getRootNode() : null,
    };
  }
  if (op === 'describe') {
    // shown: a walk would reach the element and list it. Up the flat tree
    // (slots, shadow hosts, frame elements) nothing may hide it.
    const up = (e) => {
      if (e.assignedSlot) return e.assignedSlot;
      const p = e.parentNode;
      if (!p) return null;
      if (p.nodeType === 11) return p.host || null;
      if (p.nodeType === 9) { const w = p.defaultView; return w && w !== top ? w.frameElement : null; }
      return p;
    };
    const shown = (el, role) => {
      if (!el.isConnected || role === '' || role === 'none' || invisible(el)) return false;
      for (let e = el; e; e = up(e)) {
        if (e.nodeType !== 1) continue;
        if (hiddenSubtree(e) || (e.localName === 'dialog' && !e.open)) return false;
      }
      return true;
    };
    const nodes = [];
    const wins = [];
    for (const el of (arg && arg.els) || []) {
      let win = null;
      if (!el || el.nodeType !== 1) { nodes.push(null); wins.push(win); continue; }
      const role = roleOf(el);
      const d = { id: idOf(el) };
      if (shown(el, role)) { d.r = role; const nm = nameOf(el, role).name; if (nm) d.n = nm; }
      if (el.localName === 'iframe' || el.localName === 'frame') { try { win = el.contentWindow; } catch (e) { win = null; } }
      nodes.push(d);
      wins.push(win);
    }
    return { json: JSON.stringify({ nodes, next: st.next }), frames: wins };
  }
  throw new Error('bobbyA11y: unknown op ' + op);
}
