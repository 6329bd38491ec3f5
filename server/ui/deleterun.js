// skein web UI: the Delete button of an ended run's page: Delete run…,
// then Confirm or Keep it. DELETE /v1/runs/{id} deletes the run with all
// its records; a run a live run still needs is refused (409) and the
// banner says which rule keeps it. app.js calls
// window.skeinDeleteRun(run, ui, h) for a run that ended.
'use strict';

(() => {
  function deleteActions(r, ui, h) {
    const { el, api } = h;
    if (!ui.deleting) {
      return [el('button', {
        type: 'button', class: 'danger', id: 'delete-run', title: 'delete this run with its journal, attempts and leases',
        onclick: () => { ui.deleting = true; h.show(); },
      }, 'Delete run…')];
    }
    const confirm = el('button', {
      type: 'button', class: 'danger', id: 'delete-confirm',
      onclick: () => h.guard(async () => {
        confirm.disabled = true;
        try {
          await api('DELETE', '/v1/runs/' + encodeURIComponent(r.id));
        } finally {
          ui.deleting = false;
        }
        h.showBanner('Run ' + r.id + ' deleted.', 'info');
        h.setHash('#/runs');
      }),
    }, 'Confirm: delete ' + r.id);
    const keep = el('button', { type: 'button', id: 'delete-keep', onclick: () => { ui.deleting = false; h.show(); } }, 'Keep it');
    return [el('span', { class: 'confirm-text', id: 'delete-question' }, 'Delete this run? Its record, journal, attempts and leases are gone for good.'), confirm, keep];
  }

  window.skeinDeleteRun = deleteActions;
})();
