// Submit-side steps. op "arm" runs on the submit target and returns, by
// reference, a handle that records the controls the browser's validation
// marks invalid; the other ops run on that handle.
switch (op) {
  case 'arm': {
    const el = this;
    const form = el.localName === 'form' ? el : (el.form || (el.closest && el.closest('form')));
    if (!form) return {info: {form: false}};
    const seen = [];
    const root = form.getRootNode();
    // invalid does not bubble: listen in the capture phase on the form's
    // tree, which sees it on its way to the control.
    const onInvalid = (e) => {
      const t = e.target;
      if ((form.contains(t) || t.form === form) && !seen.includes(t)) seen.push(t);
    };
    root.addEventListener('invalid', onInvalid, true);
    return {
      seen, form,
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
  case 'disarm':
    if (this.off) this.off();
    return true;
}
throw new Error('unknown op ' + op);
