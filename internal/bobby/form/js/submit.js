// Submit-side steps. op "arm" runs on the submit target and returns, by
// reference, a handle that records the controls the browser's validation
// marks invalid; the other ops run on that handle.
const ALERTS = '[role=alert], [aria-live=assertive]';
switch (op) {
  case 'arm': {
    const el = this;
    const form = el.localName === 'form' ? el : (el.form || (el.closest && el.closest('form')));
    // The alert regions' text before the submit: only what changes after
    // it is the page's answer to this submit.
    const alerts = new Map();
    for (const a of document.querySelectorAll(ALERTS)) alerts.set(a, norm(a.innerText));
    // The fields marked aria-invalid before the submit, and those the page
    // marks (or marks again) while it runs: a mark left over from an
    // earlier attempt is no answer to this one.
    const root = form ? form.getRootNode() : document;
    const marked = new Set(Array.from(root.querySelectorAll('[aria-invalid]')).filter((c) => c.getAttribute('aria-invalid') === 'true'));
    const touched = new Set();
    const observer = new MutationObserver((records) => { for (const r of records) touched.add(r.target); });
    observer.observe(root, {subtree: true, attributes: true, attributeFilter: ['aria-invalid']});
    if (!form) return {alerts, marked, touched, observer, info: {form: false}};
    const seen = [];
    // invalid does not bubble: listen in the capture phase on the form's
    // tree, which sees it on its way to the control.
    const onInvalid = (e) => {
      const t = e.target;
      if ((form.contains(t) || t.form === form) && !seen.includes(t)) seen.push(t);
    };
    root.addEventListener('invalid', onInvalid, true);
    return {
      seen, form, alerts, marked, touched, observer,
      off: () => root.removeEventListener('invalid', onInvalid, true),
      info: {form: true, isForm: el === form, noValidate: form.noValidate || !!el.formNoValidate},
    };
  }
  case 'info':
    return this.info;
  case 'count':
    return this.seen ? this.seen.length : 0;
  case 'submitForm':
    // A form target submits the way pressing Enter would: requestSubmit
    // runs validation first, like a submit button.
    this.form.requestSubmit();
    return true;
  case 'issues': {
    const els = this.seen.slice(0, 50);
    const data = els.map((el) => {
      const type = controlType(el);
      const v = validityOf(el, type);
      return {
        name: el.getAttribute('name') || el.id || labelOf(el),
        label: labelOf(el),
        role: implicitRole(el, type),
        constraint: v.constraint || 'invalid',
        message: v.message || 'Please enter a valid value.',
      };
    });
    return {els, data: JSON.stringify(data)};
  }
  case 'pageIssues': {
    // Errors the page writes itself (a novalidate form, a server answer it
    // renders): controls it marks aria-invalid, with the text of their
    // aria-errormessage / aria-describedby, and alert regions whose text is
    // new since the submit. Typed values the page quotes back are cut out.
    // A mark the page neither set nor touched during the submit is stale:
    // it is reported (flagged) for a form target, whose fields it sits on,
    // and left out for anything else, a link say.
    for (const r of this.observer.takeRecords()) this.touched.add(r.target);
    const controls = this.form ? Array.from(this.form.elements)
      : Array.from(document.querySelectorAll('input, select, textarea, [contenteditable]'));
    const values = [];
    for (const c of controls) {
      const type = controlType(c);
      if (!type || type.startsWith('select') || ['checkbox', 'radio', 'file', 'range', 'color'].includes(type)) continue;
      const raw = String((type === 'contenteditable' ? c.innerText : c.value) || '');
      for (const v of [raw.trim(), norm(raw)]) if (v.length >= 2 && !values.includes(v)) values.push(v);
    }
    values.sort((a, b) => b.length - a.length);
    const scrub = (s) => {
      let out = norm(s);
      for (const v of values) out = out.split(v).join('…');
      return out.length > 300 ? out.slice(0, 299) + '…' : out;
    };
    const els = [], data = [], used = [];
    for (const c of controls) {
      const type = controlType(c);
      if (!type || c.getAttribute('aria-invalid') !== 'true' || !isVisible(c)) continue;
      const stale = this.marked.has(c) && !this.touched.has(c);
      if (stale && !this.form) continue;
      const ids = [c.getAttribute('aria-errormessage'), c.getAttribute('aria-describedby')].filter(Boolean).join(' ');
      const parts = [];
      for (const id of ids.split(/\s+/)) {
        const t = id && c.getRootNode().getElementById(id);
        if (!t) continue;
        used.push(t);
        const text = norm(t.innerText || t.textContent);
        if (text && !parts.includes(text)) parts.push(text);
      }
      els.push(c);
      data.push({
        name: c.getAttribute('name') || c.id || labelOf(c), label: labelOf(c), role: implicitRole(c, type),
        constraint: 'ariaInvalid', message: scrub(parts.join(' ')) || 'The page marked this field invalid.', stale,
      });
      if (els.length >= 50) break;
    }
    for (const a of document.querySelectorAll(ALERTS)) {
      if (els.length >= 50) break;
      if (used.some((u) => u === a || u.contains(a))) continue;
      const text = norm(a.innerText);
      if (!text || (this.alerts && this.alerts.get(a) === text) || !isVisible(a)) continue;
      els.push(a);
      data.push({name: a.id || '', label: '', role: 'alert', constraint: 'pageAlert', message: scrub(text)});
    }
    return {els, data: JSON.stringify(data)};
  }
  case 'disarm':
    if (this.off) this.off();
    this.observer.disconnect();
    return true;
}
throw new Error('unknown op ' + op);
