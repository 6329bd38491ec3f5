// skein web UI: the settle box of a pending external promise on the run
// page: a JSON value to settle it with, or an error to fail it with. For
// a typed promise (its op has a "schema"), the box shows the expected
// shape and an example, and checks the value (shape.js) before it sends
// it; what is wrong, found here or by the server, is written under the
// box. app.js calls window.skeinSettle(run, op, drafts, h).
'use strict';

(() => {
  function settleForm(run, op, drafts, h) {
    const { el, api, APIError } = h;
    const key = op.key;
    const full = run.id + '.' + key;
    const schema = op.schema || null;
    const shape = schema ? window.skeinShape.describe(schema) : '';
    const sample = schema ? JSON.stringify(window.skeinShape.example(schema)) : '{"ok":true}';
    const problem = el('div', { class: 'settle-error', dataset: { key }, role: 'status', hidden: true });
    const say = (msg) => { problem.textContent = msg; problem.hidden = !msg; };
    const input = el('input', {
      type: 'text', class: 'settle-value mono', dataset: { key }, value: drafts.get(key) || '',
      placeholder: 'JSON value, e.g. ' + sample, 'aria-label': 'value for promise ' + full,
      oninput: () => { drafts.set(key, input.value); say(''); },
    });
    const send = (body, what) => h.guard(async () => {
      try {
        await api('POST', '/v1/promises/' + encodeURIComponent(full), body);
      } catch (e) {
        if (e instanceof APIError && e.status === 400) { say('Refused by the server: ' + e.message); return; }
        throw e;
      }
      drafts.delete(key);
      h.showBanner('Promise ' + full + ' ' + what + '.', 'info');
      await h.reload();
    });
    const settle = el('button', {
      type: 'button', class: 'settle primary', dataset: { key }, title: 'settle ' + full + ' with this JSON value',
      onclick: () => {
        const text = input.value.trim();
        if (!text) { say('Type the JSON value to settle ' + full + ' with' + (schema ? ', e.g. ' + sample : ' (null, true, "text", {"a":1}, …)') + '.'); return; }
        let value;
        try { value = JSON.parse(text); } catch (e) { say('Not sent: the value is not JSON: ' + e.message); return; }
        const why = schema ? window.skeinShape.check(schema, value) : null;
        if (why) { say('Not sent: the value does not have the expected shape ' + shape + ': ' + why); return; }
        send('{"value":' + text + '}', 'settled');
      },
    }, 'Settle');
    const reject = el('button', {
      type: 'button', class: 'reject', dataset: { key }, title: 'settle ' + full + ' with an error (the text typed, or "rejected from the UI")',
      onclick: () => send({ error: input.value.trim() || 'rejected from the UI' }, 'failed'),
    }, 'Fail');
    return el('div', { class: 'settle-box', dataset: { key } },
      el('span', { class: 'settle', dataset: { key } }, input, settle, reject),
      schema ? el('div', { class: 'settle-shape muted', dataset: { key }, title: 'expected shape (JSON Schema): ' + JSON.stringify(schema) },
        'expects ', el('code', {}, shape)) : null,
      problem);
  }

  window.skeinSettle = settleForm;
})();
