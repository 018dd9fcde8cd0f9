// The same A2A 0.3 agent as agent.mjs (same executor, same words) on the official JavaScript SDK
// (@a2a-js/sdk 0.3.14), served over one binding at a time, for the interop tests of
// internal/invoke (js_bindings_test.go). Nobody on this project wrote the server side of the
// protocol here: only the executor and the request log are ours.
//
//   rest  the SDK's restHandler (A2A 0.3 HTTP+JSON: POST /rest/v1/message:send, ...) at /rest;
//         its card lists only that interface (preferredTransport HTTP+JSON, url .../rest), as
//         Google's hosted agents do.
//   grpc  the SDK's grpcService (A2A 0.3 gRPC, a2a.v1.A2AService) on @grpc/grpc-js, plaintext,
//         on a port of its own; its card (on the HTTP port) lists only that interface
//         (preferredTransport GRPC, url http://127.0.0.1:<grpc port>).
//
// Usage: node bindings.mjs [--voice=URI]   It listens on free ports of 127.0.0.1 and prints
// "A2A_BINDING_PORTS=<rest> <grpc>" on stdout once both accept connections (for grpc, the HTTP
// port that serves its card and records). It exits when stdin closes.
//
// Routes (on each HTTP port):
//   GET  /.well-known/agent-card.json the card — the SDK
//   /rest/...                         HTTP+JSON 0.3 — the SDK (rest agent only)
//   GET  /debug/requests              every call seen, as peerRequest in peers_v1_test.go reads
//                                     it: the interface path, the 0.3 method (HTTP+JSON) or the
//                                     gRPC method, ids and headers
//   GET  /debug/cancels               task ids the executor was asked to cancel
//   GET  /debug/turns                 every user message as the executor was handed it
//
// Behaviours: as agent.mjs (stream, ask, reject, fail, slow, hangup, crash, other, and the
// voice extension with --voice=URI).

import express from 'express';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { grpcService, A2AService, UserBuilder as GrpcUserBuilder } from '@a2a-js/sdk/server/grpc';
import * as grpc from '@grpc/grpc-js';

import { voiceCard } from '../voice.mjs';
import { WeatherExecutor } from './executor.mjs';

const voice = process.argv.find((a) => a.startsWith('--voice='))?.slice('--voice='.length) ?? '';

function card(name, url, transport) {
  return {
    name,
    description: 'An agent on @a2a-js/sdk 0.3 for the a2a-connector interop tests, one binding only.',
    protocolVersion: '0.3.0',
    version: '1.0.0',
    url,
    preferredTransport: transport,
    capabilities: { streaming: true, pushNotifications: false, extensions: voiceCard({ uri: voice, required: false }) },
    securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'X-API-KEY' } },
    security: [{ apiKey: [] }],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'weather', name: 'Weather', description: 'Tells the weather.', tags: ['weather'] }],
  };
}

// restMethod is the 0.3 JSON-RPC method an HTTP+JSON path carries, so that the tests read one
// kind of record for every binding.
function restMethod(method, path) {
  if (path.endsWith('/message:send')) return 'message/send';
  if (path.endsWith('/message:stream')) return 'message/stream';
  if (path.endsWith(':cancel')) return 'tasks/cancel';
  if (path.endsWith(':subscribe')) return 'tasks/resubscribe';
  if (method === 'GET' && path.includes('/tasks/')) return 'tasks/get';
  return '';
}

function taskOfPath(path) {
  const m = /\/tasks\/([^/:]+)/.exec(path);
  return m ? decodeURIComponent(m[1]) : '';
}

function startHTTP(app) {
  return new Promise((resolve, reject) => {
    const server = app.listen(0, '127.0.0.1', () => resolve(server.address().port));
    server.on('error', reject);
  });
}

async function startREST() {
  const executor = new WeatherExecutor(voice);
  const agentCard = card('JS SDK 0.3 weather agent (HTTP+JSON)', '', 'HTTP+JSON');
  const requestHandler = new DefaultRequestHandler(agentCard, new InMemoryTaskStore(), executor);
  const requests = [];
  const app = express();
  app.use(express.json());
  app.use('/rest', (req, _res, next) => {
    const body = req.body ?? {};
    requests.push({
      path: '/rest',
      rpcMethod: restMethod(req.method, req.path),
      httpMethod: req.method,
      messageId: body.message?.messageId ?? '',
      taskId: body.message?.taskId || taskOfPath(req.path),
      contextId: body.message?.contextId ?? '',
      parts: (body.message?.content ?? []).length,
      blocking: body.configuration?.blocking ?? null,
      a2aVersion: req.get('a2a-version') ?? '',
      apiKey: req.get('x-api-key') ?? '',
      xExtensions: req.get('x-a2a-extensions') ?? '',
      accept: req.get('accept') ?? '',
      contentType: req.get('content-type') ?? '',
    });
    next();
  });
  app.get('/debug/requests', (_req, res) => res.json(requests));
  app.get('/debug/cancels', (_req, res) => res.json(executor.cancels));
  app.get('/debug/turns', (_req, res) => res.json(executor.turns));
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: requestHandler }));
  app.use('/rest', restHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
  const port = await startHTTP(app);
  agentCard.url = `http://127.0.0.1:${port}/rest`;
  return port;
}

async function startGRPC() {
  const executor = new WeatherExecutor(voice);
  const agentCard = card('JS SDK 0.3 weather agent (gRPC)', '', 'GRPC');
  const requestHandler = new DefaultRequestHandler(agentCard, new InMemoryTaskStore(), executor);
  const requests = [];
  const impl = grpcService({ requestHandler, userBuilder: GrpcUserBuilder.noAuthentication });
  const recorded = {};
  for (const [name, fn] of Object.entries(impl)) {
    const method = (A2AService[name]?.path ?? name).split('/').pop();
    recorded[name] = (call, ...rest) => {
      const r = call.request ?? {};
      const md = (k) => String(call.metadata.get(k)[0] ?? '');
      requests.push({
        path: '/',
        rpcMethod: method,
        messageId: r.request?.messageId ?? '',
        taskId: r.request?.taskId || (r.name ?? '').replace(/^tasks\//, ''),
        contextId: r.request?.contextId ?? '',
        parts: (r.request?.content ?? []).length,
        blocking: r.configuration ? r.configuration.blocking : null,
        a2aVersion: md('a2a-version'),
        apiKey: md('x-api-key'),
        xExtensions: md('x-a2a-extensions'),
        accept: '',
        contentType: md('content-type'),
      });
      return fn(call, ...rest);
    };
  }
  const server = new grpc.Server();
  server.addService(A2AService, recorded);
  const grpcPort = await new Promise((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => (err ? reject(err) : resolve(port)));
  });
  agentCard.url = `http://127.0.0.1:${grpcPort}`;
  const app = express();
  app.get('/debug/requests', (_req, res) => res.json(requests));
  app.get('/debug/cancels', (_req, res) => res.json(executor.cancels));
  app.get('/debug/turns', (_req, res) => res.json(executor.turns));
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: requestHandler }));
  return startHTTP(app);
}

try {
  const rest = await startREST();
  const grpcAgent = await startGRPC();
  console.log(`A2A_BINDING_PORTS=${rest} ${grpcAgent}`);
} catch (err) {
  console.error(`listen: ${err.message}`);
  process.exit(1);
}

// Never outlive the test process: it holds our stdin open.
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
process.on('SIGTERM', () => process.exit(0));
