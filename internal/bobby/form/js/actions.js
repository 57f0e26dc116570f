// act runs one step of a control action on `this`. op names the step; arg
// carries its input. It returns plain JSON.
const el = this;
const win = (el.ownerDocument && el.ownerDocument.defaultView) || window;

// nativeSet sets a value through the prototype's setter, past any
// instance-level override (React tracks values on the instance), then fires
// input and change as a commit would.
const nativeSet = (prop, v) => {
  let p = Object.getPrototypeOf(el);
  while (p && !Object.getOwnPropertyDescriptor(p, prop)) p = Object.getPrototypeOf(p);
  const d = p && Object.getOwnPropertyDescriptor(p, prop);
  if (d && d.set) d.set.call(el, v); else el[prop] = v;
};
const fire = (...types) => {
  for (const t of types) el.dispatchEvent(new win.Event(t, {bubbles: true, composed: t === 'input'}));
};

switch (op) {
  case 'read':
    return readControl(el);

  case 'focusSelect': {
    // Focus and select the current content so typed text replaces it.
    el.focus();
    const type = controlType(el);
    if (type === 'contenteditable') {
      const sel = win.getSelection();
      const r = el.ownerDocument.createRange();
      r.selectNodeContents(el);
      sel.removeAllRanges();
      sel.addRange(r);
    } else if (typeof el.select === 'function') {
      el.select();
    }
    return {focused: el.getRootNode().activeElement === el};
  }

  case 'setValue':
    el.focus();
    nativeSet('value', arg);
    fire('input', 'change');
    return true;

  case 'blur':
    el.blur();
    return true;

  case 'selectOptions': {
    // Match each wanted entry by option value first, then by visible label
    // trimmed and case-insensitive.
    const opts = [...el.options];
    const picked = new Set();
    const missing = [];
    for (const want of arg.values) {
      let o = opts.find((x) => x.value === want);
      if (!o) o = opts.find((x) => norm(x.label || x.text).toLowerCase() === norm(want).toLowerCase());
      if (!o) { missing.push(want); continue; }
      if (o.disabled) return {error: 'option ' + JSON.stringify(want) + ' is disabled'};
      picked.add(o);
    }
    if (missing.length) {
      return {missing, available: opts.slice(0, 30).map((x) => ({value: x.value, label: norm(x.label || x.text)}))};
    }
    el.focus();
    if (!el.multiple) {
      const o = [...picked][0];
      if (o) nativeSet('value', o.value); else el.selectedIndex = -1;
    } else {
      for (const o of opts) o.selected = picked.has(o);
    }
    fire('input', 'change');
    return {ok: true, values: [...picked].map((o) => o.value)};
  }

  case 'hit': {
    // Is the centre of the element the element itself (or its label), or is
    // something drawn over it?
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) return {ok: false, reason: 'the element has no size (hidden)'};
    const root = el.getRootNode();
    const h = (root.elementFromPoint ? root : el.ownerDocument).elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    if (!h) return {ok: false, reason: 'the element is outside the viewport'};
    if (h === el || el.contains(h) || (el.labels && [...el.labels].some((l) => l.contains(h)))) return {ok: true};
    if (h.shadowRoot && h.shadowRoot.contains(el)) return {ok: true};
    let d = h.localName;
    if (h.id) d += '#' + h.id;
    if (h.classList && h.classList.length) d += '.' + [...h.classList].slice(0, 3).join('.');
    return {ok: false, reason: 'covered by <' + d + '>'};
  }

  case 'jsClick':
    el.click();
    return true;
}
throw new Error('unknown op ' + op);
