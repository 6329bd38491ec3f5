// skein web UI: the run page's detail panel of one op, opened from its
// row in the lineage tree or its bar on the timeline. It shows the whole
// record of GET /v1/runs/{id}/ops (docs/api.md): the value or the error
// in full, every recorded attempt with its times and error, the remote
// activity task behind a call, a typed promise's shape, and the record
// as JSON. app.js calls window.skeinOpDetail(view, key, h).
'use strict';

(() => {
  function render(v, key, h) {
    const { el, fmtTime, fmtDur } = h;
    const o = v.ops.find((x) => x.key === key);
    const close = el('button', { type: 'button', class: 'link', id: 'op-detail-close', title: 'close (Esc)', onclick: h.onClose }, 'close ✕');
    if (!o) {
      return el('aside', { id: 'op-detail', dataset: { key } }, close, el('p', { class: 'muted' }, 'No record at key ' + key + '.'));
    }
    const rows = [];
    const prop = (name, val, id) => { if (val !== null && val !== undefined && val !== '') rows.push(el('dt', {}, name), el('dd', { id }, val)); };
    prop('kind', o.kind);
    prop('function', o.child ? el('a', { href: '#/run/' + encodeURIComponent(o.child), class: 'mono' }, o.function + ' → ' + o.child) : o.function);
    prop('status', h.badge(o.status));
    prop('attempts', o.attempts > 0 ? String(o.attempts) : '');
    prop('started', fmtTime(o.started_at), 'op-detail-started');
    prop('settled', fmtTime(o.settled_at), 'op-detail-settled');
    prop('duration', o.duration_ms === null || o.duration_ms === undefined ? '' : fmtDur(o.duration_ms));
    prop('settle order', o.seq > 0 ? String(o.seq) + (o.waited ? ' (delivered at an idle point)' : ' (inline)') : '');
    prop('virtual time', o.vtime ? fmtTime(o.vtime) : '');
    prop('deadline', o.deadline ? fmtTime(o.deadline) : '');
    prop('updated', fmtTime(o.updated_at));
    if (o.orphaned) prop('orphaned', 'the latest execution of the run never reached this key; the record is kept');

    const parts = [
      el('div', { class: 'op-detail-head' }, el('h2', {}, 'Op ', el('span', { class: 'mono' }, o.key)), el('span', { class: 'spacer' }), close),
      el('dl', { class: 'props' }, rows),
      h.reset ? h.reset(o) : null,
    ];
    if (o.error !== null && o.error !== undefined) {
      parts.push(el('h3', {}, 'Error'), el('pre', { class: 'error', id: 'op-detail-error' }, o.error));
    } else if (o.status !== 'pending') {
      parts.push(el('h3', {}, 'Output'), el('pre', { class: 'json full', id: 'op-detail-value' }, JSON.stringify(o.value === undefined ? null : o.value, null, 2)));
    }
    if (o.schema) {
      parts.push(el('h3', {}, 'Expected shape'), el('p', { class: 'mono', id: 'op-detail-shape' }, window.skeinShape.describe(o.schema)),
        el('pre', { class: 'json full' }, JSON.stringify(o.schema, null, 2)));
    }
    if ((o.attempt_log || []).length) parts.push(el('h3', {}, 'Attempts'), attempts(o, h));
    const task = (v.tasks || []).find((t) => t.key === o.key);
    if (task) parts.push(el('h3', {}, 'Remote activity task'), taskProps(task, h));
    parts.push(el('details', { id: 'op-detail-raw' }, el('summary', {}, 'the record as JSON'), el('pre', { class: 'json full' }, JSON.stringify(o, null, 2))));
    return el('aside', { id: 'op-detail', dataset: { key: o.key }, 'aria-label': 'details of op ' + o.key }, parts);
  }

  // attempts lists the op's recorded attempts, each error in full.
  function attempts(o, h) {
    const { el, fmtTime, fmtDur } = h;
    return el('table', { id: 'op-detail-attempts' },
      el('thead', {}, el('tr', {}, ['#', 'Started', 'Ended', 'Duration', 'Error'].map((x) => el('th', {}, x)))),
      el('tbody', {}, o.attempt_log.map((a) => el('tr', { class: 'attempt-row', dataset: { n: String(a.n), error: a.error || '' } },
        el('td', {}, String(a.n)),
        el('td', { class: 'time', title: a.started_at || '' }, fmtTime(a.started_at)),
        el('td', { class: 'time', title: a.ended_at || '' }, a.ended_at ? fmtTime(a.ended_at) : 'running'),
        el('td', {}, a.duration_ms === null || a.duration_ms === undefined ? '' : fmtDur(a.duration_ms)),
        el('td', { class: 'error-text' }, a.error === null || a.error === undefined ? (a.ended_at ? 'ok' : '') : el('pre', { class: 'error attempt-error' }, a.error))))));
  }

  function taskProps(t, h) {
    const { el, fmtTime } = h;
    const rows = [];
    const prop = (name, val) => { if (val) rows.push(el('dt', {}, name), el('dd', {}, val)); };
    prop('activity', t.name);
    prop('state', t.state + (t.retry_at ? ', retry at ' + fmtTime(t.retry_at) : ''));
    prop('attempt', String(t.attempt));
    prop('worker', t.worker);
    prop('claimed', fmtTime(t.claimed_at));
    prop('heartbeat', fmtTime(t.heartbeat_at));
    prop('lease until', fmtTime(t.lease_expiry));
    prop('progress', t.progress === undefined || t.progress === null ? '' : el('pre', { class: 'json full' }, JSON.stringify(t.progress, null, 2)));
    prop('last error', t.last_error ? el('pre', { class: 'error' }, t.last_error) : '');
    return el('dl', { class: 'props', id: 'op-detail-task' }, rows);
  }

  window.skeinOpDetail = render;
})();
