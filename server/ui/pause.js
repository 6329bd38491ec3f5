// skein web UI: pausing runs (docs/operations.md, "Pausing runs"). On the
// run page, the "paused by X: reason" banner and the Pause / Unpause
// button; in the run list, the "paused" tag. app.js and runlist.js call
// window.skeinPause.banner(run, h), .actions(run, h) and .tag(run, h).
'use strict';

(() => {
  // banner says who paused the run, since when and why; null when it
  // is not paused.
  function banner(r, h) {
    const p = r.paused;
    if (!p) return null;
    return h.el('div', { class: 'paused-banner', id: 'run-paused', role: 'status', dataset: { by: p.by } },
      'Paused by ', h.el('strong', {}, p.by), ' since ', h.fmtTime(p.since), p.reason ? ': ' + p.reason : '',
      h.el('span', { class: 'muted' }, ' — the run is not executed; timers and settlements that reach it are kept for after.'));
  }

  // actions is the Pause or Unpause button of a run that has not ended.
  function actions(r, h) {
    if (h.TERMINAL.has(r.status)) return null;
    const path = '/v1/runs/' + encodeURIComponent(r.id);
    if (r.paused) {
      return h.el('button', {
        type: 'button', id: 'unpause-run', title: 'let the run execute again',
        onclick: () => h.guard(async () => {
          await h.api('POST', path + '/unpause', {});
          h.showBanner('Run ' + r.id + ' unpaused.', 'info');
          await h.reload();
        }),
      }, 'Unpause');
    }
    return h.el('button', {
      type: 'button', id: 'pause-run', title: 'hold the run: it is not executed until unpaused',
      onclick: () => h.guard(async () => {
        await h.api('POST', path + '/pause', { reason: 'paused from the UI' });
        h.showBanner('Run ' + r.id + ' paused.', 'info');
        await h.reload();
      }),
    }, 'Pause');
  }

  // tag is the run list's mark of a paused run.
  function tag(r, h) {
    if (!r.paused || h.TERMINAL.has(r.status)) return null;
    const p = r.paused;
    return h.el('span', { class: 'tag paused', title: 'paused by ' + p.by + (p.reason ? ': ' + p.reason : '') }, 'paused');
  }

  window.skeinPause = { banner, actions, tag };
})();
