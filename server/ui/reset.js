// skein web UI: resets (docs/api.md "Resetting a run"). On the run page,
// the links of a reset ("reset → NEW" on the run reset, "reset from RUN
// at KEY" on the run it made), and in an op's detail panel the action
// "Reset to here": it asks for confirmation in the panel, then POSTs
// /v1/runs/{id}/reset and goes to the new run. app.js calls
// window.skeinReset.links(run, h) and window.skeinReset.action(run, op, h).
'use strict';

(() => {
  const runLink = (h, id, elID) => h.el('a', { href: '#/run/' + encodeURIComponent(id), id: elID, class: 'mono' }, id);

  // links returns the props rows of the run's reset links, or null.
  function links(r, h) {
    const { el } = h;
    const rows = [];
    if (r.reset_to) rows.push(el('dt', {}, 'reset'), el('dd', { id: 'run-reset-to' }, '→ ', runLink(h, r.reset_to, 'run-reset-to-link')));
    if (r.reset_from) {
      rows.push(el('dt', {}, 'reset from'), el('dd', { id: 'run-reset-from' },
        runLink(h, r.reset_from, 'run-reset-from-link'), ' at ', el('span', { class: 'mono', id: 'run-reset-key' }, r.reset_key)));
    }
    return rows.length ? rows : null;
  }

  // resettable reports whether run r can be reset to op o: o settled and
  // reached by the latest execution, r the newest of its chain and not a
  // child run (docs/api.md "Resetting a run").
  const resettable = (r, o) => o.status !== 'pending' && !o.orphaned && !r.parent &&
    r.status !== 'continued' && r.status !== 'reset';

  // action returns the "Reset to here" button of op o and its confirmation
  // box, or null where a reset to o is refused.
  function action(r, o, h) {
    if (!resettable(r, o)) return null;
    const { el, api, showBanner, guard } = h;
    const box = el('div', { id: 'reset-confirm', class: 'reset-confirm', hidden: true, role: 'group', 'aria-label': 'confirm the reset' },
      el('p', {}, 'Make a new run of ' + r.workflow + ' that keeps the records of run ' + r.id +
        ' that settled before ' + o.key + ' and do not follow it, and executes the rest again; run ' + r.id + ' ends with the status reset.'),
      el('button', {
        type: 'button', class: 'primary', id: 'reset-go',
        onclick: () => guard(async () => {
          const next = await api('POST', '/v1/runs/' + encodeURIComponent(r.id) + '/reset', { to: o.key });
          showBanner('Run ' + r.id + ' reset to ' + o.key + ' as ' + next.id + '.', 'info');
          location.hash = '#/run/' + encodeURIComponent(next.id);
        }),
      }, 'Reset'),
      el('button', { type: 'button', id: 'reset-keep', onclick: () => { box.hidden = true; } }, 'Keep the run'));
    const open = el('button', {
      type: 'button', id: 'reset-here', dataset: { key: o.key }, title: 'reset run ' + r.id + ' to ' + o.key + ': execute this op and what follows it again, in a new run',
      onclick: () => { box.hidden = false; },
    }, 'Reset to here');
    return el('div', { class: 'reset-action' }, open, box);
  }

  window.skeinReset = { links, action };
})();
