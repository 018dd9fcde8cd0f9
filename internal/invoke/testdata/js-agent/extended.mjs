// The weather agent of bindings.mjs (same executor) on the official JavaScript SDK (@a2a-js/sdk
// 0.3.14), offering an authenticated extended card on each A2A 0.3 binding, for the connector's
// extended-card tests (cmd/connector/extended_e2e_test.go). The SDK serves it: jsonRpcHandler
// (agent/getAuthenticatedExtendedCard), restHandler (GET /v1/card, the 0.3 proto's JSON) and
// grpcService (GetAgentCard). A caller whose X-API-KEY is KEY is an authenticated user, to whom
// the SDK answers the extended card; anyone else gets the public card (the SDK's rule).
//
//   jsonrpc  card url http://127.0.0.1:<port>/jsonrpc
//   rest     card url http://127.0.0.1:<port>/rest, preferredTransport HTTP+JSON
//   grpc     card url 127.0.0.1:<grpc port> (a bare address, as the SDK's README writes it),
//            preferredTransport GRPC; the card itself on an HTTP port of its own
//
// Public cards list the skill "weather"; the extended cards add "storm_warnings".
//
// Usage: node extended.mjs   It listens on free ports of 127.0.0.1 and prints
// "A2A_EXTENDED_PORTS=<jsonrpc> <rest> <grpc card port>" on stdout once all accept connections.
// It exits when stdin closes.

import express from 'express';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler } from '@a2a-js/sdk/server/express';
import { grpcService, A2AService } from '@a2a-js/sdk/server/grpc';
import * as grpc from '@grpc/grpc-js';

import { WeatherExecutor } from './executor.mjs';

const KEY = 'sk-js-extended';

function card(name, url, transport, extended) {
  const skills = [{ id: 'weather', name: 'Weather', description: 'Tells the weather.', tags: ['weather'] }];
  if (extended) {
    skills.push({ id: 'storm_warnings', name: 'Storm warnings', description: 'Warns of storms, for members.', tags: ['weather'] });
  }
  return {
    name,
    description: 'An agent on @a2a-js/sdk 0.3 with an authenticated extended card.',
    protocolVersion: '0.3.0',
    version: '1.0.0',
    url,
    preferredTransport: transport,
    capabilities: { streaming: true, pushNotifications: false },
    securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'X-API-KEY' } },
    security: [{ apiKey: [] }],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    supportsAuthenticatedExtendedCard: true,
    skills,
  };
}

const user = (key) => ({ isAuthenticated: key === KEY, userName: key === KEY ? 'platform' : '' });
const httpUser = async (req) => user(req.get('x-api-key'));
const grpcUser = async (call) => user(String(call.metadata.get('x-api-key')[0] ?? ''));

// handler is an SDK request handler whose two cards get their url once the port is known.
function handler(name, transport) {
  const pub = card(name, '', transport, false);
  const ext = card(name, '', transport, true);
  const rh = new DefaultRequestHandler(pub, new InMemoryTaskStore(), new WeatherExecutor(), undefined, undefined, undefined, ext);
  return { rh, setURL: (url) => { pub.url = url; ext.url = url; } };
}

function listen(app) {
  return new Promise((resolve, reject) => {
    const server = app.listen(0, '127.0.0.1', () => resolve(server.address().port));
    server.on('error', reject);
  });
}

async function startJSONRPC() {
  const { rh, setURL } = handler('JS SDK 0.3 agent with an extended card (JSON-RPC)', 'JSONRPC');
  const app = express();
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: rh }));
  app.use('/jsonrpc', jsonRpcHandler({ requestHandler: rh, userBuilder: httpUser }));
  const port = await listen(app);
  setURL(`http://127.0.0.1:${port}/jsonrpc`);
  return port;
}

async function startREST() {
  const { rh, setURL } = handler('JS SDK 0.3 agent with an extended card (HTTP+JSON)', 'HTTP+JSON');
  const app = express();
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: rh }));
  app.use('/rest', restHandler({ requestHandler: rh, userBuilder: httpUser }));
  const port = await listen(app);
  setURL(`http://127.0.0.1:${port}/rest`);
  return port;
}

async function startGRPC() {
  const { rh, setURL } = handler('JS SDK 0.3 agent with an extended card (gRPC)', 'GRPC');
  const server = new grpc.Server();
  server.addService(A2AService, grpcService({ requestHandler: rh, userBuilder: grpcUser }));
  const grpcPort = await new Promise((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => (err ? reject(err) : resolve(port)));
  });
  setURL(`127.0.0.1:${grpcPort}`);
  const app = express();
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: rh }));
  return listen(app);
}

try {
  const ports = [await startJSONRPC(), await startREST(), await startGRPC()];
  console.log(`A2A_EXTENDED_PORTS=${ports.join(' ')}`);
} catch (err) {
  console.error(`listen: ${err.message}`);
  process.exit(1);
}

// Never outlive the test process: it holds our stdin open.
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
process.on('SIGTERM', () => process.exit(0));
