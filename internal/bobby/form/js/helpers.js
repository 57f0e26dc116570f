// Shared helpers, pasted at the top of every function this package runs in
// the page. Nothing here writes to the page's globals.
const norm = (s) => String(s == null ? '' : s).replace(/\s+/g, ' ').trim();

const TEXTLIKE = ['text', 'email', 'password', 'search', 'tel', 'url', 'number'];
const SETTERONLY = ['date', 'time', 'datetime-local', 'month', 'week', 'color', 'range'];

// controlType names the kind of a form control, or '' for anything else.
const controlType = (el) => {
  if (!el || el.nodeType !== 1) return '';
  const tag = el.localName;
  if (tag === 'input') {
    const t = (el.type || 'text').toLowerCase();
    if (['hidden', 'submit', 'image', 'button', 'reset'].includes(t)) return '';
    return t;
  }
  if (tag === 'select') return el.multiple ? 'select-multiple' : 'select-one';
  if (tag === 'textarea') return 'textarea';
  if (el.isContentEditable && !(el.parentElement && el.parentElement.isContentEditable)) return 'contenteditable';
  return '';
};

// isSubmitter reports a button that submits its form.
const isSubmitter = (el) => {
  if (!el || el.nodeType !== 1) return false;
  if (el.localName === 'button') return (el.getAttribute('type') || 'submit').toLowerCase() === 'submit';
  if (el.localName === 'input') return ['submit', 'image'].includes((el.type || '').toLowerCase());
  return false;
};

// implicitRole is the ARIA role of a control, for controls the
// accessibility tree hides (display:none fields still get a semantic target).
const implicitRole = (el, type) => {
  const explicit = el.getAttribute && el.getAttribute('role');
  if (explicit) return explicit.split(/\s+/)[0];
  switch (type) {
    case 'checkbox': return 'checkbox';
    case 'radio': return 'radio';
    case 'select-one': return (el.size > 1) ? 'listbox' : 'combobox';
    case 'select-multiple': return 'listbox';
    case 'number': return 'spinbutton';
    case 'range': return 'slider';
    case 'search': return 'searchbox';
    case 'file': case 'color': return 'button';
    case 'email': case 'tel': case 'url': case 'text':
      return el.getAttribute('list') ? 'combobox' : 'textbox';
  }
  return 'textbox';
};

// textWithout returns an element's text without the text of form controls
// inside it: a label wrapping a <select> is not named by its options.
const textWithout = (el) => {
  if (!el) return '';
  const clone = el.cloneNode(true);
  for (const c of clone.querySelectorAll('input, select, textarea, button, [contenteditable]')) c.remove();
  return norm(clone.textContent);
};

const byIdRef = (el, ids) => {
  const root = el.getRootNode();
  return norm(String(ids).split(/\s+/).map((id) => {
    const t = root.getElementById ? root.getElementById(id) : null;
    return t ? textWithout(t) : '';
  }).join(' '));
};

// labelOf is what a person reads as the control's label.
const labelOf = (el) => {
  const parts = [];
  if (el.labels) for (const l of el.labels) parts.push(textWithout(l));
  let s = norm(parts.join(' '));
  if (!s && el.getAttribute('aria-labelledby')) s = byIdRef(el, el.getAttribute('aria-labelledby'));
  if (!s && el.getAttribute('aria-label')) s = norm(el.getAttribute('aria-label'));
  if (!s && el.title) s = norm(el.title);
  return s;
};

// groupLabelOf names the group a radio (or checkbox) belongs to: the legend
// of its fieldset or the label of its radiogroup.
const groupLabelOf = (el) => {
  const fs = el.closest && el.closest('fieldset');
  if (fs) {
    const lg = fs.querySelector(':scope > legend');
    if (lg) return textWithout(lg);
  }
  const rg = el.closest && el.closest('[role=radiogroup], [role=group]');
  if (rg) {
    if (rg.getAttribute('aria-label')) return norm(rg.getAttribute('aria-label'));
    if (rg.getAttribute('aria-labelledby')) return byIdRef(rg, rg.getAttribute('aria-labelledby'));
  }
  return '';
};

const isVisible = (el) => {
  if (!el.isConnected) return false;
  if (el.checkVisibility && !el.checkVisibility({checkVisibilityCSS: true})) return false;
  const r = el.getBoundingClientRect();
  return r.width > 0 && r.height > 0;
};

