// "Check my agent": a button on each agent's card that runs POST /v1/agents/{id}/check (a short
// conformance probe, see docs/api.md) and lists its checks as pass, warn or fail, each warn and
// fail with its fix.
//
// It plugs into app.js through window.a2acConsole.onAgent and uses app.js's helpers, so the same
// rules hold: everything from the API goes into the page as text, never as markup, and calls
// carry the tenant token only through api().
'use strict';

(() => {
  const c = window.a2acConsole;
  if (!c) return; // app.js did not load: nothing to add to

  const { api, h, str, badge, note, problemBox, busy } = c;

  // LABELS name the checks for people; the API's names stay visible in code.
  const LABELS = {
    card: 'Agent card',
    card_revision: 'Card vs. live revision',
    endpoint: 'Endpoint answers',
    a2a_version: 'A2A version',
    streaming: 'Streaming',
    first_event: 'First event in time',
    task_ids: 'Task and context ids',
    api_key_refused: 'Refuses calls without the key',
    voice_extension: 'Takes voice turns',
    caller_identity: "Takes the caller's identity",
  };

  // KINDS maps a status to the badge style of app.js.
  const KINDS = { pass: 'ok', warn: 'warn', fail: 'error' };

  function renderReport(r) {
    const checks = Array.isArray(r && r.checks) ? r.checks : [];
    const s = (r && r.summary) || {};
    const worst = s.fail ? 'fail' : s.warn ? 'warn' : 'pass';
    const verdict = { pass: 'Everything as the platform expects.', warn: 'Works, with warnings below.', fail: 'Some checks failed: see the fixes below.' }[worst];
    const facts = [`Sent “${str(r && r.text)}”`];
    if (r && r.protocolVersion) facts.push(`spoke A2A ${str(r.protocolVersion)}`);
    if (r && r.answeredUrl) facts.push(`answered at ${str(r.answeredUrl)}`);
    const box = h('div', { class: 'check-report check-' + worst },
      h('p', { class: 'check-summary' },
        badge(`${Number(s.pass) || 0} pass`, 'ok'), ' ',
        badge(`${Number(s.warn) || 0} warn`, s.warn ? 'warn' : 'off'), ' ',
        badge(`${Number(s.fail) || 0} fail`, s.fail ? 'error' : 'off'), ' ',
        h('span', { class: 'check-verdict', text: verdict })),
      h('p', { class: 'help check-facts', text: facts.join(' · ') + '.' }),
      h('ul', { class: 'check-list' }, checks.map((ck) => {
        const name = str(ck && ck.check);
        const status = str(ck && ck.status);
        return h('li', { class: 'check-item check-' + (Object.hasOwn(KINDS, status) ? status : 'unknown'), 'data-check': name },
          h('p', { class: 'check-head' },
            badge(status || '?', KINDS[status] || 'off'), ' ',
            h('strong', { class: 'check-name', text: Object.hasOwn(LABELS, name) ? LABELS[name] : name }), ' ',
            h('code', { text: name })),
          h('p', { class: 'check-message', text: str(ck && ck.message) }),
          ck && ck.fix ? h('p', { class: 'check-fix' }, h('strong', { text: 'Fix: ' }), str(ck.fix)) : null);
      })));
    return box;
  }

  c.onAgent((article, a) => {
    const id = str(a && a.id);
    const run = h('button', { type: 'button', class: 'check-run secondary', text: 'Check my agent' });
    const result = h('div', { class: 'check-result', role: 'status', 'aria-live': 'polite' });
    const section = h('div', { class: 'check' },
      h('div', { class: 'row' }, run),
      h('p', { class: 'help', text: 'Fetches the card and sends one harmless message (a skill example from the card) the way real turns do, without touching any conversation; when the card demands an API key, also once without it. Lists what passes, what to improve, and how.' }),
      result);
    run.addEventListener('click', () => busy([run], async () => {
      result.replaceChildren(note('Checking the agent… (this can take up to a minute for a slow agent)', 'info'));
      const res = await api('POST', '/v1/agents/' + encodeURIComponent(id) + '/check');
      if (res.ok) result.replaceChildren(renderReport(res.data));
      else result.replaceChildren(problemBox(res, res.status === 429 ? 'Too many checks for now.' : 'The check could not run.'));
    }));
    (article.querySelector('.tools') || article).append(section);
  });
})();
