// a2a-connector web console: the health card of an agent (GET /v1/agents/{id}/health).
//
// It plugs into app.js through window.a2acConsole.onAgent (as check.js does) and uses app.js's
// API call and element builder, so the same rules hold: everything from the API goes into the
// page as text, never as markup, and calls carry the tenant token only through api(). The chart
// is drawn by uPlot (vendored as /ui/uplot.iife.min.js, loaded before this file).
'use strict';

(() => {
  const c = window.a2acConsole;
  if (!c) return; // app.js did not load: nothing to add to
  const { api, h, str } = c;

  const OUTCOME_ROWS = [
    ['COMPLETED', 'Completed'],
    ['INPUT_REQUIRED', 'Asked a follow-up (input required)'],
    ['HANDBACK', 'Declined (handback)'],
    ['FAILED', 'Failed'],
    ['CANCELED', 'Canceled by the caller'],
    ['ERROR', 'Refused before the call (disabled, key missing)'],
  ];

  const num = (v) => (typeof v === 'number' && isFinite(v) ? v : 0);

  function msText(v) {
    if (typeof v !== 'number' || !isFinite(v)) return '—';
    return v >= 1000 ? (v / 1000).toFixed(v >= 10000 ? 1 : 2) + ' s' : Math.round(v) + ' ms';
  }

  function latencyText(l) {
    if (!l || !num(l.count)) return '—';
    return `${msText(l.p50Ms)} / ${msText(l.p95Ms)}`;
  }

  function timeText(iso) {
    const d = new Date(iso);
    return isNaN(d) ? String(iso) : d.toLocaleString();
  }

  // numbers is the table of both windows: outcomes, then latency percentiles.
  function numbers(data) {
    const hour = data.hour || {}, day = data.day || {};
    const row = (label, a, b, cls) => h('tr', { class: cls }, h('th', { scope: 'row', text: label }),
      h('td', { text: String(a) }), h('td', { text: String(b) }));
    const oh = hour.outcomes || {}, od = day.outcomes || {};
    return h('table', { class: 'health-numbers' },
      h('caption', { text: 'Turns by outcome; latency as p50 / p95' }),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: '' }),
        h('th', { scope: 'col', text: 'Last hour' }), h('th', { scope: 'col', text: 'Last day' }))),
      h('tbody', {},
        row('Turns', num(hour.turns), num(day.turns), 'health-turns'),
        OUTCOME_ROWS.map(([k, label]) => row(label, num(oh[k]), num(od[k]), 'health-outcome-' + k.toLowerCase())),
        row('Time to first text', latencyText(hour.timeToFirstText), latencyText(day.timeToFirstText), 'health-ttft'),
        row('Turn duration', latencyText(hour.duration), latencyText(day.duration), 'health-duration')));
  }

  // chart draws turns and failures per minute of the last hour with uPlot.
  function chart(data, width) {
    const minutes = Array.isArray(data.minutes) ? data.minutes : [];
    const box = h('div', { class: 'health-chart', role: 'img',
      'aria-label': 'Turns and failures per minute, last hour' });
    if (typeof window.uPlot !== 'function') {
      box.append(h('p', { class: 'help', text: 'The chart library did not load.' }));
      return box;
    }
    const xs = minutes.map((m) => Math.floor(new Date(m.start).getTime() / 1000));
    const turns = minutes.map((m) => num(m.turns));
    const failures = minutes.map((m) => num(m.failures));
    const bars = window.uPlot.paths && window.uPlot.paths.bars ? window.uPlot.paths.bars({ size: [0.7, 40] }) : undefined;
    const opts = {
      width: Math.max(280, width),
      height: 160,
      legend: { show: true },
      cursor: { drag: { x: false, y: false } },
      // Half a minute of room on each side, so the first and the current minute's bars show whole.
      scales: { x: { time: true, range: (u, min, max) => [min - 30, max + 30] }, y: { range: (u, min, max) => [0, Math.max(1, max)] } },
      axes: [{}, { size: 40, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000] }],
      series: [
        {},
        { label: 'Turns', stroke: '#0b5cad', fill: 'rgba(11,92,173,0.25)', paths: bars, points: { show: false } },
        { label: 'Failures', stroke: '#a40e26', fill: 'rgba(164,14,38,0.45)', paths: bars, points: { show: false } },
      ],
    };
    const u = new window.uPlot(opts, [xs, turns, failures], box);
    // Off the chart, uPlot's legend says "--": it says the latest minute instead, in uPlot's own
    // formats, until the cursor picks another.
    const last = xs.length - 1;
    if (last >= 0) {
      for (const s of u.series.filter((x) => typeof x.value === 'function')) {
        const own = s.value;
        s.value = (self, v, sidx, idx) => (idx == null ? own(self, self.data[sidx][last], sidx, last) : own(self, v, sidx, idx));
      }
      u.setLegend(null);
    }
    box.uplot = u;
    return box;
  }

  function failuresList(data) {
    const failures = Array.isArray(data.failures) ? data.failures : [];
    if (!failures.length) return h('p', { class: 'help health-no-failures', text: 'No failures in the last day.' });
    return h('div', { class: 'table-scroll' }, h('table', { class: 'health-failures' },
      h('caption', { text: `Last ${failures.length === 1 ? 'failure' : failures.length + ' failures'} (newest first; never the user’s text)` }),
      h('thead', {}, h('tr', {}, ['Time', 'Outcome', 'Code', 'Message'].map((c) => h('th', { scope: 'col', text: c })))),
      h('tbody', {}, failures.map((f) => h('tr', {},
        h('td', { text: timeText(f && f.at) }),
        h('td', { text: str(f && f.outcome) }),
        h('td', {}, h('code', { text: str(f && f.code) })),
        h('td', { text: str(f && f.message) }))))));
  }

  const BREAKER_STATES = { closed: 'Closed (calling the agent)', open: 'Open (not calling the agent)', half_open: 'Half-open (one probe turn)' };
  const breakerState = (state) => BREAKER_STATES[state] || str(state);

  // replicasText says how the processes' copies of a breaker stand against the deployment's:
  // they agree unless one was cut off from Postgres and decided on its own.
  function replicasText(b) {
    const list = Array.isArray(b.replicas) ? b.replicas : [];
    if (!list.length) return '—';
    const differ = list.filter((r) => r && r.state !== b.state);
    if (!differ.length) return list.length === 1 ? 'the one that reported agrees' : `all ${list.length} that reported agree`;
    return differ.map((r) => `${str(r.replica)}: ${breakerState(r.state)}`).join('; ');
  }

  // breakersList shows the deployment's circuit breaker of each of the agent's endpoints: every
  // replica decides turns by it.
  function breakersList(data) {
    const list = Array.isArray(data.breakers) ? data.breakers : [];
    if (!list.length) return h('p', { class: 'help health-no-breakers', text: 'The connector has not stopped calling this agent recently.' });
    return h('div', { class: 'table-scroll' }, h('table', { class: 'health-breakers' },
      h('caption', { text: 'After repeated turns that say the agent is down, counted across all replicas, the connector stops calling it for a while: turns then fail at once with agent_unavailable, on every replica, until one probe turn finds it back.' }),
      h('thead', {}, h('tr', {}, ['Endpoint', 'State', 'Failures', 'Since', 'Last cause', 'Next probe', 'Replicas'].map((c) => h('th', { scope: 'col', text: c })))),
      h('tbody', {}, list.map((b) => h('tr', { class: 'breaker-' + str(b && b.state) },
        h('td', {}, h('code', { text: str(b && b.endpoint) })),
        h('td', { text: breakerState(b && b.state) }),
        h('td', { text: String(num(b && b.failures)) }),
        h('td', { text: timeText(b && b.since) }),
        h('td', { text: str(b && b.cause) || '—' }),
        h('td', { text: b && b.retryAt ? timeText(b.retryAt) : '—' }),
        h('td', { class: 'breaker-replicas', text: b ? replicasText(b) : '—' }))))));
  }

  // card returns the agent's health card: closed until the tenant opens it, then loaded (and
  // reloaded with its button), so listing agents costs no health queries.
  function card(agentId) {
    const body = h('div', { class: 'health-body', role: 'status', 'aria-live': 'polite' });
    const reload = h('button', { type: 'button', class: 'health-reload secondary', text: 'Reload health' });
    const details = h('details', { class: 'health', 'data-agent-id': agentId },
      h('summary', { text: 'Health: turns, latency and failures' }),
      h('div', { class: 'row between' },
        h('p', { class: 'help', text: 'Production turns through the connector, summed over its replicas; updated about once a minute.' }),
        reload),
      body);
    let loading = false;
    async function load() {
      if (loading) return;
      loading = true;
      reload.disabled = true;
      body.replaceChildren(h('p', { class: 'help', text: 'Loading health…' }));
      try {
        const res = await api('GET', '/v1/agents/' + encodeURIComponent(agentId) + '/health');
        if (!res.ok) {
          const detail = res.problem && typeof res.problem.detail === 'string' ? res.problem.detail : `HTTP ${res.status}`;
          body.replaceChildren(h('p', { class: 'msg msg-error', text: 'Could not load the health: ' + detail }));
          return;
        }
        const data = res.data || {};
        const width = body.clientWidth || details.clientWidth || 600;
        const binding = { JSONRPC: 'JSON-RPC', 'HTTP+JSON': 'HTTP+JSON (REST)', GRPC: 'gRPC' }[data.endpointBinding] || str(data.endpointBinding);
        body.replaceChildren(
          h('p', { class: 'health-endpoint', text: `Turns call ${binding}, A2A ${str(data.protocolVersion) || '?'}, at ${str(data.endpointUrl)}` }),
          h('h4', { text: 'Turns and failures per minute, last hour' }),
          chart(data, width - 8),
          numbers(data),
          h('h4', { text: 'Recent failures' }),
          failuresList(data),
          h('h4', { text: 'Circuit breakers' }),
          breakersList(data),
          h('p', { class: 'help', text: `As of ${timeText(data.at)}. Percentiles are read from histograms: within ±${Math.round(num(data.percentileRelativeError) * 1000) / 10}%.` }));
      } finally {
        loading = false;
        reload.disabled = false;
      }
    }
    details.addEventListener('toggle', () => { if (details.open) load(); });
    reload.addEventListener('click', load);
    return details;
  }

  c.onAgent((article, a) => {
    const id = str(a && a.id);
    if (id) article.append(card(id));
  });
})();