const CONSTRAINTS = ['valueMissing', 'typeMismatch', 'patternMismatch', 'tooLong', 'tooShort',
  'rangeUnderflow', 'rangeOverflow', 'stepMismatch', 'badInput', 'customError'];

// validityOf reports the first failed constraint with a message that never
// holds the value: Chromium's own validationMessage quotes what was typed
// ("'bob' is missing an '@'"), so messages are built from the constraint and
// the field's attributes instead. An author's custom message is kept with
// any copy of the value cut out.
const validityOf = (el, type) => {
  if (!el.validity || !el.willValidate) return {valid: true};
  if (el.validity.valid) return {valid: true};
  const v = el.validity;
  const constraint = CONSTRAINTS.find((k) => v[k]) || 'invalid';
  let message = 'Please enter a valid value.';
  switch (constraint) {
    case 'valueMissing':
      message = type === 'checkbox' ? 'Please check this box.'
        : type === 'radio' ? 'Please select one of these options.'
        : type.startsWith('select') ? 'Please select an item in the list.'
        : type === 'file' ? 'Please select a file.'
        : 'Please fill out this field.';
      break;
    case 'typeMismatch':
      message = type === 'email' ? 'Please enter an email address.'
        : type === 'url' ? 'Please enter a URL.' : 'Please enter a valid value.';
      break;
    case 'patternMismatch':
      message = 'Please match the requested format.' + (el.title ? ' ' + norm(el.title) : '');
      break;
    case 'tooLong': message = 'Please use at most ' + el.maxLength + ' characters.'; break;
    case 'tooShort': message = 'Please use at least ' + el.minLength + ' characters.'; break;
    case 'rangeUnderflow': message = 'Value must be ' + el.min + ' or more.'; break;
    case 'rangeOverflow': message = 'Value must be ' + el.max + ' or less.'; break;
    case 'stepMismatch': message = 'Please enter a valid value (step ' + (el.step || '1') + ').'; break;
    case 'customError': {
      message = norm(el.validationMessage);
      const val = type === 'file' ? '' : String(el.value || '');
      if (val.length >= 3) message = message.split(val).join('…');
      break;
    }
  }
  return {valid: false, constraint, message};
};

// readControl is the state of one control as evidence: never a password's
// value (hasValue + length instead), never a file's path (count + names).
const readControl = (el) => {
  const type = controlType(el);
  const out = {type, connected: el.isConnected};
  if (!type) return out;
  out.id = el.id || '';
  out.fieldName = el.getAttribute('name') || '';
  out.label = labelOf(el);
  out.placeholder = el.getAttribute('placeholder') || '';
  out.required = type === 'contenteditable' ? el.getAttribute('aria-required') === 'true' : !!el.required;
  out.disabled = type === 'contenteditable' ? el.getAttribute('aria-disabled') === 'true' : el.matches(':disabled');
  out.readOnly = !!el.readOnly;
  out.visible = isVisible(el);
  out.focused = el.getRootNode().activeElement === el;
  out.role = implicitRole(el, type);
  if (type === 'password') {
    out.hasValue = el.value.length > 0;
    out.length = el.value.length;
  } else if (type === 'file') {
    out.files = el.files ? el.files.length : 0;
    out.fileNames = el.files ? [...el.files].map((f) => f.name) : [];
    out.hasValue = out.files > 0;
    out.multiple = !!el.multiple;
  } else if (type === 'checkbox' || type === 'radio') {
    out.checked = el.checked;
    out.value = el.value;
    out.hasValue = el.checked;
    out.group = el.getAttribute('name') || '';
    out.groupLabel = groupLabelOf(el);
  } else if (type.startsWith('select')) {
    const opts = [...el.options];
    out.options = opts.slice(0, 100).map((o) => ({value: o.value, label: norm(o.label || o.text), selected: o.selected, disabled: o.disabled || undefined}));
    out.moreOptions = Math.max(0, opts.length - 100);
    out.selected = opts.filter((o) => o.selected).map((o) => ({value: o.value, label: norm(o.label || o.text), selected: true}));
    out.value = type === 'select-one' ? el.value : '';
    out.hasValue = out.selected.some((o) => o.value !== '');
  } else if (type === 'contenteditable') {
    out.value = (el.innerText || '').replace(/\n$/, '');
    out.hasValue = out.value.length > 0;
  } else {
    out.value = el.value;
    out.hasValue = el.value.length > 0;
  }
  Object.assign(out, validityOf(el, type));
  return out;
};
