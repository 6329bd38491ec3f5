// skein web UI: a runs list, a run page with the lineage tree of its ops,
// and a modules page. Plain JavaScript, no framework and no build step;
// it calls the same /v1 API as every other client (docs/api.md), with the
// bearer token the user types in, kept in this tab's sessionStorage.
// Every element a test or a person may look for has a stable id, class
// or data attribute (docs/ui.md lists them).
'use strict';

(() => {
  const TOKEN_KEY = 'skein-token';
  const STATUSES = ['pending', 'running', 'suspended', 'completed', 'failed', 'diverged', 'canceled', 'continued', 'reset'];
  const TERMINAL = new Set(['completed', 'failed', 'canceled', 'continued', 'reset']);
  const REFRESH_RUN_MS = 1000;
  const REFRESH_LIST_MS = 2000;

  const main = document.getElementById('main');
  const banner = document.getElementById('banner');
  const forget = document.getElementById('forget-token');
  const nsBox = document.getElementById('ns-picker');

  let gen = 0; // bumped at each navigation: async work of an old page checks it
  let timer = null; // the page's auto-refresh
  let bannerTimer = null;

  class APIError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  // ---- helpers ----

  function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }

  // api calls the HTTP API; body is sent as JSON (a string is sent as is).
  async function api(method, path, body) {
    const headers = { 'Accept': 'application/json' };
    headers[window.skeinNamespace.HEADER] = window.skeinNamespace.current();
    const t = token();
    if (t) headers['Authorization'] = 'Bearer ' + t;
    const init = { method, headers, cache: 'no-store' };
    // Every write says it sends JSON, even without a body: the server
    // refuses writes of any other type (docs/api.md).
    if (method !== 'GET') headers['Content-Type'] = 'application/json';
    if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
    let resp;
    try {
      resp = await fetch(path, init);
    } catch (e) {
      throw new APIError(0, 'network', 'cannot reach the skein server: ' + e.message);
    }
    let data = null;
    try { data = await resp.json(); } catch (_) { /* not JSON */ }
    if (!resp.ok) {
      const e = data && data.error ? data.error : { code: 'http_' + resp.status, message: resp.status + ' ' + resp.statusText };
      throw new APIError(resp.status, e.code, e.message);
    }
    return data;
  }

  // el builds an element: attrs may hold class, text, dataset, on<event>.
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k === 'dataset') Object.assign(e.dataset, v);
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else if (k === 'value') e.value = v;
      else e.setAttribute(k, v === true ? '' : v);
    }
    for (const kid of kids.flat()) {
      if (kid === null || kid === undefined || kid === false) continue;
      e.append(kid instanceof Node ? kid : String(kid));
    }
    return e;
  }

  function badge(status, extra) {
    return el('span', { class: 'status status-' + status, dataset: { status } }, extra || status);
  }

  function pad(n, w) { return String(n).padStart(w || 2, '0'); }

  // fmtTime shows an RFC 3339 time in local time, to the millisecond.
  function fmtTime(s) {
    if (!s) return '';
    const d = new Date(s);
    if (isNaN(d.getTime()) || d.getUTCFullYear() <= 1) return '';
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
      `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
  }

  function preview(v, n) {
    if (v === null || v === undefined) return '';
    let s = JSON.stringify(v);
    n = n || 80;
    if (s.length > n) s = s.slice(0, n - 1) + '…';
    return s;
  }

  function clip(s, n) { return s.length > n ? s.slice(0, n - 1) + '…' : s; }

  function shortHash(h) { return h && h.length > 12 ? h.slice(0, 12) : (h || ''); }

  function jsonBlock(v, id) {
    return el('pre', { class: 'json', id }, v === undefined ? 'null' : JSON.stringify(v, null, 2));
  }

  function showBanner(msg, kind) {
    clearTimeout(bannerTimer);
    banner.textContent = msg;
    banner.className = kind || '';
    banner.hidden = false;
    if (kind === 'info') bannerTimer = setTimeout(hideBanner, 4000);
  }

  function hideBanner() { banner.hidden = true; banner.textContent = ''; }

  function setHash(path, params) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params || {})) if (v) q.set(k, v);
    const s = q.toString();
    location.hash = path + (s ? '?' + s : '');
  }

  function schedule(g, fn, ms) {
    clearTimeout(timer);
    timer = setTimeout(() => { if (g === gen) guard(g, fn); }, ms);
  }

  // guard runs a page's async work and shows what went wrong: the token
  // form on 401, the key's own namespace on a 403 that names it, a
  // message otherwise.
  async function guard(g, fn) {
    try {
      await fn();
    } catch (e) {
      if (g !== gen) return;
      if (e instanceof APIError && e.status === 401) {
        tokenPage(token() ? 'The token was refused: ' + e.message : '');
        return;
      }
      const bound = e instanceof APIError ? window.skeinNamespace.adopt(e.status, e.message) : '';
      if (bound) {
        route();
        showBanner('This key acts in namespace ' + bound + ' only: the page now shows it.', 'info');
        return;
      }
      showBanner(e.message || String(e), 'error');
    }
  }

  function updateForget() { forget.hidden = !token(); }

  forget.addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    updateForget();
    route();
  });

  // title names the page and its namespace.
  function title(what) { document.title = what + ' · ' + window.skeinNamespace.current() + ' · skein'; }

  // ---- pages ----

  function tokenPage(msg) {
    gen++;
    clearTimeout(timer);
    const input = el('input', { type: 'password', id: 'token-input', autocomplete: 'off', placeholder: 'token', 'aria-label': 'API token' });
    const form = el('form', {
      id: 'token-form', class: 'token-box',
      onsubmit: (ev) => {
        ev.preventDefault();
        const v = input.value.trim();
        if (!v) return;
        sessionStorage.setItem(TOKEN_KEY, v);
        updateForget();
        route();
      },
    },
    el('h1', {}, 'API token'),
    el('p', { class: 'muted' }, 'This server wants a bearer token (skein serve --token or $SKEIN_TOKEN). ' +
      'The page keeps it in this tab only (sessionStorage) and sends it as Authorization: Bearer.'),
    msg ? el('p', { id: 'token-error', class: 'status-error' }, msg) : null,
    input,
    el('button', { type: 'submit', class: 'primary', id: 'token-save' }, 'Use this token'));
    main.replaceChildren(form);
    input.focus();
  }

  // helpers are what the other files of the UI (runlist.js, opdetail.js,
  // settle.js) use of this one.
  function helpers() {
    return {
      el, api, APIError, badge, fmtTime, fmtDur: window.skeinTimeline.fmtDur, shortHash, setHash, schedule, showBanner,
      gen: () => gen, main, STATUSES, TERMINAL, REFRESH_LIST_MS,
    };
  }

  // The run page: the run, its error, its lineage tree, its leases,
  // cancel and settle, the detail panel of the op opened, and the
  // journal to download.
  async function runPage(id, g) {
    main.replaceChildren(el('h1', {}, 'Run ', el('span', { class: 'mono' }, id)), el('p', { class: 'muted' }, 'Loading…'));
    // What the person did on the page, kept across refreshes: the values
    // typed into settle boxes (by promise key), the op whose details are
    // open, the cancel reason and whether the cancel waits for its
    // confirmation.
    const ui = { drafts: new Map(), open: null, reason: '', confirming: false };
    let last = '';
    let cur = null;
    const show = () => { if (cur && g === gen) renderRun(cur, ui, g, load, show); };
    const load = async () => {
      const path = '/v1/runs/' + encodeURIComponent(id);
      let v, l, tk;
      try {
        [v, l, tk] = await Promise.all([api('GET', path + '/ops'), api('GET', path + '/leases'), api('GET', path + '/tasks')]);
      } catch (e) {
        if (!(e instanceof APIError) || e.status !== 404 || g !== gen) throw e;
        // Ids are the namespace's own: another namespace's run is not found.
        main.replaceChildren(el('h1', {}, 'Run ', el('span', { class: 'mono' }, id)),
          el('p', { id: 'run-not-found', class: 'status-error' }, 'No run ' + id + ' in namespace ' + window.skeinNamespace.current() + '.'));
        return;
      }
      if (g !== gen) return;
      v.journal = JSON.stringify(v, null, 2); // the journal to download: GET /v1/runs/{id}/ops as it came
      v.leases = l.leases;
      v.tasks = tk.tasks;
      const sig = JSON.stringify(v);
      if (sig !== last) {
        last = sig;
        cur = v;
        show();
      } else if (!TERMINAL.has(v.run.status)) {
        // Pending ops' bars grow while the run waits.
        const tl = main.querySelector('#timeline');
        if (tl) tl.replaceWith(timeline(v, ui, show));
      }
      // A run's last commit releases its worker's lease too, so an ended
      // run's page shows its final leases.
      if (!TERMINAL.has(v.run.status)) schedule(g, load, REFRESH_RUN_MS);
    };
    closeDetail = () => { if (ui.open !== null) { ui.open = null; show(); } };
    await load();
  }

  let closeDetail = () => {}; // closes the run page's detail panel (Esc)
  document.addEventListener('keydown', (ev) => { if (ev.key === 'Escape' && document.body.dataset.page === 'run') closeDetail(); });

  // journalLink is the link that downloads the run's journal, the answer
  // of GET /v1/runs/{id}/ops, as a JSON file.
  let journalURL = '';
  function journalLink(v) {
    if (journalURL) URL.revokeObjectURL(journalURL);
    journalURL = URL.createObjectURL(new Blob([v.journal + '\n'], { type: 'application/json' }));
    return el('a', { id: 'download-journal', href: journalURL, download: v.run.id + '.journal.json', class: 'button', title: 'every record of the run\'s journal as GET /v1/runs/{id}/ops answers it' }, 'Download the journal (JSON)');
  }

  // cancelActions: Cancel run, then Confirm with the reason, or Keep running.
  function cancelActions(r, ui, g, reload, show) {
    const reason = el('input', { type: 'text', id: 'cancel-reason', placeholder: 'reason (optional)', 'aria-label': 'cancel reason', value: ui.reason, oninput: () => { ui.reason = reason.value; } });
    if (!ui.confirming) {
      return [el('button', { type: 'button', class: 'danger', id: 'cancel-run', onclick: () => { ui.confirming = true; show(); } }, 'Cancel run…')];
    }
    const confirm = el('button', {
      type: 'button', class: 'danger', id: 'cancel-confirm',
      onclick: () => guard(g, async () => {
        confirm.disabled = true;
        const body = ui.reason.trim() ? { reason: ui.reason.trim() } : {};
        await api('POST', '/v1/runs/' + encodeURIComponent(r.id) + '/cancel', body);
        ui.confirming = false;
        showBanner('Cancellation of ' + r.id + ' requested.', 'info');
        await reload();
      }),
    }, 'Confirm: cancel ' + r.id);
    const keep = el('button', { type: 'button', id: 'cancel-keep', onclick: () => { ui.confirming = false; show(); } }, 'Keep it running');
    return [el('span', { class: 'confirm-text', id: 'cancel-question' }, 'Cancel this run? Its pending sleeps, promises, activity calls and child runs fail with a cancellation error.'), reason, confirm, keep];
  }

  function renderRun(v, ui, g, reload, show) {
    const r = v.run;
    // Keep the focus and the caret of an input across the re-render.
    const act = document.activeElement;
    const focusKey = act && act.dataset && act.dataset.key && act.classList.contains('settle-value') ? act.dataset.key : null;
    const focusReason = act && act.id === 'cancel-reason';
    const sel = focusKey || focusReason ? [act.selectionStart, act.selectionEnd] : null;
    const panel = main.querySelector('#op-detail');
    const panelScroll = panel ? panel.scrollTop : 0;

    const props = el('dl', { class: 'props', id: 'run-props' },
      el('dt', {}, 'workflow'), el('dd', { id: 'run-workflow' }, r.workflow),
      el('dt', {}, 'module'), el('dd', { class: 'mono', title: r.module, id: 'run-module', dataset: { hash: r.module, name: v.module_name || '' } },
        el('a', { href: '#/modules' }, (v.module_name ? v.module_name + ' · ' : '') + shortHash(r.module))),
      r.parent ? [el('dt', {}, 'parent'), el('dd', { class: 'mono' }, el('a', { href: '#/run/' + encodeURIComponent(r.parent), id: 'run-parent' }, r.parent))] : null,
      r.parent ? [el('dt', {}, 'parent close'), el('dd', { id: 'run-parent-close', dataset: { abandoned: r.abandoned ? 'true' : 'false' } },
        r.abandoned ? el('span', { class: 'tag', id: 'run-abandoned', title: 'its parent ended first and left it running (policy abandon)' }, 'abandoned') : r.parent_close)] : null,
      r.continued_from ? [el('dt', {}, 'continued from'), el('dd', { class: 'mono' }, el('a', { href: '#/run/' + encodeURIComponent(r.continued_from), id: 'run-continued-from' }, r.continued_from))] : null,
      r.continued_as ? [el('dt', {}, 'continued as'), el('dd', { class: 'mono' }, el('a', { href: '#/run/' + encodeURIComponent(r.continued_as), id: 'run-continued-as' }, r.continued_as))] : null,
      window.skeinReset.links(r, { el }),
      el('dt', {}, 'created'), el('dd', { class: 'time' }, fmtTime(r.created_at)),
      el('dt', {}, 'updated'), el('dd', { class: 'time' }, fmtTime(r.updated_at)),
      r.worker ? [el('dt', {}, 'worker'), el('dd', {},
        el('span', { class: 'mono', id: 'run-worker' }, r.worker),
        el('span', { class: 'muted', title: 'lease expiry ' + r.lease_expiry }, ' · lease until ' + fmtTime(r.lease_expiry)))] : null,
      r.cancel_reason ? [el('dt', {}, 'cancel requested'), el('dd', { id: 'run-cancel-reason' }, r.cancel_reason)] : null,
      window.skeinAttrs.props(r, { el }),
      el('dt', {}, 'input'), el('dd', {}, jsonBlock(r.input, 'run-input')),
      el('dt', {}, r.continued_as ? 'result (the input of ' + r.continued_as + ')' : 'result'), el('dd', {}, jsonBlock(r.result, 'run-result')));

    const parts = [
      el('h1', {}, 'Run ', el('span', { class: 'mono', id: 'run-id' }, r.id), ' ',
        el('span', { class: 'status status-' + r.status, id: 'run-status', dataset: { status: r.status } }, r.status)),
    ];
    if (r.error) {
      parts.push(el('h2', {}, r.status === 'diverged' ? 'Divergence' : 'Error'), el('pre', { class: 'error', id: 'run-error' }, r.error));
    }
    const ph = { el, api, fmtTime, showBanner, reload, TERMINAL, guard: (fn) => guard(g, fn) }; // pause.js
    const paused = window.skeinPause.banner(r, ph);
    if (paused) parts.push(paused);
    parts.push(el('div', { class: 'actions' }, window.skeinPause.actions(r, ph), TERMINAL.has(r.status)
      ? window.skeinDeleteRun(r, ui, { el, api, showBanner, setHash, show, guard: (fn) => guard(g, fn) })
      : cancelActions(r, ui, g, reload, show), el('span', { class: 'spacer' }), journalLink(v)));
    parts.push(props);
    if (v.waiting) parts.push(el('h2', {}, 'Waiting on'), waitingSection(v.waiting));
    parts.push(el('h2', {}, 'Timeline'), timeline(v, ui, show));
    parts.push(el('h2', {}, 'Lineage ', el('span', { class: 'muted', id: 'op-count' }, '(' + v.ops.length + ' records)')));
    parts.push(v.ops.length ? treeTable(r, v.ops, ui, g, reload, show)
      : el('p', { class: 'muted', id: 'no-ops' }, 'No records yet.'));
    if (v.tasks.length) {
      parts.push(el('h2', {}, 'Activity tasks'), tasksTable(v.tasks));
    }
    parts.push(el('h2', {}, 'Leases'));
    parts.push(v.leases.length ? leasesTable(r, v.leases)
      : el('p', { class: 'muted', id: 'no-leases' }, 'No worker has claimed this run yet.'));
    if (ui.open !== null) {
      const reset = (o) => window.skeinReset.action(r, o, { el, api, showBanner, guard: (fn) => guard(g, fn) });
      parts.push(window.skeinOpDetail(v, ui.open, { el, fmtTime, fmtDur: window.skeinTimeline.fmtDur, badge, reset, onClose: () => { ui.open = null; show(); } }));
    }
    main.replaceChildren(...parts);
    const np = main.querySelector('#op-detail');
    if (np && panel) np.scrollTop = panelScroll;

    if (focusKey || focusReason) {
      const inp = focusReason ? main.querySelector('#cancel-reason') : main.querySelector('input.settle-value[data-key="' + CSS.escape(focusKey) + '"]');
      if (inp) {
        inp.focus();
        try { inp.setSelectionRange(sel[0], sel[1]); } catch (_) { /* not a text input */ }
      }
    }
  }

  // timeline is the run's waterfall (timeline.js); a click on an op's
  // row opens its details.
  function timeline(v, ui, show) {
    const tl = window.skeinTimeline(v, { el, fmtTime }, TERMINAL.has(v.run.status));
    tl.addEventListener('click', (ev) => {
      const row = ev.target.closest('.tl-op[data-key]');
      if (row) { ui.open = row.dataset.key; show(); }
    });
    return tl;
  }

  // buildTree turns the records into a tree of key segments: "t2.1" sits
  // under the task scope "t2", "fan.0.attach-ip" under the fork "fan" and
  // its branch "fan.0" (see the id grammar in docs/design.md). Scopes have no
  // record of their own.
  function buildTree(ops) {
    const root = { seg: '', path: '', kids: new Map(), op: null, depth: -1 };
    for (const op of ops) {
      let node = root;
      for (const seg of op.key.split('.')) {
        let kid = node.kids.get(seg);
        if (!kid) {
          kid = { seg, path: node.path ? node.path + '.' + seg : seg, kids: new Map(), op: null, depth: node.depth + 1, parent: node };
          node.kids.set(seg, kid);
        }
        node = kid;
      }
      node.op = op;
    }
    const first = (n) => {
      let m = n.op && n.op.seq > 0 ? n.op.seq : Infinity;
      for (const k of n.kids.values()) m = Math.min(m, first(k));
      n.first = m;
      return m;
    };
    first(root);
    return root;
  }

  // scopeKind names a node without a record: a spawned task, a parallel
  // fork or one of its branches.
  function scopeKind(n) {
    const numeric = (s) => /^\d+$/.test(s);
    if (numeric(n.seg) && n.parent && !n.parent.op && isFork(n.parent)) return 'branch';
    if (isFork(n)) return 'parallel';
    return 'task';
  }

  function isFork(n) {
    if (n.op || n.kids.size === 0) return false;
    for (const k of n.kids.values()) if (k.op || !/^\d+$/.test(k.seg)) return false;
    return true;
  }

  // Siblings: by position where the key shows it (1, 2, t3), else in
  // settle order.
  function position(seg) {
    const m = /^t?(\d+)$/.exec(seg);
    return m ? Number(m[1]) : null;
  }

  function compareNodes(a, b) {
    const pa = position(a.seg);
    const pb = position(b.seg);
    if (pa !== null && pb !== null && pa !== pb) return pa - pb;
    if (a.first !== b.first) return a.first < b.first ? -1 : 1;
    return a.seg < b.seg ? -1 : a.seg > b.seg ? 1 : 0;
  }

  function treeTable(run, ops, ui, g, reload, show) {
    const rows = [];
    const walk = (n) => {
      for (const k of [...n.kids.values()].sort(compareNodes)) {
        rows.push(k.op ? opRow(run, k, ui, g, reload, show) : scopeRow(k));
        walk(k);
      }
    };
    walk(buildTree(ops));
    return el('table', { class: 'tree', id: 'tree' },
      el('thead', {}, el('tr', {}, ['Key', 'Function', 'Kind', 'Status', 'Attempts', 'Value', 'Time', ''].map((h) => el('th', {}, h)))),
      el('tbody', {}, rows));
  }

  function keyCell(n) {
    const td = el('td', { class: 'key', title: n.path }, n.path);
    td.style.setProperty('--depth', String(n.depth));
    return td;
  }

  function scopeRow(n) {
    const kind = scopeKind(n);
    return el('tr', { class: 'scope', dataset: { key: n.path, kind, depth: String(n.depth) } },
      keyCell(n), el('td', {}, ''), el('td', { class: 'kind' }, kind), el('td', {}, ''), el('td', {}, ''), el('td', {}, ''), el('td', {}, ''), el('td', {}, ''));
  }

  function opRow(run, n, ui, g, reload, show) {
    const o = n.op;
    let fn = o.function;
    if (o.child) fn = el('a', { href: '#/run/' + encodeURIComponent(o.child), class: 'child-link' }, o.function);
    let value;
    if (o.error !== null && o.error !== undefined) {
      value = el('td', { class: 'value err', title: clip(o.error, 4000) }, 'error: ' + clip(o.error, 80));
    } else {
      value = el('td', { class: 'value', title: o.value === null || o.value === undefined ? '' : clip(JSON.stringify(o.value, null, 2), 4000) }, preview(o.value));
    }
    let title = 'updated ' + o.updated_at;
    if (o.vtime) title += '\nvirtual time ' + o.vtime;
    if (o.deadline) title += '\ndeadline ' + o.deadline;
    let when = fmtTime(o.updated_at);
    if (o.status === 'pending' && o.deadline) when = 'fires ' + fmtTime(o.deadline);
    const flags = el('td', { class: 'actions-cell' });
    if (o.orphaned) flags.append(el('span', { class: 'tag orphan', title: 'the latest execution of the run never reached this key (the code changed or a step was renamed); the record is kept' }, 'orphaned'));
    if (o.kind === 'promise' && o.status === 'pending' && !TERMINAL.has(run.status)) {
      flags.append(window.skeinSettle(run, o, ui.drafts, { el, api, APIError, showBanner, reload, guard: (fn) => guard(g, fn) }));
    }
    const cls = 'op' + (o.orphaned ? ' orphaned' : '') + (o.status === 'pending' ? ' pending' : '') + (ui.open === o.key ? ' selected' : '');
    const key = keyCell(n);
    key.replaceChildren(el('button', { type: 'button', class: 'link op-open mono', dataset: { key: o.key }, title: 'details of ' + o.key, onclick: () => { ui.open = o.key; show(); } }, n.path));
    return el('tr', { class: cls, dataset: { key: o.key, kind: o.kind, status: o.status, depth: String(n.depth), orphaned: o.orphaned ? 'true' : 'false' } },
      key,
      el('td', { class: 'function' }, fn),
      el('td', { class: 'kind' }, o.kind),
      el('td', {}, badge(o.status)),
      el('td', { class: 'attempts' }, o.attempts > 0 ? String(o.attempts) : ''),
      value,
      el('td', { class: 'time', title }, when),
      flags);
  }

  // waitingSection lists what a run that has not ended waits on (the
  // "waiting" of GET /v1/runs/{id}/ops): its pending promises with their
  // full ids (a copy button each) and the skein resolve line, its timers
  // with their due time, its child runs, and its activities.
  function waitingSection(w) {
    const rows = [];
    for (const p of w.promises || []) {
      rows.push(el('tr', { class: 'wait-row', dataset: { kind: 'promise', key: p.key, id: p.id } },
        el('td', {}, 'promise'),
        el('td', {}, el('span', { class: 'mono wait-id' }, p.id), ' ', copyButton(p.id, 'copy the full id ' + p.id)),
        el('td', {}, el('code', { class: 'resolve-line' }, p.resolve), ' ', copyButton(p.resolve, 'copy the command'))));
    }
    for (const t of w.timers || []) {
      rows.push(el('tr', { class: 'wait-row', dataset: { kind: 'timer', key: t.key } },
        el('td', {}, 'timer'), el('td', { class: 'mono' }, t.key),
        el('td', { class: 'time', title: t.due }, 'due ' + fmtTime(t.due))));
    }
    for (const c of w.children || []) {
      rows.push(el('tr', { class: 'wait-row', dataset: { kind: 'child', key: c.key } },
        el('td', {}, 'child run'),
        el('td', {}, el('a', { class: 'mono', href: '#/run/' + encodeURIComponent(c.run) }, c.run)),
        el('td', {}, 'workflow ' + c.workflow)));
    }
    rows.push(...waitingActivityRows(w.activities || []));
    return el('table', { id: 'waiting' },
      el('thead', {}, el('tr', {}, el('th', {}, 'what'), el('th', {}, 'id'), el('th', {}, 'how it settles'))),
      el('tbody', {}, rows));
  }

  // waitingActivityRows: one row per activity the run waits on (a step
  // body or host activity call not settled yet), with its attempts.
  function waitingActivityRows(acts) {
    return acts.map(a => el('tr', { class: 'wait-row', dataset: { kind: a.kind, key: a.key } },
      el('td', {}, a.kind === 'call' ? 'activity' : 'step'),
      el('td', { class: 'mono' }, a.key + ' · ' + a.function),
      el('td', {}, a.attempts + (a.attempts === 1 ? ' attempt' : ' attempts') + ' so far')));
  }

  // copyButton copies text to the clipboard; once copied, it says so and
  // carries the text in data-copied.
  function copyButton(text, title) {
    const b = el('button', { type: 'button', class: 'copy', title }, 'copy');
    b.addEventListener('click', async () => {
      let ok = false;
      try {
        await navigator.clipboard.writeText(text);
        ok = true;
      } catch (_) {
        const ta = el('textarea', { class: 'offscreen' });
        ta.value = text;
        document.body.append(ta);
        ta.select();
        try { ok = document.execCommand('copy'); } catch (_) { ok = false; }
        ta.remove();
      }
      if (ok) {
        b.dataset.copied = text;
        b.textContent = 'copied';
      } else {
        showBanner('Could not copy; select the text instead: ' + text, 'error');
      }
    });
    return b;
  }

  // leasesTable lists the workers' claims on the run, oldest first. The
  // latest one is held when the run names a worker and it was not
  // released; the others were released or expired.
  function leasesTable(run, leases) {
    return el('table', { id: 'leases' },
      el('thead', {}, el('tr', {}, ['Token', 'Worker', 'Claimed', 'Ended', ''].map((h) => el('th', {}, h)))),
      el('tbody', {}, leases.map((l, i) => {
        const state = l.released_at ? 'released' : run.worker && i === leases.length - 1 ? 'held' : 'expired';
        let title = 'claimed ' + l.claimed_at + '\nexpiry ' + l.expiry;
        if (l.released_at) title += '\nreleased ' + l.released_at;
        return el('tr', { class: 'lease-row', dataset: { token: String(l.token), worker: l.worker, state } },
          el('td', {}, String(l.token)),
          el('td', { class: 'mono' }, l.worker),
          el('td', { class: 'time', title }, fmtTime(l.claimed_at)),
          el('td', { class: 'time', title }, state === 'held' ? 'until ' + fmtTime(l.expiry) : fmtTime(l.ended_at)),
          el('td', {}, el('span', { class: 'tag' }, state)));
      })));
  }

  // tasksTable lists the run's remote activity calls (docs/activities.md):
  // which worker holds each, since when, its last heartbeat, and the
  // previous attempt's error.
  function tasksTable(tasks) {
    return el('table', { id: 'tasks' },
      el('thead', {}, el('tr', {}, ['Key', 'Activity', 'Attempt', 'State', 'Worker', 'Claimed', 'Heartbeat', 'Last error'].map((h) => el('th', {}, h)))),
      el('tbody', {}, tasks.map((t) => {
        const state = t.state === 'queued' && t.retry_at ? 'retry at ' + fmtTime(t.retry_at) : t.state;
        return el('tr', { class: 'task-row', dataset: { key: t.key, state: t.state } },
          el('td', { class: 'mono' }, t.key),
          el('td', { class: 'mono' }, t.name),
          el('td', { class: 'attempts' }, String(t.attempt)),
          el('td', {}, el('span', { class: 'tag' }, state)),
          el('td', { class: 'mono' }, t.worker || ''),
          el('td', { class: 'time', title: t.claimed_at || '' }, t.claimed_at ? fmtTime(t.claimed_at) : ''),
          el('td', { class: 'time', title: t.heartbeat_at || '' }, t.heartbeat_at ? fmtTime(t.heartbeat_at) : ''),
          el('td', { class: 'error-text' }, t.last_error || ''));
      })));
  }

  // The modules page, with a form to start a run.
  async function modulesPage(g) {
    const l = await api('GET', '/v1/modules');
    if (g !== gen) return;
    const mods = l.modules;
    const parts = [el('h1', {}, 'Modules')];
    if (mods.length === 0) {
      parts.push(el('p', { class: 'muted', id: 'no-modules' }, 'No modules deployed. Deploy one with skein deploy wf.wasm --name NAME, or POST /v1/modules?name=NAME.'));
      main.replaceChildren(...parts);
      return;
    }
    const modSel = el('select', { id: 'start-module', 'aria-label': 'module' },
      mods.map((m) => el('option', { value: m.hash }, (m.names.join(', ') || '(unnamed)') + ' · ' + shortHash(m.hash))));
    const wfSel = el('select', { id: 'start-workflow', 'aria-label': 'workflow' });
    const fillWorkflows = () => {
      const m = mods.find((x) => x.hash === modSel.value);
      wfSel.replaceChildren(...(m ? m.workflows : []).map((w) => el('option', { value: w }, w)));
    };
    modSel.addEventListener('change', fillWorkflows);
    fillWorkflows();
    const input = el('textarea', { id: 'start-input', class: 'mono', 'aria-label': 'input' }, 'null');
    const runID = el('input', { type: 'text', id: 'start-id', class: 'mono', placeholder: 'generated when empty', 'aria-label': 'run id' });
    const timeout = el('input', { type: 'text', id: 'start-timeout', placeholder: 'e.g. 30s, 2h (optional)', 'aria-label': 'timeout' });
    const form = el('form', {
      id: 'start-form', class: 'startform',
      onsubmit: (ev) => {
        ev.preventDefault();
        guard(g, async () => {
          const text = input.value.trim() || 'null';
          try { JSON.parse(text); } catch (e) { showBanner('The input is not JSON: ' + e.message, 'error'); return; }
          let body = '{"module":' + JSON.stringify(modSel.value) + ',"workflow":' + JSON.stringify(wfSel.value) + ',"input":' + text;
          if (runID.value.trim()) body += ',"id":' + JSON.stringify(runID.value.trim());
          if (timeout.value.trim()) body += ',"timeout":' + JSON.stringify(timeout.value.trim());
          const r = await api('POST', '/v1/runs', body + '}');
          location.hash = '#/run/' + encodeURIComponent(r.id);
        });
      },
    },
    el('label', { for: 'start-module' }, 'module'), modSel,
    el('label', { for: 'start-workflow' }, 'workflow'), wfSel,
    el('label', { for: 'start-input' }, 'input (JSON)'), input,
    el('label', { for: 'start-id' }, 'run id'), runID,
    el('label', { for: 'start-timeout' }, 'timeout'), timeout,
    el('span'), el('div', {}, el('button', { type: 'submit', class: 'primary', id: 'start-run' }, 'Start run')));

    parts.push(el('table', { id: 'modules' },
      el('thead', {}, el('tr', {}, ['Names', 'Hash', 'Workflows', 'ABI', 'Deployed'].map((h) => el('th', {}, h)))),
      el('tbody', {}, mods.map((m) => el('tr', { class: 'module-row', dataset: { hash: m.hash, name: m.name || '', names: m.names.join(' ') } },
        el('td', {}, m.names.join(', ') || el('span', { class: 'muted' }, '(unnamed)')),
        el('td', { class: 'mono', title: m.hash }, shortHash(m.hash)),
        el('td', {}, m.workflows.map((w) => el('button', {
          type: 'button', class: 'link workflow', dataset: { workflow: w }, title: 'start a run of ' + w,
          onclick: () => { modSel.value = m.hash; fillWorkflows(); wfSel.value = w; input.focus(); },
        }, w)).flatMap((b, i) => (i ? [', ', b] : [b]))),
        el('td', {}, String(m.abi_version)),
        el('td', { class: 'time' }, fmtTime(m.created_at)))))));
    parts.push(el('h2', {}, 'Start a run'), form);
    main.replaceChildren(...parts);
  }

  // How a hook's deliveries are signed, for the schedules page.
  function hookSigning(h) {
    if (!h.scheme) return 'none';
    const where = h.secret ? 'secret ' + h.secret + ' of the server\'s hook secrets' : 'secret in $' + h.secret_env;
    const scheme = h.scheme === 'timestamped' ? 'timestamped HMAC-SHA256 (within ' + h.tolerance + ', once)' : 'HMAC-SHA256 of the body (GitHub)';
    return scheme + ', ' + where;
  }

  // The schedules page: each schedule's next slots, latest run and
  // counts, with pause, resume and trigger; then the webhooks. It
  // refreshes every 2 s.
  async function schedulesPage(g) {
    const [l, hl] = await Promise.all([api('GET', '/v1/schedules'), api('GET', '/v1/hooks')]);
    if (g !== gen) return;
    const act = (name, verb) => guard(g, async () => {
      const r = await api('POST', '/v1/schedules/' + encodeURIComponent(name) + '/' + verb, '{}');
      if (verb === 'trigger') { location.hash = '#/run/' + encodeURIComponent(r.id); return; }
      await schedulesPage(g);
    });
    const parts = [el('h1', {}, 'Schedules')];
    if (l.schedules.length === 0) {
      parts.push(el('p', { class: 'muted', id: 'no-schedules' }, "No schedules. Create one with skein schedule create NAME --cron '0 7 * * *' --module M (docs/schedules.md)."));
    } else {
      parts.push(el('table', { id: 'schedules' },
        el('thead', {}, el('tr', {}, ['Name', 'Cron', 'Workflow', 'State', 'Next', 'Last run', 'Fired', 'Missed', 'Overlapped', ''].map((h) => el('th', {}, h)))),
        el('tbody', {}, l.schedules.map((sc) => el('tr', { class: 'schedule-row', dataset: { schedule: sc.name, paused: String(sc.paused) } },
          el('td', { class: 'mono' }, sc.name),
          el('td', { class: 'mono' }, sc.cron + ' (' + sc.timezone + ')'),
          el('td', {}, sc.module + ' / ' + sc.workflow),
          el('td', {}, sc.paused ? el('span', { class: 'tag' }, 'paused') : 'active', sc.buffered ? el('span', { class: 'tag', title: fmtTime(sc.buffered) }, '1 buffered') : null),
          el('td', { class: 'time next' }, sc.next.map((t) => el('div', {}, fmtTime(t)))),
          el('td', { class: 'mono' }, sc.last_run ? [el('a', { href: '#/run/' + encodeURIComponent(sc.last_run), class: 'run-link' }, sc.last_run), ' ', badge(sc.last_status || 'missing')] : ''),
          el('td', { class: 'fired' }, String(sc.fired)),
          el('td', { class: 'missed' }, String(sc.missed)),
          el('td', { class: 'overlapped' }, String(sc.overlapped)),
          el('td', {},
            el('button', { type: 'button', class: 'pause', onclick: () => act(sc.name, sc.paused ? 'resume' : 'pause') }, sc.paused ? 'Resume' : 'Pause'), ' ',
            el('button', { type: 'button', class: 'trigger', title: 'start a run now', onclick: () => act(sc.name, 'trigger') }, 'Run now')))))));
    }
    parts.push(el('h2', {}, 'Webhooks'));
    if (hl.hooks.length === 0) {
      parts.push(el('p', { class: 'muted', id: 'no-hooks' }, 'No webhooks. Create one with skein hook create NAME --module M (docs/schedules.md).'));
    } else {
      parts.push(el('table', { id: 'hooks' },
        el('thead', {}, el('tr', {}, ['Name', 'Endpoint', 'Workflow', 'Signature'].map((h) => el('th', {}, h)))),
        el('tbody', {}, hl.hooks.map((h) => el('tr', { class: 'hook-row', dataset: { hook: h.name } },
          el('td', { class: 'mono' }, h.name),
          el('td', { class: 'mono' }, 'POST ' + h.url),
          el('td', {}, h.module + ' / ' + h.workflow),
          el('td', {}, hookSigning(h)))))));
    }
    main.replaceChildren(...parts);
    schedule(g, () => schedulesPage(g), 2000);
  }

  // ---- routing: #/runs?status=&q=&cursor=, #/run/ID, #/modules, #/schedules ----

  function route() {
    gen++;
    clearTimeout(timer);
    hideBanner();
    updateForget();
    shownNS = window.skeinNamespace.current();
    window.skeinNamespace.picker(nsBox, helpers(), route);
    const h = location.hash.replace(/^#\/?/, '');
    const i = h.indexOf('?');
    const path = i < 0 ? h : h.slice(0, i);
    const query = new URLSearchParams(i < 0 ? '' : h.slice(i + 1));
    const parts = path.split('/').map((s) => { try { return decodeURIComponent(s); } catch (_) { return s; } });
    const page = parts[0] === 'run' && parts[1] ? 'run' : parts[0] === 'modules' ? 'modules' : parts[0] === 'schedules' ? 'schedules' : 'runs';
    document.getElementById('nav-runs').classList.toggle('current', page === 'runs' || page === 'run');
    document.getElementById('nav-modules').classList.toggle('current', page === 'modules');
    document.getElementById('nav-schedules').classList.toggle('current', page === 'schedules');
    document.body.dataset.page = page;
    const g = gen;
    if (page === 'run') {
      title(parts.slice(1).join('/'));
      guard(g, () => runPage(parts.slice(1).join('/'), g));
    } else if (page === 'schedules') {
      title('schedules');
      guard(g, () => schedulesPage(g));
    } else if (page === 'modules') {
      title('modules');
      guard(g, () => modulesPage(g));
    } else {
      title('runs');
      guard(g, () => window.skeinRunList(query, g, helpers()));
    }
  }

  window.addEventListener('hashchange', route);
  // Back and forward across a switch of namespace change the query only.
  let shownNS = window.skeinNamespace.current();
  window.addEventListener('popstate', () => { if (window.skeinNamespace.current() !== shownNS) route(); });
  route();
})();
