// Serves agent cards with @a2a-js/sdk 1.3.0's own express card handler and prints exactly what
// it answers, with and without the A2A-Version header.
import express from 'express';
import { A2A_PROTOCOL_VERSION, AGENT_CARD_PATH } from '@a2a-js/sdk';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler } from '@a2a-js/sdk/server/express';
import { duplicateInterfacesForLegacy } from '@a2a-js/sdk/compat/v0_3';
import { writeFileSync } from 'node:fs';

const executor = { execute: async () => {}, cancelTask: async () => {} };

// The SDK's sample-agent card (src/samples/agents/sample-agent), with an https URL.
const quickstart = {
  name: 'Sample Agent',
  description: 'A sample agent to test the stream functionality and simulate the flow of tasks statuses.',
  supportedInterfaces: [
    { url: 'https://js-agent.example.com/', protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION },
  ],
  provider: { organization: 'A2A Samples', url: 'https://example.com/a2a-samples' },
  version: '1.0.0',
  capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ['text'],
  defaultOutputModes: ['text', 'task-status'],
  skills: [
    {
      id: 'sample_agent', name: 'Sample Agent', description: 'Simulate the general flow of a streaming agent.',
      tags: ['sample'], examples: ['hi', 'hello world', 'how are you', 'goodbye'],
      inputModes: ['text'], outputModes: ['text', 'task-status'], securityRequirements: [],
    },
  ],
  documentationUrl: '',
  signatures: [],
};

// A platform-ready card written against the SDK's AgentCard type: text/plain, an API key in
// X-API-KEY, per-skill defaults left empty as the type's required fields make one write them.
const apikey = {
  name: 'Weather agent',
  description: 'Answers questions about the weather.',
  supportedInterfaces: [
    { url: 'https://js-agent.example.com/a2a/jsonrpc', protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION },
    { url: 'https://js-agent.example.com/a2a/rest', protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION },
  ],
  version: '2.1.0',
  capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
  securitySchemes: {
    apiKey: { scheme: { $case: 'apiKeySecurityScheme', value: { description: 'Platform key', location: 'header', name: 'X-API-KEY' } } },
  },
  securityRequirements: [{ schemes: { apiKey: { list: [] } } }],
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [
    {
      id: 'forecast', name: 'Forecast', description: 'Tells the forecast for a city.',
      tags: ['weather'], examples: ['Will it rain in Hangzhou tomorrow?'],
      inputModes: [], outputModes: [], securityRequirements: [],
    },
  ],
  documentationUrl: '',
  iconUrl: '',
  signatures: [],
};

// The SDK's compat-v1-server sample card, JSON-RPC only: each interface at 1.0 and 0.3.
const dual = {
  ...apikey,
  name: 'Compat v1.0 Server',
  supportedInterfaces: duplicateInterfacesForLegacy(
    [{ url: 'https://js-agent.example.com/a2a/jsonrpc', protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION }],
    ['JSONRPC'],
  ),
};

const app = express();
for (const [name, card, legacy] of [['quickstart', quickstart, false], ['apikey', apikey, false], ['dual', dual, true]]) {
  const rh = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  app.use(`/${name}/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: rh, legacyCompat: { enabled: legacy } }));
}
const server = app.listen(0, '127.0.0.1', async () => {
  const base = `http://127.0.0.1:${server.address().port}`;
  const out = process.argv[2];
  for (const [name, hdr] of [['quickstart', '1.0'], ['apikey', '1.0'], ['dual', '1.0'], ['dual', '']]) {
    const headers = hdr ? { 'A2A-Version': hdr } : {};
    const res = await fetch(`${base}/${name}/${AGENT_CARD_PATH}`, { headers });
    const body = await res.text();
    const file = `js-1.3.0-${name}${hdr ? '' : '-no-version-header'}.json`;
    console.log(file, res.status, res.headers.get('content-type'), res.headers.get('vary'));
    writeFileSync(`${out}/${file}`, body);
  }
  server.close();
});
