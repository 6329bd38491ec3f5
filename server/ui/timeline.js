// skein web UI: the run page's timeline, a waterfall of the run's ops
// grouped by task (lineage scope). Each bar goes from the op's start to
// its settlement (open-ended while pending), its recorded attempts drawn
// inside it with their errors, and the idle points where the run's
// instance was dropped and replayed drawn as bands across the chart. The
// data is the "started_at", "settled_at", "attempt_log" and "drops" of
// GET /v1/runs/{id}/ops (docs/api.md); the times are the host's wall
// clock. app.js calls window.skeinTimeline(view, helpers).
'use strict';

(() => {
  // ms is an RFC 3339 time in ms since the epoch, to the microsecond
  // (Date.parse stops at the millisecond); NaN for null.
  function ms(s) {
    if (!s) return NaN;
    const m = /^(.*?)(\.\d+)?(Z|[+-]\d\d:\d\d)$/.exec(s);
    if (!m) return Date.parse(s);
    return Date.parse(m[1] + m[3]) + (m[2] ? Number('0' + m[2]) * 1000 : 0);
  }

  // fmtDur shows a duration in ms: 0.42 ms, 12.3 ms, 1.24 s, 2m 03s, 1h 02m.
  function fmtDur(d) {
    if (!(d >= 0)) return '';
    if (d < 1) return d.toFixed(2) + ' ms';
    if (d < 1000) return d.toFixed(1) + ' ms';
    if (d < 60000) return (d / 1000).toFixed(2) + ' s';
    const s = Math.round(d / 1000);
    if (s < 3600) return Math.floor(s / 60) + 'm ' + String(s % 60).padStart(2, '0') + 's';
    return Math.floor(s / 3600) + 'h ' + String(Math.floor(s / 60) % 60).padStart(2, '0') + 'm';
  }

  // scopeOf is the task scope of a key: "t2" for "t2.1", "" for "1".
  function scopeOf(key) {
    const i = key.lastIndexOf('.');
    return i < 0 ? '' : key.slice(0, i);
  }

  // span places e from a to b (ms) on the chart [t0, t0+width].
  function span(e, a, b, t0, width) {
    e.style.left = (100 * (a - t0) / width).toFixed(3) + '%';
    e.style.width = Math.max(100 * (b - a) / width, 0.15).toFixed(3) + '%';
  }

  // render returns the timeline of the view v ({run, ops, drops}), or a
  // note when no op has timing recorded. h holds app.js's el and fmtTime;
  // terminal tells whether the run has ended.
  function render(v, h, terminal) {
    const { el, fmtTime } = h;
    const now = Date.now();
    const ops = v.ops.filter((o) => !isNaN(ms(o.started_at)));
    if (ops.length === 0) {
      return el('p', { class: 'muted', id: 'no-timeline' }, 'No timing recorded for this run\'s ops (runs recorded before skein kept it have none).');
    }
    const runEnd = terminal ? ms(v.run.updated_at) : now;
    let t0 = Infinity;
    let t1 = -Infinity;
    const endOf = (o) => (o.status === 'pending' ? Math.max(runEnd, ms(o.started_at)) : (ms(o.settled_at) || ms(o.started_at)));
    for (const o of ops) {
      t0 = Math.min(t0, ms(o.started_at));
      t1 = Math.max(t1, endOf(o));
      for (const a of o.attempt_log || []) {
        if (!isNaN(ms(a.ended_at))) t1 = Math.max(t1, ms(a.ended_at));
      }
    }
    const drops = (v.drops || []).map((d) => ({ seq: d.seq, a: ms(d.dropped_at), b: ms(d.replayed_at) }))
      .filter((d) => !isNaN(d.a) || !isNaN(d.b));
    for (const d of drops) {
      if (!isNaN(d.a)) t0 = Math.min(t0, d.a);
      t1 = Math.max(t1, isNaN(d.b) ? runEnd : d.b);
    }
    const width = Math.max(t1 - t0, 1);

    // A drop's band: from the drop to the replay (or to the end when the
    // run has not been replayed since, or from the replay alone when the
    // drop's time is not known, after a crash).
    const bands = () => drops.map((d) => {
      const a = isNaN(d.a) ? d.b : d.a;
      const b = isNaN(d.b) ? (terminal ? a : runEnd) : d.b;
      const e = el('div', { class: 'tl-drop', 'aria-hidden': 'true' });
      span(e, a, b, t0, width);
      return e;
    });

    const rows = [];
    rows.push(el('div', { class: 'tl-row tl-axis' },
      el('div', { class: 'tl-label' }, 'op'),
      el('div', { class: 'tl-track' }, [0, 0.25, 0.5, 0.75, 1].map((f) => {
        const tick = el('span', { class: 'tl-tick' }, f === 0 ? fmtTime(new Date(t0).toISOString()).slice(11) : '+' + fmtDur(f * width));
        tick.style.left = (100 * f) + '%';
        return tick;
      })),
      el('div', { class: 'tl-dur' }, 'duration')));

    if (drops.length) {
      const marks = drops.map((d) => {
        const what = (isNaN(d.a) ? 'the process stopped while the run was active (the time is not known)' : 'idle from ' + fmtTime(new Date(d.a).toISOString()) + ': the run waited, so its instance was released') +
          ' · ' + (isNaN(d.b) ? 'it resumes by a replay of its journal when what it waits for arrives' : 'resumed by a replay ' + fmtTime(new Date(d.b).toISOString())) + ' · after ' + d.seq + ' settled records';
        const e = el('div', { class: 'tl-drop-mark', title: what, dataset: { seq: String(d.seq), dropped: isNaN(d.a) ? '' : String(d.a), replayed: isNaN(d.b) ? '' : String(d.b) } });
        const a = isNaN(d.a) ? d.b : d.a;
        span(e, a, isNaN(d.b) ? (terminal ? a : runEnd) : d.b, t0, width);
        return e;
      });
      const idle = drops.reduce((s, d) => s + (isNaN(d.a) || isNaN(d.b) ? 0 : d.b - d.a), 0);
      // Normal for a run that waits: its instance is released to free
      // memory and the run is replayed when it goes on (docs/ui.md).
      rows.push(el('div', { class: 'tl-row tl-instance', id: 'timeline-drops', title: 'While a run waits, skein releases its instance and replays the journal when the run goes on: this is normal.' },
        el('div', { class: 'tl-label tl-drop-label' }, 'idle, instance released'),
        el('div', { class: 'tl-track' }, marks),
        el('div', { class: 'tl-dur tl-drop-text' }, drops.length + (drops.length === 1 ? ' idle period' : ' idle periods') + (idle ? ', ' + fmtDur(idle) : ''))));
    }

    // Groups by task scope, in the order they started.
    const groups = new Map();
    for (const o of ops) {
      const s = scopeOf(o.key);
      if (!groups.has(s)) groups.set(s, []);
      groups.get(s).push(o);
    }
    const first = (g) => Math.min(...g.map((o) => ms(o.started_at)));
    const order = [...groups.entries()].sort((a, b) => first(a[1]) - first(b[1]) || (a[0] < b[0] ? -1 : 1));
    for (const [scope, list] of order) {
      list.sort((a, b) => ms(a.started_at) - ms(b.started_at) || (a.key < b.key ? -1 : 1));
      const ga = first(list);
      const gb = Math.max(...list.map(endOf));
      rows.push(el('div', { class: 'tl-row tl-group', dataset: { scope } },
        el('div', { class: 'tl-label' }, scope === '' ? 'workflow (root task)' : 'task ' + scope),
        el('div', { class: 'tl-track' }, bands()),
        el('div', { class: 'tl-dur' }, fmtDur(gb - ga))));
      for (const o of list) rows.push(opRow(o, h, t0, width, endOf(o), bands(), terminal));
    }
    return el('div', { id: 'timeline', 'aria-label': 'timeline of the run\'s ops', dataset: { t0: String(t0), t1: String(t0 + width) } }, rows);
  }

  // opRow is one op's bar, with its attempts inside it.
  function opRow(o, h, t0, width, end, bands, terminal) {
    const { el, fmtTime } = h;
    const start = ms(o.started_at);
    const pending = o.status === 'pending';
    const open = pending && !terminal; // drawn open-ended: it may still settle
    const dur = end - start;
    const tries = o.attempt_log || [];
    let title = o.key + ' · ' + o.kind + ' ' + o.function + ' · ' + o.status + '\nstarted ' + fmtTime(o.started_at) +
      (pending ? '\npending for ' + fmtDur(dur) + (open ? '' : ', when the run ended') : '\nsettled ' + fmtTime(o.settled_at) + ' after ' + fmtDur(dur));
    for (const a of tries) {
      title += '\nattempt ' + a.n + ': ' + (a.ended_at ? fmtDur(a.duration_ms) : 'running') + (a.error ? ' · ' + a.error : '');
    }
    if (o.error) title += '\nerror: ' + o.error;
    const bar = el('div', {
      class: 'tl-bar status-' + o.status + (open ? ' open' : pending ? ' unsettled' : '') + (tries.length ? ' has-tries' : ''), title,
      dataset: { key: o.key, status: o.status, start: String(start), end: pending ? '' : String(end), durationMs: String(dur), open: open ? 'true' : 'false' },
    }, tries.map((a) => {
      const as = ms(a.started_at);
      const ae = a.ended_at ? ms(a.ended_at) : end;
      const e = el('div', {
        class: 'tl-try' + (a.error ? ' failed' : '') + (a.ended_at ? '' : ' running'),
        title: 'attempt ' + a.n + (a.error ? ': ' + a.error : ''),
        dataset: { n: String(a.n), error: a.error || '', durationMs: a.duration_ms === null ? '' : String(a.duration_ms) },
      });
      // Inside the bar: placed relative to the op's own span.
      const from = isNaN(as) ? start : as;
      e.style.left = (100 * (from - start) / Math.max(dur, 1e-3)).toFixed(3) + '%';
      e.style.width = Math.max(100 * (ae - from) / Math.max(dur, 1e-3), 0.5).toFixed(3) + '%';
      return e;
    }));
    span(bar, start, end, t0, width);
    const failed = tries.filter((a) => a.error);
    const durText = open ? 'pending · ' + fmtDur(dur) + ' so far' : pending ? 'never settled (the run ended)' : fmtDur(dur);
    return el('div', { class: 'tl-row tl-op', dataset: { key: o.key, status: o.status } },
      el('div', { class: 'tl-label mono', title: o.key + ' · ' + o.function }, o.key, ' ', el('span', { class: 'muted' }, o.function)),
      el('div', { class: 'tl-track' }, bands, bar),
      el('div', { class: 'tl-dur' }, el('span', { class: 'tl-dur-text' }, durText),
        tries.length > 1 || failed.length ? el('span', { class: 'tl-tries muted' }, ' · ' + tries.length + ' attempts' + (failed.length ? ', ' + failed.length + ' failed' : '')) : null,
        failed.length ? el('div', { class: 'tl-errors' }, failed.map((a) => el('div', { class: 'tl-error', dataset: { n: String(a.n) } }, '#' + a.n + ' ' + a.error))) : null));
  }

  window.skeinTimeline = render;
  window.skeinTimeline.fmtDur = fmtDur;
})();
