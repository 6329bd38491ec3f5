// skein web UI: the runs list's bulk actions. A filter box that takes
// the filter language of the API (docs/operations.md, "Bulk actions"),
// sent as GET /v1/runs?where=; a checkbox on each row; and an action
// (cancel, pause, unpause or delete) on the selected runs, a batch
// (POST /v1/batches) over the selected ids
// (id in (...)), or over every run the filter selects, with its progress
// (GET /v1/batches/{id}) shown until it ends. runlist.js calls
// window.skeinBulk.bar and .decorate.
'use strict';

(() => {
  // What the person selected, kept across the list's refreshes.
  const selected = new Set();
  let progress = null; // the progress element of the page shown
  let following = '';  // the batch followed
  let action = 'cancel'; // the action chosen
  // The actions the page offers; resume and reset take a module or a key
  // (skein runs resume|reset --where).
  const ACTIONS = { cancel: 'Cancel', pause: 'Pause', unpause: 'Unpause', delete: 'Delete' };

  // bar is the filter box and the actions, above the list.
  function bar(st, go, h) {
    const { el } = h;
    selected.clear();
    const input = el('input', { type: 'text', id: 'run-where', value: st.where, size: 60, 'aria-label': 'filter runs',
      placeholder: 'status = failed and ended > -2h and error ~ "timeout"' });
    const form = el('form', { class: 'inline', id: 'run-where-form', onsubmit: (ev) => { ev.preventDefault(); go({ where: input.value.trim() }); } },
      input, el('button', { type: 'submit' }, 'Filter'),
      st.where ? el('button', { type: 'button', class: 'link', onclick: () => go({ where: '' }) }, 'clear') : null);
    const pick = el('select', { id: 'bulk-action', 'aria-label': 'bulk action' },
      ...Object.entries(ACTIONS).map(([v, label]) => el('option', { value: v }, label)));
    pick.value = action;
    const reason = el('input', { type: 'text', id: 'bulk-reason', placeholder: 'reason', 'aria-label': 'reason (cancel, pause)', size: 16 });
    const cancel = el('button', { type: 'button', id: 'bulk-cancel', disabled: true }, ACTIONS[action] + ' selected');
    const all = st.where ? el('button', { type: 'button', id: 'bulk-cancel-all' }, ACTIONS[action] + ' all matching') : null;
    pick.addEventListener('change', () => {
      action = pick.value;
      if (all) all.textContent = ACTIONS[action] + ' all matching';
      relabel();
    });
    const confirm = el('span', { id: 'bulk-confirm-box', hidden: true });
    progress = el('span', { id: 'bulk-progress', class: 'muted' });
    const ask = (where, what) => {
      confirm.replaceChildren(el('span', {}, ACTIONS[action] + ' ' + what + '? '),
        el('button', { type: 'button', id: 'bulk-confirm', onclick: () => { confirm.hidden = true; start(where, action, reason.value, h); } }, 'Confirm'),
        el('button', { type: 'button', class: 'link', onclick: () => { confirm.hidden = true; } }, 'no'));
      confirm.hidden = false;
    };
    cancel.addEventListener('click', () => {
      const ids = [...selected].sort();
      if (ids.length) ask('id in (' + ids.map((id) => JSON.stringify(id)).join(', ') + ')', ids.length + ' selected run' + (ids.length > 1 ? 's' : ''));
    });
    if (all) all.addEventListener('click', () => ask(st.where, 'every run the filter selects'));
    return el('div', { id: 'bulk' },
      el('div', { class: 'filters' }, form),
      el('div', { class: 'filters', id: 'bulk-actions' }, pick, reason, cancel, all, confirm, progress));
  }

  // start posts the batch and follows it.
  async function start(where, act, reason, h) {
    const args = reason && (act === 'cancel' || act === 'pause') ? { reason } : {};
    try {
      const b = await h.api('POST', '/v1/batches', { where, action: act, args });
      selected.clear();
      follow(b.id, h);
    } catch (e) {
      h.showBanner(e.message);
    }
  }

  // follow shows a batch's progress until it ends.
  async function follow(id, h) {
    following = id;
    for (;;) {
      const b = await h.api('GET', '/v1/batches/' + encodeURIComponent(id));
      if (following !== id || !progress) return;
      progress.dataset.status = b.status;
      progress.dataset.batch = b.id;
      progress.textContent = `batch ${b.id}: ${b.action} ${b.status}, ${b.done + b.failed} of ${b.selected} runs (${b.failed} failed)` +
        (b.errors && b.errors.length ? ' · ' + b.errors[0].error : '');
      if (b.status !== 'running') return;
      await new Promise((r) => setTimeout(r, 300));
    }
  }

  // relabel names the selection's button after the action and count.
  function relabel() {
    const cancel = document.getElementById('bulk-cancel');
    if (!cancel) return;
    cancel.disabled = selected.size === 0;
    cancel.textContent = ACTIONS[action] + ' selected' + (selected.size ? ' (' + selected.size + ')' : '');
  }

  // decorate adds a selection checkbox to each row of the runs table.
  function decorate(table, h) {
    const { el } = h;
    const update = relabel;
    if (!table || table.id !== 'runs-table') { update(); return; }
    const rows = [...table.querySelectorAll('tbody tr.run-row')];
    const head = el('input', { type: 'checkbox', id: 'select-all', 'aria-label': 'select every run shown' });
    head.checked = rows.length > 0 && rows.every((r) => selected.has(r.dataset.run));
    head.addEventListener('change', () => {
      for (const r of rows) {
        if (head.checked) selected.add(r.dataset.run); else selected.delete(r.dataset.run);
        r.querySelector('input.select').checked = head.checked;
      }
      update();
    });
    table.querySelector('thead tr').prepend(el('th', {}, head));
    for (const r of rows) {
      const box = el('input', { type: 'checkbox', class: 'select', 'aria-label': 'select ' + r.dataset.run });
      box.checked = selected.has(r.dataset.run);
      box.addEventListener('change', () => { if (box.checked) selected.add(r.dataset.run); else selected.delete(r.dataset.run); update(); });
      r.prepend(el('td', {}, box));
    }
    update();
  }

  window.skeinBulk = { bar, decorate };
})();
