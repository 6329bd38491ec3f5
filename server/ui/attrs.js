// skein web UI: a run's search attributes (docs/operations.md, "Search
// attributes"), as the run's document carries them: a row of the run
// page's properties and a cell of the runs list, each attribute a chip
// NAME=VALUE that links to the runs list of the runs with that value
// (GET /v1/runs?attr.NAME=VALUE). app.js and runlist.js call
// window.skeinAttrs.props(run, h) and window.skeinAttrs.cell(run, h).
'use strict';

(() => {
  // chips are a run's attributes by name, each a link to the runs that
  // carry the same value.
  function chips(r, h) {
    const a = r.attributes || {};
    return Object.keys(a).sort().map((name) => {
      const v = String(a[name]);
      const q = new URLSearchParams();
      q.set('attr.' + name, v);
      return h.el('a', { class: 'attr', href: '#/runs?' + q.toString(), dataset: { name, value: v }, title: 'runs whose ' + name + ' is ' + v }, name + '=' + v);
    });
  }

  // props is the run page's "attributes" row, or null for a run without.
  function props(r, h) {
    if (!r.attributes || Object.keys(r.attributes).length === 0) return null;
    return [h.el('dt', {}, 'attributes'), h.el('dd', { id: 'run-attrs' }, chips(r, h))];
  }

  // cell is the runs list's "Attributes" cell.
  function cell(r, h) {
    return h.el('td', { class: 'attrs' }, chips(r, h));
  }

  // params are the attr.NAME=VALUE parameters of the list's address: its
  // attribute filters, which GET /v1/runs takes as they are.
  function params(query) {
    const out = {};
    for (const [k, v] of query.entries()) if (k.startsWith('attr.') && k.length > 5) out[k] = v;
    return out;
  }

  // note shows the list's attribute filters with a button that clears
  // them, or null when there are none.
  function note(st, go, h) {
    const keys = Object.keys(st).filter((k) => k.startsWith('attr.'));
    if (keys.length === 0) return null;
    const clear = {};
    for (const k of keys) clear[k] = '';
    return h.el('p', { id: 'attr-filters' }, 'runs whose ',
      keys.map((k, i) => [i ? ' and ' : '', h.el('span', { class: 'attr' }, k.slice(5) + '=' + st[k])]),
      ' ', h.el('button', { type: 'button', class: 'link', id: 'attr-filters-clear', onclick: () => go(clear) }, 'clear'));
  }

  window.skeinAttrs = { props, cell, params, note };
})();
