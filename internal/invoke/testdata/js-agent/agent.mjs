// An A2A 0.3 agent built on the official JavaScript SDK (@a2a-js/sdk) and its Express
// middlewares, for the interop tests of internal/invoke (js_interop_test.go). Nobody on this
// project wrote the server side of the protocol here: only the executor below is ours.
//
// Usage: node agent.mjs [port] [--voice=URI]   (or PORT=...; 0 or nothing picks a free port)
// It listens on 127.0.0.1 only and prints "A2A_AGENT_PORT=<port>" on stdout once it accepts
// connections. It exits when stdin closes, so it never outlives the test process that started it.
//
// Routes:
//   POST /a2a                         JSON-RPC (message/send, message/stream, tasks/*) — the SDK
//   GET  /.well-known/agent-card.json the card — the SDK
//   GET  /debug/requests              every JSON-RPC POST seen (path, method, ids, headers)
//   GET  /debug/cancels               task ids the executor was asked to cancel, in order
//   GET  /debug/turns                 every user message as the executor was handed it
//                                     (sdkagent.Turn JSON)
//
// The behaviour is chosen by the first word of the user's text:
//   stream  a Task (submitted), working, three artifact chunks (append), completed (final)
//   ask     a Task, working, input-required with a question; the next message on that taskId
//           completes it with "Weather in <text>: sunny."
//   reject  rejected (final) with a status message
//   fail    failed (final) with a status message
//   slow    a Task, working, then a chunk every SLOW_TICK_MS until canceled (tasks/cancel) or
//           SLOW_TICKS chunks were sent, then completed
//   hangup  a Task, working, one chunk ("partial "), then the executor finishes without a final
//           state: the SDK ends the stream, and tasks/resubscribe finds no live execution
//   crash   the executor throws; the SDK reports the failure itself
//   other   a direct Message reply (no task)
//
// With --voice=URI the card declares the platform's voice extension under that URI and the
// executor implements it (../voice.mjs), reading the activation through the SDK's call context.

import express from 'express';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';

import { voiceCard } from '../voice.mjs';
import { WeatherExecutor } from './executor.mjs';

const args = process.argv.slice(2);
const voice = args.find((a) => a.startsWith('--voice='))?.slice('--voice='.length) ?? '';
const portArg = args.find((a) => !a.startsWith('--'));

const card = {
  name: 'JS SDK weather agent',
  description: 'An agent on @a2a-js/sdk for the a2a-connector interop tests.',
  protocolVersion: '0.3.0',
  version: '1.0.0',
  url: 'http://127.0.0.1:0/a2a', // set once the port is known
  preferredTransport: 'JSONRPC',
  capabilities: { streaming: true, pushNotifications: false, extensions: voiceCard({ uri: voice, required: false }) },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 'weather', name: 'Weather', description: 'Tells the weather.', tags: ['weather'] }],
};

const executor = new WeatherExecutor(voice);
const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);

const requests = [];
const app = express();
app.use(express.json());
app.use((req, _res, next) => {
  if (req.method === 'POST') {
    const params = req.body?.params ?? {};
    requests.push({
      path: req.path,
      rpcMethod: req.body?.method ?? '',
      messageId: params.message?.messageId ?? '',
      taskId: params.message?.taskId ?? params.id ?? '',
      contextId: params.message?.contextId ?? '',
      apiKey: req.get('x-api-key') ?? '',
      accept: req.get('accept') ?? '',
      contentType: req.get('content-type') ?? '',
    });
  }
  next();
});
app.get('/debug/requests', (_req, res) => res.json(requests));
app.get('/debug/cancels', (_req, res) => res.json(executor.cancels));
app.get('/debug/turns', (_req, res) => res.json(executor.turns));
app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: requestHandler }));
app.use('/a2a', jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));

const port = Number(portArg ?? process.env.PORT ?? 0);
const server = app.listen(port, '127.0.0.1', (err) => {
  if (err) {
    console.error(`listen: ${err.message}`);
    process.exit(1);
  }
  const actual = server.address().port;
  card.url = `http://127.0.0.1:${actual}/a2a`;
  console.log(`A2A_AGENT_PORT=${actual}`);
});

// Never outlive the test process: it holds our stdin open.
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
process.on('SIGTERM', () => process.exit(0));
