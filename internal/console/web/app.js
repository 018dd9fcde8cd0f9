// a2a-connector web console: a tenant pastes its token, validates and registers agent cards,
// and manages its agents, all through the console API (same origin, Authorization: Bearer).
//
// Two rules hold everywhere in this file:
//   - Every string that comes from the API goes into the page as text (textContent, Text nodes,
//     or attribute values set through the DOM), never as markup: card content is written by
//     whoever controls the card URL.
//   - The token lives in sessionStorage only (this tab), never in localStorage, a cookie or the
//     URL; API keys are write-only and no key field is ever filled in by the page.
'use strict';

(() => {
  const TOKEN_KEY = 'a2ac.tenantToken';

  // ---- DOM helpers -------------------------------------------------------------------------

  // h builds an element. attrs: "class", "text" (textContent), "on<event>" (listener), any
  // other key becomes an attribute. Children may be nodes or strings (appended as text).
  function h(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children.flat()) {
      if (c !== undefined && c !== null && c !== false) e.append(c);
    }
    return e;
  }

  const $ = (sel, root) => (root || document).querySelector(sel);

  // str turns any JSON value from a card into display text: cards are untrusted and may put
  // a number, an object or nothing where a string belongs.
  function str(v) {
    if (typeof v === 'string') return v;
    if (v === undefined || v === null) return '';
    try { return JSON.stringify(v); } catch { return String(v); }
  }

  function plural(n, one, many) { return `${n} ${n === 1 ? one : many}`; }

  function badge(text, kind) {
    return h('span', { class: 'badge' + (kind ? ' badge-' + kind : ''), text });
  }

  // ---- token -------------------------------------------------------------------------------

  let memoryToken = ''; // used only when sessionStorage is unavailable (e.g. disabled storage)

  function getToken() {
    try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch { return memoryToken; }
  }
  function setToken(t) {
    memoryToken = t;
    try { sessionStorage.setItem(TOKEN_KEY, t); } catch { /* kept in memory for this page */ }
  }
  function clearToken() {
    memoryToken = '';
    try { sessionStorage.removeItem(TOKEN_KEY); } catch { /* nothing stored */ }
  }

  // ---- API ---------------------------------------------------------------------------------

  // api calls the console API and never throws: {ok, status, data} or {ok:false, status, problem}.
  async function api(method, path, body) {
    const headers = { Accept: 'application/json, application/problem+json' };
    const token = getToken();
    if (token) headers.Authorization = 'Bearer ' + token;
    const init = { method, headers, cache: 'no-store', credentials: 'omit', redirect: 'error' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let resp;
    try {
      resp = await fetch(path, init);
    } catch (err) {
      return { ok: false, status: 0, problem: { detail: `The console API could not be reached (${err.message}). Check the connection and try again.` } };
    }
    let data = null;
    if (resp.status !== 204) {
      const text = await resp.text().catch(() => '');
      if (text) {
        try { data = JSON.parse(text); } catch { data = null; }
      }
    }
    if (resp.ok) return { ok: true, status: resp.status, data };
    const problem = data && typeof data === 'object' && !Array.isArray(data)
      ? data
      : { detail: `The API answered HTTP ${resp.status} without an explanation.` };
    if (resp.status === 401) signedOut('The API did not accept this token (wrong, revoked, or an operator token). Paste a valid tenant token.');
    return { ok: false, status: resp.status, problem };
  }

  // ---- problems ----------------------------------------------------------------------------

  const REASONS = {
    invalid_url: 'The card URL is not a valid absolute http(s) URL.',
    insecure_url: 'The card URL uses plain http; the platform only fetches https URLs.',
    dns: 'The host name could not be resolved (DNS lookup failed).',
    refused: 'The connection was refused: nothing is listening at that address and port.',
    timeout: 'The server did not answer in time (10 seconds for the whole fetch).',
    blocked_address: 'The address is private, loopback or otherwise reserved; the platform only calls public addresses.',
    tls: 'The secure (TLS) connection failed; check the server certificate.',
    http_status: 'The server answered with an HTTP error instead of the card.',
    not_json: 'The server answered, but not with a JSON agent card.',
    too_large: 'The card is larger than 1 MiB.',
    redirects: 'The URL redirected more than 3 times.',
    network: 'A network error interrupted the fetch.',
    canceled: 'The fetch was canceled before it finished.',
  };

  // UNUSABLE_REASONS explain a 422 card_url_unusable: the URL itself is wrong, and it is the
  // tenant's to change (the same reason names mean a failing host under 502 card_unreachable).
  const UNUSABLE_REASONS = {
    dns: 'No host has that name: check the spelling of the host name in the URL.',
    blocked_address: 'The host name leads to a private, loopback or otherwise reserved address; the platform only fetches cards from public addresses.',
    http_status: 'The host answered with an HTTP error (4xx) instead of a card: there is no card at that URL, or it is not public.',
  };

  // unusableLead heads a 422 card_url_unusable: a URL that leads to no card, or (blocked_address)
  // one that leads to an address the platform never calls, whatever is served there. when is ''
  // or 'now' (a refresh: the URL led to a card before).
  function unusableLead(res, when) {
    const now = when === 'now';
    if (res.problem && res.problem.reason === 'blocked_address') {
      return `This card URL ${now ? 'now leads' : 'leads'} to a private or reserved address, which the platform does not call`;
    }
    return now ? 'The card URL no longer leads to a card' : 'This card URL leads to no card';
  }

  function severityRank(p) { return p && p.severity === 'error' ? 0 : 1; }

  // problemsTable lists every card problem, errors first, in a horizontally scrollable box.
  function problemsTable(problems, caption) {
    const list = (Array.isArray(problems) ? problems : [])
      .map((p, i) => ({ p: p || {}, i }))
      .sort((a, b) => severityRank(a.p) - severityRank(b.p) || a.i - b.i)
      .map((x) => x.p);
    const errors = list.filter((p) => p.severity === 'error').length;
    const warnings = list.length - errors;
    const rows = list.map((p) => {
      const sev = str(p.severity) || 'error';
      return h('tr', { class: 'problem' },
        h('td', { class: 'severity', 'data-label': 'Severity' }, badge(sev, sev === 'error' ? 'error' : 'warn')),
        h('td', { class: 'path', 'data-label': 'Path' }, h('code', { text: str(p.path) || '(card)' })),
        h('td', { class: 'code', 'data-label': 'Code' }, h('code', { text: str(p.code) })),
        h('td', { class: 'message', 'data-label': 'Message', text: str(p.message) }));
    });
    return h('div', { class: 'table-wrap', role: 'region', tabindex: '0', 'aria-label': 'Card problems' },
      h('table', { class: 'problems' },
        h('caption', { text: `${caption ? caption + ': ' : ''}${plural(errors, 'error', 'errors')}, ${plural(warnings, 'warning', 'warnings')}` }),
        h('thead', {}, h('tr', {},
          h('th', { scope: 'col', text: 'Severity' }),
          h('th', { scope: 'col', text: 'Path' }),
          h('th', { scope: 'col', text: 'Code' }),
          h('th', { scope: 'col', text: 'Message' }))),
        h('tbody', {}, rows)));
  }

  // problemBox explains a failed API call: our lead sentence, the API's detail, the fetch reason
  // for 502, and the card problems when there are any.
  function problemBox(res, lead) {
    const p = res.problem || {};
    const box = h('div', { class: 'msg msg-error problem-box', 'data-code': str(p.code) || null });
    if (lead) box.append(h('p', { class: 'lead', text: lead }));
    const unusable = p.code === 'card_url_unusable';
    if (unusable || p.code === 'card_unreachable' || (res.status === 502 && p.reason)) {
      const reason = str(p.reason);
      const reasons = unusable ? UNUSABLE_REASONS : REASONS;
      box.append(h('p', { class: 'reason' },
        h('strong', { text: 'Why: ' }),
        Object.hasOwn(reasons, reason) ? reasons[reason]
          : unusable ? 'The card URL leads nowhere a card could be.' : 'The card could not be fetched.',
        reason ? ' ' : '',
        reason ? h('code', { text: `(reason: ${reason})` }) : ''));
    }
    if (p.detail) box.append(h('p', { class: 'detail' }, h('strong', { text: 'Details: ' }), str(p.detail)));
    if (!lead && !p.detail) box.append(h('p', { text: `Request failed (HTTP ${res.status}).` }));
    if (Array.isArray(p.problems) && p.problems.length) box.append(problemsTable(p.problems, 'Problems'));
    return box;
  }

  function note(text, kind) {
    return h('div', { class: 'msg msg-' + kind }, h('p', { text }));
  }

  // busy disables the given buttons while fn runs, so a slow call cannot be sent twice.
  async function busy(buttons, fn) {
    for (const b of buttons) b.disabled = true;
    try { return await fn(); } finally {
      for (const b of buttons) b.disabled = false;
    }
  }

  // ---- pointing at one of the tenant's agents ---------------------------------------------

  // findAgent is the listed card of the agent id, or null.
  function findAgent(id) {
    return [...document.querySelectorAll('#agents article.agent')].find((el) => el.dataset.agentId === id) || null;
  }

  function listedName(el) {
    const n = el && el.querySelector('.agent-name');
    return n ? n.textContent : '';
  }

  // showAgent scrolls to the agent's card, highlights it until focus leaves it, and moves focus
  // to its name. The list is reloaded first when the agent is not in it (registered in another
  // tab, say). False when the tenant has no such agent any more.
  async function showAgent(id) {
    let el = findAgent(id);
    if (!el) {
      await loadAgents();
      el = findAgent(id);
    }
    if (!el) return false;
    for (const other of document.querySelectorAll('#agents article.highlight')) other.classList.remove('highlight');
    el.classList.add('highlight');
    const still = window.matchMedia && window.matchMedia('(prefers-reduced-motion: reduce)').matches;
    el.scrollIntoView({ behavior: still ? 'auto' : 'smooth', block: 'start' });
    const name = el.querySelector('.agent-name');
    if (name) {
      name.setAttribute('tabindex', '-1');
      name.focus({ preventScroll: true });
    }
    return true;
  }

  // showButton is a button that shows the agent id's card, named after it when it is listed.
  function showButton(id) {
    const name = listedName(findAgent(id));
    const b = h('button', { type: 'button', class: 'show-agent secondary', 'data-agent-id': id,
      text: name ? `Show “${name}”` : 'Show that agent' });
    b.addEventListener('click', async () => {
      if (!(await showAgent(id))) b.replaceWith(h('span', { class: 'help', text: 'That agent is no longer in your list.' }));
    });
    return b;
  }

  // alreadyRegisteredBox explains a 409 already_registered: which of the tenant's agents has
  // the card, with a button to go to it. lead(name) words it; name is '' when not listed.
  async function alreadyRegisteredBox(res, lead) {
    const id = str(res.problem && res.problem.agentId);
    if (id && !findAgent(id)) await loadAgents();
    const box = problemBox(res, lead(listedName(id ? findAgent(id) : null)));
    if (id) box.append(h('div', { class: 'row' }, showButton(id)));
    return box;
  }

  // DUPLICATE_ENDPOINT is the warning, said only by registration and refresh and not stored,
  // that another of the tenant's agents calls the same endpoint.
  const DUPLICATE_ENDPOINT = 'duplicate_endpoint';
  const isEndpointWarning = (w) => !!w && w.code === DUPLICATE_ENDPOINT;
  const UUIDS = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

  // endpointWarnings shows each duplicate_endpoint warning of an answer, with a button to each
  // agent it names (other than self).
  function endpointWarnings(warnings, self) {
    return (Array.isArray(warnings) ? warnings : []).filter(isEndpointWarning).map((w) => {
      const message = str(w.message);
      const ids = [...new Set(message.match(UUIDS) || [])].map((x) => x.toLowerCase()).filter((x) => x !== self);
      return h('div', { class: 'msg msg-warn endpoint-warning' },
        h('p', {}, h('strong', { text: 'Same endpoint as another of your agents: ' }), message),
        ids.length ? h('div', { class: 'row' }, ids.map(showButton)) : null);
    });
  }

  // ---- add an agent ------------------------------------------------------------------------

  // interfaceText says which interface the connector calls: "A2A 1.0 — https://…", plus the
  // tenant when the card sets one.
  function interfaceText(version, url, tenant) {
    if (!url) return '';
    return `A2A ${str(version) || '?'} — ${str(url)}` + (tenant ? ` (tenant ${str(tenant)})` : '');
  }

  // cardPreview shows the card and, from the validation v, the interface the connector would
  // call: the card alone cannot say (A2A 1.0 cards list several, 0.x cards have a url).
  function cardPreview(card, v) {
    if (!card || typeof card !== 'object' || Array.isArray(card)) {
      return h('p', { class: 'help', text: 'The card is not a JSON object, so there is nothing to preview.' });
    }
    const caps = card.capabilities && typeof card.capabilities === 'object' ? card.capabilities : {};
    const fb = v && v.fallback && typeof v.fallback === 'object' ? v.fallback : null;
    const fields = [
      ['Name', card.name], ['Description', card.description], ['Version', card.version],
      ['Calls', interfaceText(v && v.protocolVersion, v && v.endpointUrl, v && v.endpointTenant) || 'no interface the platform can call'],
      fb ? ['Falls back to', interfaceText(fb.protocolVersion, fb.url, fb.tenant)] : null,
      ['Streaming', caps.streaming === true ? 'yes' : 'no'],
    ].filter(Boolean);
    const dl = h('dl', {}, fields.flatMap(([k, val]) => [h('dt', { text: k }), h('dd', { class: 'f-' + k.toLowerCase().replace(/ /g, '-'), text: str(val) || '—' })]));
    const skills = Array.isArray(card.skills) ? card.skills : [];
    const items = skills.slice(0, 100).map((s) => {
      const sk = s && typeof s === 'object' ? s : {};
      return h('li', {},
        h('strong', { text: str(sk.name) || '(no name)' }), ' ',
        h('code', { text: str(sk.id) }),
        sk.description ? ' — ' + str(sk.description) : '');
    });
    return h('div', { class: 'preview' },
      h('h3', { text: 'Card preview' }), dl,
      h('p', { class: 'skills-heading' }, h('strong', { text: `Skills (${skills.length})` })),
      items.length ? h('ul', { class: 'skills' }, items) : h('p', { class: 'help', text: 'No skills.' }));
  }

  // verdict is the preview's headline: a valid card the tenant has already (registeredAs) would
  // be refused as already registered, so it says so and shows that agent.
  function verdict(v) {
    const valid = v && v.valid === true;
    const id = str(v && v.registeredAs);
    if (!valid) return h('p', { class: 'verdict msg msg-error', text: 'Invalid — fix the errors below, then validate again.' });
    if (!id) return h('p', { class: 'verdict msg msg-ok', text: 'Valid — this card can be registered.' });
    const name = listedName(findAgent(id));
    return h('div', { class: 'verdict registered msg msg-warn' },
      h('p', { text: `Valid, and already registered for your tenant${name ? `, as “${name}”` : ''}: registering it again would be refused. Refresh or delete that agent instead.` }),
      h('div', { class: 'row' }, showButton(id)));
  }

  function renderValidation(v) {
    const problems = v && Array.isArray(v.problems) ? v.problems : [];
    return h('div', { class: 'validation' },
      verdict(v),
      h('p', {}, h('strong', { text: 'Resolved card URL: ' }), h('code', { class: 'resolved', text: str(v && v.resolvedCardUrl) })),
      cardPreview(v && v.card, v),
      problems.length ? problemsTable(problems, 'Problems') : h('p', { class: 'help', text: 'No problems found.' }));
  }

  // showKeyField shows the add form's API key field only when an API key is the kind chosen; the
  // field is emptied whenever it hides.
  function showKeyField(on) {
    $('#api-key-field').hidden = !on;
    if (!on) $('#api-key').value = '';
  }

  // addFormInputs holds the add form's inputs of the credential kind chosen (not the API key,
  // which has its own field); credentialChoice is what the validated card offers.
  let addFormInputs = {};

  // offerCredentials fits the add form to the validated card v: a choice of every kind the card
  // takes (v.credentialKinds, what it asks for first; "none" first for a card that asks for
  // nothing) and the fields of the kind chosen. v null hides it all.
  function offerCredentials(v) {
    const select = $('#credential-kind');
    const kinds = v && Array.isArray(v.credentialKinds) ? v.credentialKinds.map(str) : [];
    const asked = v ? str(v.credentialKind) : '';
    const options = [];
    if (v && (asked === 'none' || asked === '')) options.push(['', 'None (the card asks for none)']);
    for (const k of kinds) {
      const label = REGISTRATION_KINDS[k] ? REGISTRATION_KINDS[k].label : k;
      options.push([k, k === asked && !v.guessed ? label + ' (the card asks for it)' : label]);
    }
    select.replaceChildren(...options.map(([value, text]) => h('option', { value, text })));
    $('#credential-kind-field').hidden = options.length === 0;
    showCredentialInputs(options.length ? options[0][0] : '');
  }

  // showCredentialInputs shows the add form's fields for kind ('' none); values typed for
  // another kind are dropped.
  function showCredentialInputs(kind) {
    showKeyField(kind === 'apiKey');
    addFormInputs = {};
    const box = $('#credential-inputs');
    const k = CREDENTIAL_KINDS[kind];
    if (!k) { box.replaceChildren(); return; }
    box.replaceChildren(...credentialRows(k, 'add', addFormInputs));
  }

  function readCardURL() {
    const url = $('#card-url').value.trim();
    if (!url) {
      $('#add-result').replaceChildren(note('Paste an agent card URL first.', 'error'));
      $('#card-url').focus();
    }
    return url;
  }

  async function validateCard() {
    const cardUrl = readCardURL();
    if (!cardUrl) return;
    const out = $('#add-result');
    out.replaceChildren(note('Fetching and validating the card…', 'info'));
    // The card is fetched as registering would: trusting the CA bundle typed, and with the
    // client certificate typed (a card behind mutual TLS); what is typed survives the preview.
    const body = { cardUrl };
    const caPem = $('#ca-pem').value.trim();
    if (caPem) body.tls = { caPem };
    const kind = $('#credential-kind-field').hidden ? '' : $('#credential-kind').value;
    const typed = {};
    for (const [n, i] of Object.entries(addFormInputs)) typed[n] = i.value;
    if (kind === 'mtls' && Object.values(typed).some((v) => v.trim() !== '')) body.credentials = credentialBody('mtls', (n) => typed[n] || '');
    const res = await api('POST', '/v1/agents/validate', body);
    // A refused handshake may be the agent asking for a client certificate before it shows
    // its card: the form offers one, to validate again with it.
    const handshake = !res.ok && res.status === 502 && res.problem.reason === 'tls';
    // A 400 is about what was typed: the form stays as it is, to be corrected.
    if (res.status !== 400) {
      offerCredentials(res.ok ? res.data : (handshake ? { credentialKind: 'mtls', credentialKinds: ['mtls'], guessed: true } : null));
      if (!$('#credential-kind-field').hidden && $('#credential-kind').value === kind) {
        for (const [n, i] of Object.entries(addFormInputs)) if (typed[n] !== undefined) i.value = typed[n];
      }
    }
    const registeredAs = res.ok && res.data ? str(res.data.registeredAs) : '';
    if (registeredAs && !findAgent(registeredAs)) await loadAgents(); // to name it
    if (res.ok) out.replaceChildren(renderValidation(res.data));
    else if (res.problem.code === 'card_url_unusable') out.replaceChildren(problemBox(res, `${unusableLead(res)}: check it.`));
    else if (handshake) out.replaceChildren(problemBox(res, 'The card could not be fetched: the TLS handshake failed. A private CA goes in the CA bundle field; if the agent asks for a client certificate, paste it below and validate again.'));
    else if (res.status === 502) out.replaceChildren(problemBox(res, 'The card could not be fetched.'));
    else out.replaceChildren(problemBox(res, 'Validation failed.'));
  }

  async function registerAgent() {
    const cardUrl = readCardURL();
    if (!cardUrl) return;
    const body = { cardUrl };
    const key = $('#api-key-field').hidden ? '' : $('#api-key').value;
    if (key) body.apiKey = key;
    if ($('#caller-identity').checked) body.callerIdentity = { enabled: true };
    const caPem = $('#ca-pem').value.trim();
    if (caPem) body.tls = { caPem };
    const kind = $('#credential-kind-field').hidden ? '' : $('#credential-kind').value;
    // Nothing typed registers without credentials, as an empty key field does: set them later.
    const typed = Object.values(addFormInputs).some((i) => i.value.trim() !== '');
    if (CREDENTIAL_KINDS[kind] && typed) body.credentials = credentialBody(kind, (n) => (addFormInputs[n] ? addFormInputs[n].value : ''));
    const out = $('#add-result');
    out.replaceChildren(note('Fetching, validating and registering…', 'info'));
    const res = await api('POST', '/v1/agents', body);
    if (res.ok) {
      const a = res.data || {};
      offerCredentials(null);
      $('#card-url').value = '';
      $('#ca-pem').value = '';
      $('#caller-identity').checked = false;
      // The list first, so that the warnings can name the agents they are about.
      await loadAgents();
      const warnings = Array.isArray(a.warnings) ? a.warnings : [];
      const cardWarnings = warnings.filter((w) => !isEndpointWarning(w));
      const msgs = [note(`Registered “${str(a.name)}” (revision ${str(a.revision)}). It is listed under Your agents.`, 'ok')];
      msgs.push(...endpointWarnings(warnings, str(a.id)));
      if (cardWarnings.length) {
        msgs.push(h('details', { class: 'register-warnings' },
          h('summary', { text: `The card has ${plural(cardWarnings.length, 'warning', 'warnings')}` }),
          problemsTable(cardWarnings, 'Warnings')));
      }
      const needed = CREDENTIAL_KINDS[str(a.credentialKind)];
      if (a.apiKeyRequired && !a.apiKeySet) {
        msgs.push(note('This agent requires an API key: set one under Your agents before it can be called.', 'warn'));
      } else if (needed && a.credentialsSet !== true) {
        msgs.push(note('This agent requires ' + aLabel(needed) + ': set it under Your agents before it can be called.', 'warn'));
      }
      out.replaceChildren(...msgs);
      return;
    }
    const code = res.problem.code;
    if (code === 'already_registered') {
      out.replaceChildren(await alreadyRegisteredBox(res, (name) => name
        ? `This agent is already registered for your tenant, as “${name}”, so nothing was registered.`
        : 'This agent is already registered for your tenant, so nothing was registered.'));
      return;
    }
    let lead = 'Registration failed.';
    if (code === 'card_url_unusable') lead = `${unusableLead(res)}, so nothing was registered. Check the URL and try again.`;
    else if (res.status === 422) lead = 'The card is not valid, so nothing was registered. Fix the errors below and try again.';
    else if (res.status === 502) lead = 'The card could not be fetched, so nothing was registered.';
    else if (res.status === 400 && res.problem.field === 'cardUrl') lead = 'This card URL cannot be used, so nothing was registered.';
    out.replaceChildren(problemBox(res, lead));
  }

  // ---- your agents -------------------------------------------------------------------------

  // ---- try it: test conversations --------------------------------------------------------

  const OUTCOMES = {
    COMPLETED: ['ok', 'The agent answered and finished the task.'],
    INPUT_REQUIRED: ['warn', 'The agent asks a follow-up question and holds the conversation: your next message answers it.'],
    HANDBACK: ['off', 'The agent declined this turn; the platform would handle it itself.'],
    FAILED: ['error', 'The turn failed.'],
    CANCELED: ['off', 'The turn was canceled.'],
  };

  // conversations keeps each agent's test conversation across re-renders of its card:
  // agent id -> {sessionId, held, turns: [{text, result}]}. Forgotten with the token.
  const conversations = new Map();

  // EXAMPLE_PREFIX is the label some cards put before a skill example ("示例: 1与2相加是多少").
  const EXAMPLE_PREFIX = /^\s*(示例|例如|例子|样例|examples?|e\.g\.|eg)\s*[:：]\s*/i;

  // examplePlaceholder is the first example among the agent's skills, so each agent suggests
  // something it can do.
  function examplePlaceholder(a) {
    for (const s of Array.isArray(a.skills) ? a.skills : []) {
      for (const ex of s && Array.isArray(s.examples) ? s.examples : []) {
        const text = str(ex).replace(EXAMPLE_PREFIX, '').trim();
        if (text) return 'e.g. ' + text;
      }
    }
    return 'Type a message to the agent';
  }

  // tryBlockedReason says why a turn cannot be sent to the agent now ('' when it can).
  function tryBlockedReason(a) {
    if (!a.enabled) return 'This agent is disabled: enable it to try it.';
    if (a.apiKeyRequired === true && a.apiKeySet !== true) return 'This agent needs an API key: set it above before trying it.';
    const kind = CREDENTIAL_KINDS[str(a.credentialKind)];
    if (kind && a.credentialsSet !== true) return 'This agent needs ' + aLabel(kind) + ': set it above before trying it.';
    return '';
  }

  function clockTime(iso) {
    const d = new Date(str(iso));
    return Number.isNaN(d.getTime()) ? str(iso) : d.toLocaleTimeString();
  }

  // paramsText shows a device command's parameters as "key: value" pairs.
  function paramsText(params) {
    if (!params || typeof params !== 'object' || Array.isArray(params)) return str(params);
    return Object.entries(params).map(([k, v]) => `${k}: ${str(v)}`).join(', ');
  }

  // deviceCommands shows the final metadata: its "commands" list as a table, anything else as
  // JSON.
  function deviceCommands(metadata) {
    if (!metadata || typeof metadata !== 'object' || Array.isArray(metadata)) return null;
    const out = [];
    const { commands, ...rest } = metadata;
    if (Array.isArray(commands) && commands.length) {
      out.push(h('div', { class: 'table-wrap', role: 'region', tabindex: '0', 'aria-label': 'Device commands' },
        h('table', { class: 'commands' },
          h('caption', { text: 'Device commands' }),
          h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: 'Command' }), h('th', { scope: 'col', text: 'Parameters' }))),
          h('tbody', {}, commands.map((c) => {
            const cmd = c && typeof c === 'object' ? c : { name: c };
            return h('tr', { class: 'command' },
              h('td', { class: 'name' }, h('code', { text: str(cmd.name) })),
              h('td', { class: 'params' }, h('code', { text: paramsText(cmd.params) })));
          })))));
    } else if (commands !== undefined) {
      rest.commands = commands;
    }
    if (Object.keys(rest).length) {
      out.push(h('details', { class: 'metadata' }, h('summary', { text: 'Metadata' }),
        h('pre', { text: JSON.stringify(rest, null, 2) })));
    }
    return out.length ? h('div', { class: 'final-metadata' }, out) : null;
  }

  // FINISHES say, in words, how a voice-extension agent ends its part.
  const FINISHES = {
    complete: 'The agent is done with its part; the platform goes on.',
    escalate: 'The agent hands the caller to a human.',
    endConversation: 'The agent ends the conversation here.',
  };

  // millisText is a duration in milliseconds, in words ("250 ms", "8 s", "1.5 s"); '' for none.
  function millisText(ms) {
    const n = Number(ms);
    if (!Number.isFinite(n) || n <= 0) return '';
    return n < 1000 ? `${n} ms` : `${+(n / 1000).toFixed(1)} s`;
  }

  // expectText says how the agent wants its question answered: "keypad digits (at most 4, end
  // with #, within 8 s) or speech; after 6 s of silence it is told the caller said nothing".
  function expectText(e) {
    const ways = (Array.isArray(e.input) ? e.input : []).map((m) => {
      if (m !== 'dtmf') return m === 'speech' ? 'speech' : str(m);
      const d = e.dtmf && typeof e.dtmf === 'object' ? e.dtmf : {};
      const how = [
        d.maxDigits ? `at most ${str(d.maxDigits)}` : '',
        d.endKey ? `end with ${str(d.endKey)}` : '',
        millisText(d.timeoutMs) ? `within ${millisText(d.timeoutMs)}` : '',
      ].filter(Boolean);
      return 'keypad digits' + (how.length ? ` (${how.join(', ')})` : '');
    });
    const parts = [];
    if (ways.length) parts.push('Answer with ' + ways.join(' or ') + '.');
    else if (e.dtmf) parts.push('Keypad digits are collected as the agent says.');
    if (millisText(e.noInputTimeoutMs)) parts.push(`After ${millisText(e.noInputTimeoutMs)} of silence the agent is told the caller said nothing.`);
    return parts.join(' ');
  }

  // voiceLines says what a voice-extension agent said of its reply: whether it may be
  // interrupted, how it ends its part, how to collect the answer to its question.
  function voiceLines(r) {
    if (!r) return null;
    const lines = [];
    if (r.bargeIn === false) lines.push(h('p', { class: 'voice-bargein' }, badge('no barge-in', 'warn'), ' The agent asked not to be interrupted while this reply is spoken.'));
    else if (r.bargeIn === true) lines.push(h('p', { class: 'voice-bargein' }, 'The caller may interrupt this reply.'));
    const f = r.finish && typeof r.finish === 'object' ? r.finish : null;
    if (f) {
      const type = str(f.type);
      lines.push(h('p', { class: 'voice-finish' }, badge('finish: ' + type, type === 'complete' ? 'ok' : 'warn'), ' ',
        Object.hasOwn(FINISHES, type) ? FINISHES[type] : 'The agent says how it ends its part.',
        f.reason ? [' ', h('strong', { text: 'Reason: ' }), str(f.reason)] : null,
        f.summary ? [' ', h('strong', { text: 'Summary: ' }), str(f.summary)] : null));
    }
    const e = r.expect && typeof r.expect === 'object' ? r.expect : null;
    if (e) lines.push(h('p', { class: 'voice-expect' }, badge('expects', 'warn'), ' ', expectText(e) || 'The agent says how to collect the answer.'));
    return lines.length ? h('div', { class: 'voice-lines' }, lines) : null;
  }

  // renderTestResult shows how one test turn ended: the outcome, the agent's words (its question,
  // its reply, its reason for declining), device commands and the hold.
  function renderTestResult(r) {
    const outcome = str(r && r.outcome) || 'UNKNOWN';
    const [kind, sentence] = Object.hasOwn(OUTCOMES, outcome) ? OUTCOMES[outcome] : ['off', 'Unexpected outcome.'];
    const box = h('div', { class: 'outcome' },
      h('p', {}, badge(outcome, kind), ' ', h('span', { text: sentence })));
    if (r && r.error) {
      box.append(h('p', { class: 'msg msg-error test-error' },
        h('strong', { text: 'Error: ' }), h('code', { text: str(r.error.code) }), ' — ', str(r.error.message)));
    }
    const text = str(r && r.text);
    const said = str(r && r.statusText);
    if (outcome === 'INPUT_REQUIRED') {
      box.append(h('p', { class: 'asks' }, h('strong', { text: 'The agent asks: ' }), text || said || '(no question text)'));
    } else {
      if (text) box.append(h('p', { class: 'reply', text }));
      if (said && said !== text) box.append(h('p', { class: 'said' }, h('strong', { text: 'The agent said: ' }), said));
      if (!text && !said) box.append(h('p', { class: 'help', text: '(no reply text)' }));
    }
    const voice = voiceLines(r);
    if (voice) box.append(voice);
    const cmds = deviceCommands(r && r.metadata);
    if (cmds) box.append(cmds);
    if (r && r.holdExpiresAt) {
      box.append(h('p', { class: 'hold help', text: `The agent holds this conversation until ${clockTime(r.holdExpiresAt)}.` }));
    }
    if (r && (r.taskId || r.contextId)) {
      box.append(h('p', { class: 'ids help' },
        r.continued ? 'Continued task ' : 'Task ', h('code', { text: str(r.taskId) || '—' }),
        ', context ', h('code', { text: str(r.contextId) || '—' })));
    }
    return box;
  }

  // KEYS are the keypad's keys, in its order.
  const KEYS = ['1', '2', '3', '4', '5', '6', '7', '8', '9', '*', '0', '#'];
  const DEFAULT_SILENCE_MS = 5000;

  // replyOf is what the caller would hear of a test turn: the reply, or the question.
  function replyOf(result) {
    const r = result || {};
    return str(r.text) || (r.outcome === 'INPUT_REQUIRED' ? str(r.statusText) : '');
  }

  // renderTryIt is an agent's "Try it": a test conversation that runs through the connector's
  // session router, so a follow-up question holds it and the next message answers it. Like a
  // call, it can send keypad digits (any agent: one without the voice extension gets them as
  // text), and, to an agent that declares the voice extension, silence and the interruption of
  // the last reply after so many characters.
  function renderTryIt(a) {
    const id = str(a.id);
    const inputId = 'try-' + id;
    const blocked = tryBlockedReason(a);
    const voice = a.voiceExtension === true;
    const box = h('div', { class: 'try' });
    // What the user is composing survives repaints: keypad digits, the silence, the interruption.
    let digits = '';
    let silenceMs = String(DEFAULT_SILENCE_MS);
    let interruptAfter = '';
    // The user a turn names, for an agent that asks for the caller's identity; kept across repaints.
    let userId = '';

    function paint(message) {
      const conv = conversations.get(id);
      const held = !!(conv && conv.held);
      const input = h('input', { id: inputId, class: 'try-input', type: 'text', autocomplete: 'off', maxlength: '4000',
        placeholder: held ? 'Answer the agent’s question' : examplePlaceholder(a),
        disabled: !!blocked, 'aria-describedby': inputId + '-help' });
      const send = h('button', { type: 'submit', class: 'try-send', text: held ? 'Answer' : 'Send', disabled: !!blocked });
      const end = conv ? h('button', { type: 'button', class: 'try-end secondary', text: 'End conversation' }) : null;
      const help = blocked
        ? h('p', { id: inputId + '-help', class: 'try-blocked msg msg-warn', text: blocked })
        : h('p', { id: inputId + '-help', class: 'help', text: held
          ? 'Your next message goes to the agent’s open task, as the user’s next turn would.'
          : 'Sends a real message to the agent in a test conversation of its own (never a user’s session).' });
      const log = conv && conv.turns.length ? h('ol', { class: 'try-log', 'aria-label': 'Test conversation' },
        conv.turns.map((t) => h('li', { class: 'turn' },
          h('p', { class: 'you' }, h('strong', { text: 'You: ' }), t.text),
          t.interrupted ? h('p', { class: 'interrupted help' }, `You cut off the previous reply after ${plural(Array.from(t.interrupted.heard).length, 'character', 'characters')}: “${t.interrupted.heard}”`) : null,
          h('div', { class: 'try-result' }, t.result ? renderTestResult(t.result) : t.problem)))) : null;
      const status = h('div', { class: 'try-msg', role: 'status', 'aria-live': 'polite' }, message || '');
      const controls = [send, end].filter(Boolean);
      const voiceBox = renderCallControls(conv, controls, status);
      // An agent that asks for the caller's identity gets a token for the user named here.
      let userBox = null;
      if (callerIdentityOn(a)) {
        const userInput = h('input', { id: inputId + '-user', class: 'try-user', type: 'text', autocomplete: 'off', maxlength: '256', value: userId,
          placeholder: 'a platform user id (optional)', 'aria-describedby': inputId + '-user-help' });
        userInput.addEventListener('input', () => { userId = userInput.value; });
        userBox = h('div', { class: 'try-user-field' },
          h('label', { for: inputId + '-user', text: 'As user' }), userInput,
          h('p', { id: inputId + '-user-help', class: 'help', text: "The agent receives the caller's identity token for this user (a pairwise id, never the id itself); empty: no token." }));
      }
      const form = h('form', { class: 'try-form', autocomplete: 'off', novalidate: true },
        h('label', { for: inputId, text: 'Try it' }),
        log,
        h('div', { class: 'row' }, input, send, end),
        help,
        userBox,
        voiceBox,
        status);
      form.addEventListener('submit', (ev) => {
        ev.preventDefault();
        const text = input.value;
        if (!text.trim()) { status.replaceChildren(note('Type a message first.', 'error')); input.focus(); return; }
        busy(controls, () => sendTurn({ text }, text, status));
      });
      if (end) end.addEventListener('click', () => busy(controls, () => endConversation(status)));
      box.replaceChildren(form);
      return input;
    }

    // renderCallControls is the keypad, "say nothing" and "interrupt after N characters". Their
    // buttons join controls, which a running turn disables.
    function renderCallControls(conv, controls, status) {
      const shown = h('output', { class: 'keypad-digits', 'aria-live': 'polite', text: digits || '—' });
      const keys = KEYS.map((k) => h('button', { type: 'button', class: 'key secondary', 'data-key': k, text: k,
        'aria-label': k === '#' ? '# (end key: sends the digits)' : k === '*' ? 'star' : k, disabled: !!blocked }));
      const sendDigits = h('button', { type: 'button', class: 'keypad-send secondary', text: 'Send digits', disabled: !!blocked });
      const clear = h('button', { type: 'button', class: 'keypad-clear link', text: 'Clear', disabled: !!blocked });
      controls.push(...keys, sendDigits, clear);
      const showDigits = () => { shown.textContent = digits || '—'; };
      const sendKeys = (termination) => {
        if (!digits) { status.replaceChildren(note(termination === 'endKey' ? 'Press digits before #: # ends the entry.' : 'Press digits first.', 'error')); return; }
        const d = digits;
        digits = ''; // before the answer repaints the form; back when the turn could not run
        showDigits();
        busy(controls, async () => {
          if (!(await sendTurn({ dtmf: { digits: d, termination } }, `pressed ${d}${termination === 'endKey' ? ' #' : ''} (keypad, ${termination})`, status))) {
            digits = d;
            showDigits();
          }
        });
      };
      for (const key of keys) {
        key.addEventListener('click', () => {
          const k = key.dataset.key;
          if (k === '#') { sendKeys('endKey'); return; }
          if (digits.length >= 64) { status.replaceChildren(note('At most 64 digits.', 'error')); return; }
          digits += k;
          showDigits();
        });
      }
      sendDigits.addEventListener('click', () => sendKeys('timeout'));
      clear.addEventListener('click', () => { digits = ''; showDigits(); });
      const keypad = h('div', { class: 'keypad-box' },
        h('p', { class: 'keypad-head' }, h('strong', { text: 'Keypad: ' }), shown),
        h('div', { class: 'keypad', role: 'group', 'aria-label': 'Keypad' }, keys),
        h('div', { class: 'row' }, sendDigits, clear),
        h('p', { class: 'help', text: voice
          ? '# sends the digits with the end key; Send digits sends them as if the caller stopped pressing (timeout).'
          : '# sends the digits with the end key; Send digits as if the caller stopped pressing. This agent does not declare the voice extension: it gets the digits as plain text.' }));
      if (!voice) {
        return h('div', { class: 'try-voice' }, keypad,
          h('p', { class: 'help try-no-voice', text: 'No “say nothing” or “interrupt” here: this agent does not declare the voice extension, so it cannot be told that the caller was silent or cut its reply off (a dialog engine reprompts the caller itself).' }));
      }
      const silenceId = 'silence-' + id;
      const silence = h('input', { id: silenceId, class: 'silence-ms', type: 'number', min: '0', max: '3600000', step: '100', value: silenceMs, disabled: !!blocked });
      silence.addEventListener('input', () => { silenceMs = silence.value; });
      const sayNothing = h('button', { type: 'button', class: 'try-silence secondary', text: 'Say nothing', disabled: !!blocked });
      controls.push(sayNothing);
      sayNothing.addEventListener('click', () => {
        const ms = Number(silence.value);
        if (!Number.isInteger(ms) || ms < 0 || ms > 3600000) { status.replaceChildren(note('Silence: a whole number of milliseconds, 0 to 3600000.', 'error')); silence.focus(); return; }
        busy(controls, () => sendTurn({ noInput: { silenceMs: ms } }, `(said nothing for ${millisText(ms) || '0 s'})`, status));
      });
      const interruptId = 'interrupt-' + id;
      const last = conv && conv.turns.length ? conv.turns[conv.turns.length - 1] : null;
      const lastReply = last && last.result ? replyOf(last.result) : '';
      const interrupt = h('input', { id: interruptId, class: 'interrupt-chars', type: 'number', min: '0', step: '1', value: interruptAfter,
        placeholder: 'off', disabled: !!blocked || !lastReply, 'aria-describedby': interruptId + '-help' });
      interrupt.addEventListener('input', () => { interruptAfter = interrupt.value; });
      return h('div', { class: 'try-voice' }, keypad,
        h('div', { class: 'row' }, h('label', { for: silenceId, text: 'Silence (ms)' }), silence, sayNothing),
        h('div', { class: 'row' }, h('label', { for: interruptId, text: 'Interrupt after' }), interrupt, h('span', { text: 'characters' })),
        h('p', { id: interruptId + '-help', class: 'help', text: lastReply
          ? 'The next turn tells the agent the caller cut off its last reply after that many characters (empty: no interruption).'
          : 'Once the agent has replied, the next turn can tell it the caller cut that reply off after so many characters.' }));
    }

    // interruption is the interruption the next turn carries: the last turn's id and the first
    // N characters of its reply, when "interrupt after" is set. Used once.
    function interruption(conv) {
      const n = Number(interruptAfter);
      const last = conv && conv.turns.length ? conv.turns[conv.turns.length - 1] : null;
      if (!voice || interruptAfter === '' || !Number.isInteger(n) || n < 0 || !last || !last.result || !last.result.turnId) return null;
      return { turnId: str(last.result.turnId), heardText: Array.from(replyOf(last.result)).slice(0, n).join('') };
    }

    // sendTurn sends one turn (input: {text}, {dtmf} or {noInput}); said is the log's words for
    // it. True when the agent answered.
    async function sendTurn(input, said, status) {
      const conv = conversations.get(id);
      status.replaceChildren(note('Waiting for the agent…', 'info'));
      const body = { ...input };
      if (conv) body.sessionId = conv.sessionId;
      if (callerIdentityOn(a) && userId.trim()) body.userId = userId.trim();
      const cut = interruption(conv);
      if (cut) body.interruption = cut;
      const res = await api('POST', '/v1/agents/' + encodeURIComponent(id) + '/test', body);
      if (!res.ok) {
        let lead = 'The test turn could not run.';
        if (res.problem.code === 'no_input_unsupported') lead = 'The agent cannot be told that the caller said nothing.';
        else if (res.status === 409) lead = 'The agent cannot be called right now.';
        status.replaceChildren(problemBox(res, lead));
        return false;
      }
      if (cut) interruptAfter = '';
      const r = res.data || {};
      const next = conv && conv.sessionId === r.sessionId ? conv : { sessionId: str(r.sessionId), turns: [] };
      next.turns.push({ text: said, result: r, interrupted: cut ? { heard: cut.heardText } : null });
      next.held = r.outcome === 'INPUT_REQUIRED' && !!r.holdExpiresAt;
      conversations.set(id, next);
      if (box.isConnected) paint().focus();
      return true;
    }

    async function endConversation(status) {
      const conv = conversations.get(id);
      if (!conv) return;
      const res = await api('DELETE', '/v1/agents/' + encodeURIComponent(id) + '/test/' + encodeURIComponent(conv.sessionId));
      if (!res.ok && res.status !== 404) {
        status.replaceChildren(problemBox(res, 'Could not end the conversation.'));
        return;
      }
      conversations.delete(id);
      const released = res.ok && res.data && res.data.released === true;
      if (box.isConnected) {
        paint(note(released
          ? 'Conversation ended: the hold was released and the agent was asked to cancel its open task.'
          : 'Conversation ended. The next message starts a new one.', 'ok')).focus();
      }
    }

    paint();
    return box;
  }

  // ---- one agent's card ------------------------------------------------------------------

  // renderKeyForm is the write-only API key field, shown only when the card asks for a key or
  // one is set (so that it can be rotated or removed).
  function renderKeyForm(a, article, msg) {
    const id = str(a.id);
    if (a.apiKeyRequired !== true && a.apiKeySet !== true) return null;
    // API key: write-only. The field starts empty every time and is cleared after each save.
    const keyInputId = 'key-' + id;
    const keyInput = h('input', { id: keyInputId, class: 'key-input', type: 'password', autocomplete: 'off', spellcheck: 'false', autocapitalize: 'off' });
    const keySave = h('button', { type: 'submit', class: 'key-save', text: a.apiKeySet ? 'Rotate key' : 'Set key' });
    const keyRemove = a.apiKeySet ? h('button', { type: 'button', class: 'key-remove secondary', text: 'Remove key' }) : null;
    const keyForm = h('form', { class: 'key-form', autocomplete: 'off', novalidate: true },
      h('label', { for: keyInputId, text: a.apiKeySet ? 'Rotate the API key' : 'Set the API key' }),
      h('div', { class: 'row' }, keyInput, keySave, keyRemove),
      h('p', { class: 'help', text: a.apiKeyRequired ? 'The card asks for an API key. Write-only: the current key is never shown.' : 'Write-only: the current key is never shown.' }));
    keyForm.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const key = keyInput.value;
      if (!key) { msg.replaceChildren(note('Type the new API key first.', 'error')); keyInput.focus(); return; }
      busy([keySave], async () => {
        const res = await api('PATCH', '/v1/agents/' + encodeURIComponent(id), { apiKey: key });
        keyInput.value = '';
        if (res.ok) replaceAgent(article, res.data, note(a.apiKeySet ? 'API key rotated.' : 'API key set.', 'ok'), '.key-input');
        else msg.replaceChildren(problemBox(res, 'Could not save the API key.'));
      });
    });
    if (keyRemove) {
      keyRemove.addEventListener('click', () => busy([keyRemove], async () => {
        const res = await api('PATCH', '/v1/agents/' + encodeURIComponent(id), { apiKey: '' });
        if (res.ok) {
          const warn = res.data.apiKeyRequired ? ' The agent requires one: it cannot be called until a new key is set.' : '';
          replaceAgent(article, res.data, note('API key removed.' + warn, res.data.apiKeyRequired ? 'warn' : 'ok'), '.key-input');
        } else msg.replaceChildren(problemBox(res, 'Could not remove the API key.'));
      }));
    }
    return keyForm;
  }

  // CREDENTIAL_KINDS are the kinds other than an API key: what the card asks for decides the
  // form (docs/api.md#credentials), and an AWS key fits any card. Each field is write-only,
  // like the key.
  const CREDENTIAL_KINDS = {
    bearerToken: { label: 'bearer token', fields: [['bearerToken', 'Bearer token', 'password']] },
    oauth2: { label: 'OAuth 2.0 client', fields: [['clientId', 'Client ID', 'text'], ['clientSecret', 'Client secret', 'password'], ['tokenUrl', 'Token URL (optional: the card names one)', 'url'], ['scopes', 'Scopes (optional, space-separated)', 'text']] },
    googleServiceAccount: { label: 'Google service account', fields: [['googleServiceAccount', 'Service account JSON key file', 'textarea']] },
    mtls: { label: 'client certificate (mutual TLS)', fields: [['certificatePem', 'Client certificate (PEM; its chain may follow)', 'textarea'], ['privateKeyPem', 'Its private key (PEM, unencrypted)', 'textarea']] },
    awsSigV4: { label: 'AWS access key (SigV4)', fields: [['accessKeyId', 'Access key ID', 'text'], ['secretAccessKey', 'Secret access key', 'password'], ['sessionToken', 'Session token (optional)', 'password'], ['region', 'Region', 'text'], ['service', 'Service (optional: bedrock-agentcore)', 'text']] },
  };
  // aLabel is a kind's label with its article: "an OAuth 2.0 client", "a bearer token".
  function aLabel(k) { return (/^[aeiou]/i.test(k.label) ? 'an ' : 'a ') + k.label; }

  // REGISTRATION_KINDS is every kind the add form can offer.
  const REGISTRATION_KINDS = { apiKey: { label: 'API key' }, ...CREDENTIAL_KINDS };

  // credentialRows are the write-only inputs of kind k, recorded by name in inputs; idSuffix
  // keeps their ids unique on the page.
  function credentialRows(k, idSuffix, inputs) {
    return k.fields.map(([name, label, type]) => {
      const inputId = 'cred-' + name + '-' + idSuffix;
      const input = type === 'textarea'
        ? h('textarea', { id: inputId, class: 'cred-input', rows: '4', spellcheck: 'false', autocomplete: 'off' })
        : h('input', { id: inputId, class: 'cred-input', type, autocomplete: 'off', spellcheck: 'false', autocapitalize: 'off' });
      inputs[name] = input;
      return h('div', { class: 'row' }, h('label', { for: inputId, text: label }), input);
    });
  }

  // credentialBody is the `credentials` member for kind from the values v(name) typed; optional
  // members left empty are left out.
  function credentialBody(kind, v) {
    switch (kind) {
      case 'bearerToken': return { bearerToken: v('bearerToken') };
      case 'googleServiceAccount': return { googleServiceAccount: v('googleServiceAccount') };
      case 'mtls': return { mtls: { certificatePem: v('certificatePem'), privateKeyPem: v('privateKeyPem') } };
      case 'awsSigV4': {
        const aws = { accessKeyId: v('accessKeyId'), secretAccessKey: v('secretAccessKey'), region: v('region') };
        if (v('sessionToken')) aws.sessionToken = v('sessionToken');
        if (v('service')) aws.service = v('service');
        return { awsSigV4: aws };
      }
      default: {
        const cred = { oauth2: { clientId: v('clientId'), clientSecret: v('clientSecret') } };
        if (v('tokenUrl')) cred.oauth2.tokenUrl = v('tokenUrl');
        const scopes = v('scopes').split(/\s+/).filter(Boolean);
        if (scopes.length) cred.oauth2.scopes = scopes;
        return cred;
      }
    }
  }

  // renderCredentialForm is the write-only credential form of an agent whose card asks for a
  // bearer token, an OAuth 2.0 client or a Google service account; null for the other kinds.
  function renderCredentialForm(a, article, msg) {
    const kind = CREDENTIAL_KINDS[str(a.credentialKind)];
    if (!kind) return null;
    const id = str(a.id);
    const inputs = {};
    const rows = credentialRows(kind, id, inputs);
    const save = h('button', { type: 'submit', class: 'cred-save', text: a.credentialsSet ? 'Replace ' + kind.label : 'Set ' + kind.label });
    const form = h('form', { class: 'cred-form', autocomplete: 'off', novalidate: true },
      h('p', { class: 'help', text: (str(a.credentialKind) === 'awsSigV4' ? 'Calls are signed with ' + aLabel(kind) + '. ' : 'The card asks for ' + aLabel(kind) + '. ') + (a.credentialsSet ? 'One is set. ' : 'None is set: the agent cannot be called yet. ') + 'Write-only: what is set is never shown.' }),
      ...rows, h('div', { class: 'row' }, save));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const cred = credentialBody(str(a.credentialKind), (n) => (inputs[n] ? inputs[n].value : ''));
      busy([save], async () => {
        const res = await api('PATCH', '/v1/agents/' + encodeURIComponent(id), { credentials: cred });
        Object.values(inputs).forEach((i) => { i.value = ''; });
        if (res.ok) replaceAgent(article, res.data, note('Credentials saved.', 'ok'), '.cred-input');
        else msg.replaceChildren(problemBox(res, 'Could not save the credentials.'));
      });
    });
    return form;
  }

  // signatureBadge says what verifying the card's signature found.
  function signatureBadge(a) {
    const sig = a.cardSignature || {};
    switch (str(sig.status)) {
      case 'verified': return badge('signed card, verified' + (sig.keyId ? ' (' + str(sig.keyId) + ')' : ''), 'ok');
      case 'unverifiable': return badge('signed card, not verifiable', 'warn');
      case 'invalid': return badge('card signature invalid', 'warn');
      default: return null;
    }
  }

  function callerIdentityOn(a) {
    return !!(a && a.callerIdentity && a.callerIdentity.enabled === true);
  }

  function renderAgent(a, message) {
    const id = str(a.id);
    const name = str(a.name) || '(no name)';
    const headingId = 'agent-h-' + id;
    const msg = h('div', { class: 'agent-msg', role: 'status', 'aria-live': 'polite' });
    if (message) msg.append(...[message].flat().filter(Boolean));
    // The card's warnings; a refresh's duplicate_endpoint is about the tenant's agents, not the
    // card, and is shown in the refresh's message instead.
    const warnings = (Array.isArray(a.warnings) ? a.warnings : []).filter((w) => !isEndpointWarning(w));
    const skills = Array.isArray(a.skills) ? a.skills : [];
    const needsKey = a.apiKeyRequired === true && a.apiKeySet !== true;
    const otherKind = CREDENTIAL_KINDS[str(a.credentialKind)];
    const needsCred = !!otherKind && a.credentialsSet !== true;

    const badges = h('div', { class: 'badges' },
      badge(a.enabled ? 'enabled' : 'disabled', a.enabled ? 'ok' : 'off'),
      badge('version ' + (str(a.version) || '—')),
      badge(a.streaming ? 'streaming' : 'no streaming'),
      badge('revision ' + str(a.revision)),
      a.voiceExtension === true ? badge('voice extension', 'ok') : null,
      needsKey ? badge('needs an API key', 'warn') : null,
      needsCred ? badge('needs ' + aLabel(otherKind), 'warn') : null,
      otherKind && a.credentialsSet ? badge(otherKind.label + ' set', 'ok') : null,
      !otherKind && a.apiKeySet ? badge('API key set', 'ok') : null,
      !otherKind && !a.apiKeyRequired && !a.apiKeySet ? badge('no API key needed') : null,
      callerIdentityOn(a) ? badge('caller identity', 'ok') : null,
      signatureBadge(a),
      badge(plural(warnings.length, 'warning', 'warnings'), warnings.length ? 'warn' : null));

    const article = h('article', { class: 'agent' + (a.enabled ? '' : ' disabled'), 'data-agent-id': id, 'aria-labelledby': headingId });
    // showAgent's highlight lasts while focus stays in the card.
    article.addEventListener('focusout', (ev) => {
      if (!article.contains(ev.relatedTarget)) article.classList.remove('highlight');
    });

    // Enable / disable, refresh, delete.
    const toggle = h('button', { type: 'button', class: 'toggle secondary', text: a.enabled ? 'Disable' : 'Enable' });
    const refresh = h('button', { type: 'button', class: 'refresh secondary', text: 'Refresh card' });
    const del = h('button', { type: 'button', class: 'delete secondary', text: 'Delete…' });
    const confirmYes = h('button', { type: 'button', class: 'delete-confirm danger', text: 'Yes, delete' });
    const confirmNo = h('button', { type: 'button', class: 'delete-cancel secondary', text: 'Cancel' });
    const confirmRow = h('div', { class: 'confirm msg msg-warn', hidden: true },
      h('p', { text: `Delete “${name}”? Conversations it holds are released. This cannot be undone.` }),
      h('div', { class: 'row' }, confirmYes, confirmNo));

    toggle.addEventListener('click', () => busy([toggle], async () => {
      const res = await api('PATCH', '/v1/agents/' + encodeURIComponent(id), { enabled: !a.enabled });
      if (res.ok) replaceAgent(article, res.data, note(res.data.enabled ? 'Enabled.' : 'Disabled: the platform will not call this agent.', 'ok'), '.toggle');
      else msg.replaceChildren(problemBox(res, 'Could not change the agent.'));
    }));

    // The caller's identity: one checkbox, saved as it changes (docs/api.md#the-callers-identity).
    const identityBox = h('input', { type: 'checkbox', class: 'caller-identity', checked: callerIdentityOn(a) });
    const identityRow = h('label', { class: 'caller-identity-row' }, identityBox, " Send the caller's identity");
    identityBox.addEventListener('change', () => busy([identityBox], async () => {
      const res = await api('PATCH', '/v1/agents/' + encodeURIComponent(id), { callerIdentity: { enabled: identityBox.checked } });
      if (res.ok) replaceAgent(article, res.data, note(callerIdentityOn(res.data) ? "The agent now receives the caller's identity on turns that name a user." : "The agent no longer receives the caller's identity.", 'ok'), '.caller-identity');
      else msg.replaceChildren(problemBox(res, 'Could not change the agent.'));
    }));

    refresh.addEventListener('click', () => busy([refresh], async () => {
      msg.replaceChildren(note('Fetching the card again…', 'info'));
      const res = await api('POST', '/v1/agents/' + encodeURIComponent(id) + '/refresh');
      if (res.ok) {
        const d = res.data || {};
        const head = d.unchanged === true
          ? note(`Card unchanged (revision ${str(d.revision)}): the card URL serves the card that is already live, so nothing new was stored.`, 'ok')
          : note(`Card refreshed: revision ${str(d.revision)} is live.`, 'ok');
        replaceAgent(article, d, [head, ...endpointWarnings(d.warnings, id)], '.refresh');
      } else if (res.problem.code === 'already_registered') {
        msg.replaceChildren(await alreadyRegisteredBox(res, (other) =>
          `The card URL now serves the card of another of your agents${other ? `, “${other}”` : ''}: revision ${str(a.revision)} stays live.`));
      } else if (res.problem.code === 'card_url_unusable') {
        msg.replaceChildren(problemBox(res, `${unusableLead(res, 'now')}: revision ${str(a.revision)} stays live.`));
      } else if (res.status === 422) {
        msg.replaceChildren(problemBox(res, `The new card is invalid, so it was not applied: revision ${str(a.revision)} stays live.`));
      } else if (res.status === 502) {
        msg.replaceChildren(problemBox(res, `The card could not be fetched: revision ${str(a.revision)} stays live.`));
      } else {
        msg.replaceChildren(problemBox(res, 'Refresh failed.'));
      }
    }));

    del.addEventListener('click', () => { confirmRow.hidden = false; confirmNo.focus(); });
    confirmNo.addEventListener('click', () => { confirmRow.hidden = true; del.focus(); });
    confirmYes.addEventListener('click', () => busy([confirmYes, confirmNo], async () => {
      const res = await api('DELETE', '/v1/agents/' + encodeURIComponent(id));
      if (res.ok || res.status === 404) {
        conversations.delete(id);
        article.remove();
        $('#agents-msg').replaceChildren(note(`Deleted “${name}”.`, 'ok'));
        if (!$('#agents .agent')) showEmpty();
      } else {
        confirmRow.hidden = true;
        msg.replaceChildren(problemBox(res, 'Could not delete the agent.'));
      }
    }));

    const details = [];
    if (skills.length) {
      details.push(h('details', { class: 'skills' },
        h('summary', { text: `Skills (${skills.length})` }),
        h('ul', {}, skills.map((s) => h('li', {},
          h('strong', { text: str(s && s.name) || '(no name)' }), ' ', h('code', { text: str(s && s.id) }),
          s && s.description ? ' — ' + str(s.description) : '')))));
    }
    if (warnings.length) {
      details.push(h('details', { class: 'warnings' },
        h('summary', { text: `Card warnings (${warnings.length})` }),
        problemsTable(warnings, 'Warnings')));
    }

    // Native append would turn a null (a line the agent has no data for) into the text "null".
    article.append(...[
      h('div', { class: 'agent-head' }, h('h3', { id: headingId, class: 'agent-name', text: name })),
      a.description ? h('p', { class: 'desc', text: str(a.description) }) : null,
      h('p', { class: 'card-url' }, 'Card: ', h('code', { text: str(a.cardUrl) })),
      a.endpointUrl ? h('p', { class: 'endpoint' }, 'Calls: ', h('code', { text: interfaceText(a.protocolVersion, a.endpointUrl, a.endpointTenant) })) : null,
      a.onFallback && a.preferred ? h('p', { class: 'fallback' }, 'Moved from: ', h('code', { text: interfaceText(a.preferred.protocolVersion, a.preferred.url, a.preferred.tenant) }),
        ' (it refused the version or binding; a card refresh tries it again)') : null,
      !a.onFallback && a.fallback && a.fallback.url ? h('p', { class: 'fallback' }, 'Falls back to: ', h('code', { text: interfaceText(a.fallback.protocolVersion, a.fallback.url, a.fallback.tenant) })) : null,
      badges,
      ...details,
      msg,
      h('div', { class: 'tools' },
        h('div', { class: 'row' }, toggle, refresh, del),
        confirmRow,
        identityRow,
        renderCredentialForm(a, article, msg) || renderKeyForm(a, article, msg),
        renderTryIt(a))].filter(Boolean));
    for (const hook of agentHooks) hook(article, a); // e.g. check.js adds "Check my agent"
    return article;
  }

  // replaceAgent swaps an agent's card for its new state and keeps keyboard focus in place.
  function replaceAgent(oldEl, agent, message, focusSel) {
    if (!oldEl.isConnected) return;
    const fresh = renderAgent(agent, message);
    oldEl.replaceWith(fresh);
    const f = focusSel && fresh.querySelector(focusSel);
    if (f) f.focus();
  }

  function showEmpty() {
    $('#agents').replaceChildren(h('p', { class: 'empty', text: 'No agents yet. Add one above.' }));
  }

  async function loadAgents() {
    const res = await api('GET', '/v1/agents');
    if (!res.ok) {
      $('#agents-msg').replaceChildren(problemBox(res, 'Could not load your agents.'));
      return false;
    }
    $('#agents-msg').replaceChildren();
    const agents = res.data && Array.isArray(res.data.agents) ? res.data.agents : [];
    if (!agents.length) showEmpty();
    else $('#agents').replaceChildren(...agents.map((a) => renderAgent(a || {})));
    return true;
  }

  // ---- your tokens -------------------------------------------------------------------------

  function dateTime(iso) {
    const d = new Date(str(iso));
    return Number.isNaN(d.getTime()) ? str(iso) : d.toLocaleString();
  }

  // renderTokens lists the tenant's tokens (ids and dates only: the API never returns a token),
  // each with a revoke button behind an inline confirmation.
  function renderTokens(tokens) {
    if (!tokens.length) return [h('p', { class: 'help', text: 'No tokens.' })];
    const confirmBox = h('div', { class: 'confirm msg msg-warn tokens-confirm', hidden: true });
    const rows = tokens.map((tk) => {
      const t = tk && typeof tk === 'object' ? tk : {};
      const id = str(t.id);
      const current = t.current === true;
      const revoke = h('button', { type: 'button', class: 'token-revoke secondary', text: 'Revoke…',
        'aria-label': current ? `Revoke token ${id} (the one this tab uses)` : `Revoke token ${id}` });
      revoke.addEventListener('click', () => askRevoke(id, current, revoke, confirmBox));
      return h('tr', { class: 'token' + (current ? ' current' : ''), 'data-token-id': id },
        h('td', { class: 'token-id', 'data-label': 'Token' }, h('code', { text: id }), current ? [' ', badge('current: this tab', 'ok')] : null),
        h('td', { class: 'token-created', 'data-label': 'Created', text: dateTime(t.createdAt) }),
        h('td', { class: 'token-used', 'data-label': 'Last used', text: t.lastUsedAt ? dateTime(t.lastUsedAt) : 'never' }),
        h('td', { class: 'token-actions' }, revoke));
    });
    return [
      h('div', { class: 'table-wrap', role: 'region', tabindex: '0', 'aria-label': 'Your tokens' },
        h('table', { class: 'tokens' },
          h('caption', { text: plural(tokens.length, 'token', 'tokens') }),
          h('thead', {}, h('tr', {},
            h('th', { scope: 'col', text: 'Token id' }),
            h('th', { scope: 'col', text: 'Created' }),
            h('th', { scope: 'col', text: 'Last used' }),
            h('th', { scope: 'col' }, h('span', { class: 'visually-hidden', text: 'Actions' })))),
          h('tbody', {}, rows))),
      confirmBox,
    ];
  }

  // askRevoke asks before revoking token id; revoking the token this tab uses signs it out.
  function askRevoke(id, current, revoke, box) {
    const yes = h('button', { type: 'button', class: 'token-revoke-confirm danger', text: 'Yes, revoke' });
    const no = h('button', { type: 'button', class: 'token-revoke-cancel secondary', text: 'Cancel' });
    box.replaceChildren(
      h('p', { text: current
        ? `Revoke token ${id}? It is the token this tab uses: the page signs out at once. If it is your tenant’s last token, only your operator can issue a new one.`
        : `Revoke token ${id}? Whatever still uses it is refused from its next request. This cannot be undone.` }),
      h('div', { class: 'row' }, yes, no));
    box.hidden = false;
    // The row asked about is marked while the question is open.
    for (const tr of document.querySelectorAll('#tokens tr.confirming')) tr.classList.remove('confirming');
    const row = revoke.closest('tr');
    if (row) row.classList.add('confirming');
    no.addEventListener('click', () => {
      box.hidden = true;
      if (row) row.classList.remove('confirming');
      if (revoke.isConnected) revoke.focus();
    });
    yes.addEventListener('click', () => busy([yes, no], async () => {
      const res = await api('DELETE', '/v1/tokens/' + encodeURIComponent(id));
      if (res.status === 401) return; // signedOut already explained it
      if (!res.ok && res.status !== 404) {
        box.hidden = true;
        if (row) row.classList.remove('confirming');
        $('#tokens-msg').replaceChildren(problemBox(res, 'Could not revoke the token.'));
        return;
      }
      if (current) {
        signedOut(`You revoked the token this tab used (${id}), so the page signed out. Paste another token of your tenant to continue.`);
        $('#token-input').focus();
        return;
      }
      await loadTokens();
      $('#tokens-msg').replaceChildren(note(`Token ${id} revoked: it is refused from its next request.`, 'ok'));
      $('#tokens-reload').focus();
    }));
    no.focus();
  }

  async function loadTokens() {
    const res = await api('GET', '/v1/tokens');
    if (!res.ok) {
      if (res.status !== 401) $('#tokens-msg').replaceChildren(problemBox(res, 'Could not load your tokens.'));
      return false;
    }
    $('#tokens-msg').replaceChildren();
    const tokens = res.data && Array.isArray(res.data.tokens) ? res.data.tokens : [];
    $('#tokens').replaceChildren(...renderTokens(tokens));
    return true;
  }

  // ---- signing in and out ------------------------------------------------------------------

  function showWorkspace(on) {
    $('#workspace').hidden = !on;
    $('#token-form').hidden = on;
    $('#token-state').hidden = !on;
  }

  // signedOut forgets the token and every piece of tenant data on the page.
  function signedOut(message) {
    clearToken();
    conversations.clear();
    showWorkspace(false);
    $('#agents').replaceChildren();
    $('#agents-msg').replaceChildren();
    $('#tokens').replaceChildren();
    $('#tokens-msg').replaceChildren();
    $('#add-result').replaceChildren();
    $('#card-url').value = '';
    showKeyField(false);
    const m = $('#token-msg');
    m.className = 'msg' + (message ? ' msg-warn' : '');
    m.textContent = message || '';
  }

  async function useToken(ev) {
    ev.preventDefault();
    const input = $('#token-input');
    const token = input.value.trim();
    const m = $('#token-msg');
    if (!token) {
      m.className = 'msg msg-error';
      m.textContent = 'Paste your tenant token first.';
      input.focus();
      return;
    }
    input.value = '';
    setToken(token);
    m.className = 'msg';
    m.textContent = 'Checking the token…';
    await busy([$('#token-save')], async () => {
      const res = await api('GET', '/v1/agents');
      if (res.status === 401) return; // signedOut already explained it
      showWorkspace(true);
      m.className = 'msg';
      m.textContent = '';
      if (!res.ok) {
        $('#agents-msg').replaceChildren(problemBox(res, 'Could not load your agents.'));
        return;
      }
      await loadAgents();
      await loadTokens();
      $('#card-url').focus();
    });
  }

  function start() {
    $('#token-form').addEventListener('submit', useToken);
    $('#token-forget').addEventListener('click', () => {
      signedOut('');
      const m = $('#token-msg');
      m.className = 'msg msg-ok';
      m.textContent = 'Token forgotten. Paste it again to continue.';
      $('#token-input').focus();
    });
    $('#add-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      busy([$('#validate'), $('#register')], validateCard);
    });
    $('#register').addEventListener('click', () => busy([$('#validate'), $('#register')], registerAgent));
    // Another URL is another card: its credential fields show again only after it is validated.
    $('#card-url').addEventListener('input', () => offerCredentials(null));
    $('#credential-kind').addEventListener('change', () => showCredentialInputs($('#credential-kind').value));
    $('#reload').addEventListener('click', () => busy([$('#reload')], loadAgents));
    $('#tokens-reload').addEventListener('click', () => busy([$('#tokens-reload')], loadTokens));
    if (getToken()) {
      showWorkspace(true);
      loadAgents().then((ok) => { if (ok) loadTokens(); });
    }
  }

  // Scripts loaded after this one (check.js) add to each agent's card through agentHooks, with
  // the same helpers, so that they follow the same rules (text only, the token's api()).
  const agentHooks = [];
  window.a2acConsole = Object.freeze({ api, h, str, badge, note, problemBox, busy, onAgent: (fn) => { agentHooks.push(fn); } });

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
