// skein web UI: the namespace the UI acts in, and its picker in the header.
// The namespace is kept in the page's query (/?ns=acme#/runs), so that
// every link within the UI, a hash link, keeps it; the last one picked is
// the default (localStorage). app.js sends it with every API call as
// X-Skein-Namespace (docs/ui.md).
'use strict';

(() => {
  const NS_KEY = 'skein-namespace';
  const DEFAULT = 'default';

  // current is the namespace of the page: ?ns=, else the last one picked.
  function current() {
    const q = new URLSearchParams(location.search).get('ns');
    if (q) return q;
    return localStorage.getItem(NS_KEY) || DEFAULT;
  }

  // keep writes the namespace in the page's address without reloading
  // it, going to hash (the current one when undefined), as a new entry
  // of the history unless replace; and remembers it as the default.
  function keep(ns, hash, replace) {
    const q = new URLSearchParams(location.search);
    q.set('ns', ns);
    const addr = location.pathname + '?' + q.toString() + (hash === undefined ? location.hash : hash);
    if (replace) history.replaceState(null, '', addr);
    else history.pushState(null, '', addr);
    localStorage.setItem(NS_KEY, ns);
  }

  // names reads the names out of GET /v1/namespaces's answer, or null
  // when it holds no list of them.
  function names(data) {
    if (!data || !Array.isArray(data.namespaces)) return null;
    const out = [];
    for (const n of data.namespaces) {
      const name = typeof n === 'string' ? n : (n && typeof n.name === 'string' ? n.name : '');
      if (name && !out.includes(name)) out.push(name);
    }
    return out;
  }

  // sectionOf is the page to show after a switch: the same section, but
  // a run belongs to one namespace, so its page goes back to the runs.
  function sectionOf(hash) {
    const path = hash.replace(/^#\/?/, '').split('?')[0].split('/')[0];
    return path === 'modules' || path === 'schedules' ? '#/' + path : '#/runs';
  }

  let listed = null; // the names GET /v1/namespaces gave, once it answered 200

  // render fills the header's picker: a list of the namespaces when the
  // server lists them, else a text field; switching calls onSwitch.
  function render(box, h, onSwitch) {
    const ns = current();
    const go = (next) => {
      next = next.trim();
      if (!next || next === current()) return;
      keep(next, sectionOf(location.hash));
      onSwitch();
    };
    let field;
    if (listed) {
      const opts = listed.includes(ns) ? listed : [ns, ...listed];
      field = h.el('select', { id: 'ns-select', 'aria-label': 'namespace', onchange: () => go(field.value) },
        opts.map((n) => h.el('option', { value: n }, n)));
      field.value = ns;
    } else {
      field = h.el('input', { type: 'text', id: 'ns-input', class: 'mono', 'aria-label': 'namespace', value: ns, size: 14 });
      field = h.el('form', { id: 'ns-form', class: 'inline', onsubmit: (ev) => { ev.preventDefault(); go(field.querySelector('input').value); } },
        field, h.el('button', { type: 'submit', id: 'ns-go' }, 'Switch'));
    }
    box.replaceChildren(h.el('span', { class: 'muted' }, 'namespace '),
      h.el('strong', { id: 'ns-current', class: 'mono', dataset: { namespace: ns } }, ns), ' ', field);
  }

  // picker shows the namespace in box, asks the server for the list of
  // namespaces (404: the server has none to list, 403: the key may not
  // list them; both keep the text field) and shows it when it comes.
  async function picker(box, h, onSwitch) {
    if (!new URLSearchParams(location.search).get('ns')) keep(current(), undefined, true);
    else localStorage.setItem(NS_KEY, current());
    document.body.dataset.namespace = current();
    render(box, h, onSwitch);
    try {
      const l = names(await h.api('GET', '/v1/namespaces'));
      if (l && JSON.stringify(l) !== JSON.stringify(listed)) {
        listed = l;
        render(box, h, onSwitch);
      }
    } catch (_) {
      // No list (404, 403, 401 before the token is typed): the text field stays.
    }
  }

  // adopt switches to the namespace a key is bound to when the server
  // refused the header naming another (403 "... acts in namespace "NS"
  // only ...", server/principal.go) and returns it, or returns ''.
  function adopt(status, message) {
    const m = status === 403 ? /acts in namespace "([^"]+)" only/.exec(message || '') : null;
    if (!m || m[1] === current()) return '';
    keep(m[1], undefined, true);
    return m[1];
  }

  window.skeinNamespace = { current, picker, adopt, HEADER: 'X-Skein-Namespace' };
})();
