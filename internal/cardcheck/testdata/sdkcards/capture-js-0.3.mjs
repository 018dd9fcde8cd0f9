// Serves A2A 0.3 agent cards with @a2a-js/sdk 0.3.14's own express card handler and prints
// exactly what it answers. The cards carry gRPC addresses written as the SDK's README writes
// them: a bare host:port, no scheme.
import express from 'express';
import { AGENT_CARD_PATH } from '@a2a-js/sdk';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler } from '@a2a-js/sdk/server/express';
import { writeFileSync } from 'node:fs';

const executor = { execute: async () => {}, cancelTask: async () => {} };

// The SDK README's quickstart card (JSON-RPC at url; JSON-RPC, HTTP+JSON and gRPC in
// additionalInterfaces, the gRPC one as 'localhost:4001'), as written there.
const quickstart = {
  name: 'Hello Agent',
  description: 'A simple agent that says hello.',
  protocolVersion: '0.3.0',
  version: '0.1.0',
  url: 'http://localhost:4000/a2a/jsonrpc',
  skills: [{ id: 'chat', name: 'Chat', description: 'Say hello', tags: ['chat'] }],
  capabilities: { pushNotifications: false },
  defaultInputModes: ['text'],
  defaultOutputModes: ['text'],
  additionalInterfaces: [
    { url: 'http://localhost:4000/a2a/jsonrpc', transport: 'JSONRPC' },
    { url: 'http://localhost:4000/a2a/rest', transport: 'HTTP+JSON' },
    { url: 'localhost:4001', transport: 'GRPC' },
  ],
};

// A gRPC-only agent the way the README binds its gRPC server, on an address literal: url and
// its one additionalInterfaces entry are '127.0.0.1:4001', preferredTransport GRPC; an API key
// in X-API-KEY, an extended card offered.
const grpcOnly = {
  name: 'Weather agent (gRPC)',
  description: 'Answers questions about the weather.',
  protocolVersion: '0.3.0',
  version: '2.1.0',
  url: '127.0.0.1:4001',
  preferredTransport: 'GRPC',
  additionalInterfaces: [{ url: '127.0.0.1:4001', transport: 'GRPC' }],
  capabilities: { streaming: true, pushNotifications: false },
  securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'X-API-KEY' } },
  security: [{ apiKey: [] }],
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  supportsAuthenticatedExtendedCard: true,
  skills: [{ id: 'forecast', name: 'Forecast', description: 'Tells the forecast for a city.', tags: ['weather'] }],
};

const app = express();
for (const [name, card] of [['quickstart', quickstart], ['grpc-only', grpcOnly]]) {
  const rh = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  app.use(`/${name}/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: rh }));
}
const server = app.listen(0, '127.0.0.1', async () => {
  const base = `http://127.0.0.1:${server.address().port}`;
  const out = process.argv[2];
  for (const name of ['quickstart', 'grpc-only']) {
    const res = await fetch(`${base}/${name}/${AGENT_CARD_PATH}`);
    const body = await res.text();
    const file = `js-0.3.14-${name}.json`;
    console.log(file, res.status, res.headers.get('content-type'));
    writeFileSync(`${out}/${file}`, body);
  }
  server.close();
});
