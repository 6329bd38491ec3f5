// skein web UI: the runs list. Status filters, filters by workflow,
// module and creation time, sorting by a column's header, a search by id
// or id prefix, and pages of 100; the filters and the order are query
// parameters of GET /v1/runs (docs/api.md), so every page is filtered
// and sorted by the server. The page's state is in its address:
// #/runs?status=&workflow=&module=&from=&to=&sort=&q=&where=&cursor=. app.js
// calls window.skeinRunList(query, g, h).
'use strict';

(() => {
  // The address's parameters the list keeps from page to page.
  const KEPT = ['status', 'workflow', 'module', 'from', 'to', 'sort', 'q', 'where'];
  // Sortable columns: header -> the sort parameter.
  const SORTS = { Run: 'id', Status: 'status', Created: 'created', Ended: 'ended', Duration: 'duration' };

  // isoOf turns a datetime-local value (local time) into RFC 3339.
  function isoOf(local) {
    if (!local) return '';
    const d = new Date(local);
    return isNaN(d.getTime()) ? '' : d.toISOString();
  }

  // localOf is isoOf's inverse, for the inputs: "2026-12-03T11:50:02.125".
  function localOf(iso) {
    const d = new Date(iso);
    const p = (n, w) => String(n).padStart(w || 2, '0');
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
  }

  // before returns a string that sorts just before every id starting with q.
  function before(q) {
    const cps = Array.from(q);
    let last = cps.pop().codePointAt(0) - 1;
    if (last < 1) return cps.join('');
    if (last >= 0xd800 && last <= 0xdfff) last = 0xd7ff;
    return cps.join('') + String.fromCodePoint(last) + '\u{10FFFF}';
  }

  function page(query, g, h) {
    const { el, api, APIError, setHash } = h;
    const st = {};
    for (const k of KEPT) st[k] = (query.get(k) || '').trim();
    Object.assign(st, window.skeinAttrs.params(query)); // attr.NAME=VALUE filters (attrs.js)
    const cursor = query.get('cursor') || '';
    const go = (change) => setHash('#/runs', Object.assign({}, st, change));

    const filters = el('div', { class: 'filters', id: 'status-filters' },
      ['', ...h.STATUSES].map((s) => el('button', {
        type: 'button', class: 'filter' + (s === st.status ? ' active' : ''), dataset: { status: s || 'all' },
        onclick: () => go({ status: s }),
      }, s || 'all')));
    const search = el('input', { type: 'text', id: 'run-search', placeholder: 'run id or prefix', value: st.q, 'aria-label': 'search runs by id' });
    const form = el('form', {
      class: 'inline', id: 'run-search-form',
      onsubmit: (ev) => { ev.preventDefault(); go({ q: search.value.trim() }); },
    }, search, el('button', { type: 'submit' }, 'Search'), st.q ? el('button', { type: 'button', class: 'link', onclick: () => go({ q: '' }) }, 'clear') : null);
    filters.append(el('span', { class: 'spacer' }), form);
    const more = el('form', { class: 'filters', id: 'run-filters', onsubmit: (ev) => ev.preventDefault() });
    const box = el('div', { id: 'runs' }, el('p', { class: 'muted' }, 'Loading…'));
    h.main.replaceChildren(el('h1', {}, 'Runs'), filters, window.skeinBulk.bar(st, go, h), more, window.skeinAttrs.note(st, go, h) || '', box); // bulk.js, attrs.js

    let last = '';
    let filled = false;
    const load = async () => {
      const mods = (await api('GET', '/v1/modules')).modules;
      const p = new URLSearchParams({ limit: st.q ? '200' : '100' });
      if (st.status) p.set('status', st.status);
      if (st.workflow) p.set('workflow', st.workflow);
      if (st.module) p.set('module', st.module);
      if (isoOf(st.from)) p.set('created_from', isoOf(st.from));
      if (isoOf(st.to)) p.set('created_before', isoOf(st.to));
      if (st.where) p.set('where', st.where);
      for (const [k, v] of Object.entries(window.skeinAttrs.params(new URLSearchParams(st)))) p.set(k, v);
      let runs = [];
      let next = '';
      if (st.q) {
        // The run with this id, then runs whose id starts with it.
        try {
          const r = await api('GET', '/v1/runs/' + encodeURIComponent(st.q));
          if (matches(r, st, mods)) runs.push(r);
        } catch (e) {
          if (!(e instanceof APIError && e.status === 404)) throw e;
        }
        p.set('cursor', before(st.q));
        for (const r of (await api('GET', '/v1/runs?' + p)).runs) if (r.id !== st.q && r.id.startsWith(st.q)) runs.push(r);
      } else {
        if (st.sort) p.set('sort', st.sort);
        if (cursor) p.set('cursor', cursor);
        const l = await api('GET', '/v1/runs?' + p);
        runs = l.runs;
        next = l.next_cursor;
      }
      if (g !== h.gen()) return;
      if (!filled) {
        filled = true;
        more.replaceChildren(...filterInputs(st, mods, go, h).filter((x) => x));
      }
      // The modules' names, to show each run's module by name and hash.
      const names = {};
      for (const m of mods) names[m.hash] = m.name;
      const sig = JSON.stringify([runs, next, names]);
      if (sig !== last) {
        last = sig;
        const t = table(runs, st, names, go, h);
        window.skeinBulk.decorate(t, h); // bulk.js: the selection
        box.replaceChildren(t, pager(cursor, next, st, h));
      }
      h.schedule(g, load, h.REFRESH_LIST_MS);
    };
    return load();
  }

  // matches applies the filters to the run found by its id (the list's
  // other runs are filtered by the server).
  function matches(r, st, mods) {
    const m = st.module ? mods.find((x) => x.hash === st.module || x.names.includes(st.module)) : null;
    const created = Date.parse(r.created_at);
    return (!st.status || r.status === st.status) && (!st.workflow || r.workflow === st.workflow) &&
      (!st.module || r.module === st.module || (m && r.module === m.hash)) &&
      (!isoOf(st.from) || created >= Date.parse(isoOf(st.from))) && (!isoOf(st.to) || created < Date.parse(isoOf(st.to)));
  }

  // filterInputs: the workflow and module selects and the creation time
  // range; each change goes to the first page.
  function filterInputs(st, mods, go, h) {
    const { el } = h;
    const wfs = new Set(mods.flatMap((m) => m.workflows));
    if (st.workflow) wfs.add(st.workflow);
    const wf = el('select', { id: 'filter-workflow', 'aria-label': 'workflow', onchange: () => go({ workflow: wf.value }) },
      el('option', { value: '' }, 'every workflow'),
      [...wfs].sort().map((w) => el('option', { value: w }, w)));
    wf.value = st.workflow;
    const mod = el('select', { id: 'filter-module', 'aria-label': 'module', onchange: () => go({ module: mod.value }) },
      el('option', { value: '' }, 'every module'),
      mods.map((m) => el('option', { value: m.hash }, (m.names.join(', ') || '(unnamed)') + ' · ' + h.shortHash(m.hash))));
    if (st.module && !mods.some((m) => m.hash === st.module)) mod.append(el('option', { value: st.module }, st.module));
    mod.value = st.module;
    const time = (id, key, label) => {
      const i = el('input', { type: 'datetime-local', step: '0.001', id, value: st[key], 'aria-label': label, onchange: () => go({ [key]: i.value }) });
      return i;
    };
    const from = time('filter-from', 'from', 'created at or after');
    const to = time('filter-to', 'to', 'created before');
    const any = st.workflow || st.module || st.from || st.to;
    return [
      el('label', { for: 'filter-workflow' }, 'workflow'), wf,
      el('label', { for: 'filter-module' }, 'module'), mod,
      el('label', { for: 'filter-from' }, 'created from'), from,
      el('label', { for: 'filter-to' }, 'before'), to,
      any ? el('button', { type: 'button', class: 'link', id: 'filter-clear', onclick: () => go({ workflow: '', module: '', from: '', to: '' }) }, 'clear filters') : null,
    ];
  }

  // ended is when a run ended (its last update), '' while it has not.
  function ended(r, h) { return h.TERMINAL.has(r.status) ? r.updated_at : ''; }

  function table(runs, st, names, go, h) {
    const { el, fmtTime, badge, shortHash } = h;
    if (runs.length === 0) {
      const what = (st.status ? st.status + ' ' : '') + 'runs' + (st.q ? ' matching ' + JSON.stringify(st.q) : '') +
        (st.workflow || st.module || st.from || st.to ? ' with these filters' : '');
      return el('p', { class: 'muted', id: 'no-runs' }, 'No ' + what + '.');
    }
    const [sortName, desc] = st.sort.startsWith('-') ? [st.sort.slice(1), true] : [st.sort || 'id', false];
    const head = ['Run', 'Workflow', 'Status', 'Module', 'Parent', 'Created', 'Ended', 'Duration', 'Updated', 'Attributes'].map((name) => {
      const s = SORTS[name];
      if (!s || st.q) return el('th', {}, name);
      const on = s === sortName;
      const next = on && !desc ? '-' + s : s; // a second click turns the order around
      return el('th', { class: 'sortable' + (on ? ' sorted' : ''), dataset: { sort: s, dir: on ? (desc ? 'desc' : 'asc') : '' }, title: 'sort by ' + name.toLowerCase(), onclick: () => go({ sort: next === 'id' ? '' : next }) },
        name, on ? (desc ? ' ▼' : ' ▲') : '');
    });
    return el('table', { id: 'runs-table' },
      el('thead', {}, el('tr', {}, head)),
      el('tbody', {}, runs.map((r) => {
        const end = ended(r, h);
        const dur = end ? Date.parse(end) - Date.parse(r.created_at) : null;
        return el('tr', { class: 'run-row', dataset: { run: r.id, status: r.status } },
          el('td', { class: 'mono' }, el('a', { href: '#/run/' + encodeURIComponent(r.id), class: 'run-link' }, r.id)),
          el('td', { class: 'workflow' }, r.workflow),
          el('td', {}, badge(r.status), r.cancel_reason && !h.TERMINAL.has(r.status) ? el('span', { class: 'tag', title: r.cancel_reason }, 'cancel requested') : null,
            r.abandoned ? el('span', { class: 'tag abandoned', title: 'its parent ended first and left it running' }, 'abandoned') : null,
            window.skeinPause.tag(r, h)),
          el('td', { class: 'mono module', title: r.module }, (names[r.module] ? names[r.module] + ' · ' : '') + shortHash(r.module)),
          el('td', { class: 'mono' }, r.parent ? el('a', { href: '#/run/' + encodeURIComponent(r.parent) }, r.parent) : ''),
          el('td', { class: 'time created', title: r.created_at }, fmtTime(r.created_at)),
          el('td', { class: 'time ended', title: end, dataset: { ended: end } }, end ? fmtTime(end) : ''),
          el('td', { class: 'duration', dataset: { durationMs: dur === null ? '' : String(dur) } }, dur === null ? '' : h.fmtDur(dur)),
          el('td', { class: 'time', title: r.updated_at }, fmtTime(r.updated_at)),
          window.skeinAttrs.cell(r, h));
      })));
  }

  function pager(cursor, next, st, h) {
    const { el } = h;
    if (!cursor && !next) return el('div');
    const addr = (c) => {
      const q = new URLSearchParams();
      for (const k of KEPT) if (st[k]) q.set(k, st[k]);
      if (c) q.set('cursor', c);
      const s = q.toString();
      return '#/runs' + (s ? '?' + s : '');
    };
    return el('div', { class: 'pager' },
      cursor ? el('a', { href: addr(''), id: 'first-page' }, '« first page') : null,
      next ? el('a', { href: addr(next), id: 'next-page' }, 'next page »') : null);
  }

  window.skeinRunList = page;
  window.skeinRunList.localOf = localOf;
})();
