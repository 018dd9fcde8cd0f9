// An A2A 0.3 agent built on the official JavaScript SDK (@a2a-js/sdk) and its Express
// middlewares, for the interop tests of internal/invoke (js_interop_test.go). Nobody on this
// project wrote the server side of the protocol here: only the executor below is ours.
//
// Usage: node agent.mjs [port]   (or PORT=...; 0 or nothing picks a free port)
// It listens on 127.0.0.1 only and prints "A2A_AGENT_PORT=<port>" on stdout once it accepts
// connections. It exits when stdin closes, so it never outlives the test process that started it.
//
// Routes:
//   POST /a2a                         JSON-RPC (message/send, message/stream, tasks/*) — the SDK
//   GET  /.well-known/agent-card.json the card — the SDK
//   GET  /debug/requests              every JSON-RPC POST seen (path, method, ids, headers)
//   GET  /debug/cancels               task ids the executor was asked to cancel, in order
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

import express from 'express';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { randomUUID } from 'node:crypto';

const CHUNKS = ['The weather ', 'is sunny ', 'all day.'];
const QUESTION = 'Which city?';
const REJECT_TEXT = 'I only talk about the weather.';
const FAIL_TEXT = 'The weather service is down.';
const SLOW_TICK_MS = 100;
const SLOW_TICKS = 40;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const now = () => new Date().toISOString();

function userText(message) {
  return (message?.parts ?? [])
    .filter((p) => p.kind === 'text')
    .map((p) => p.text)
    .join('');
}

function agentMessage(taskId, contextId, text) {
  return { kind: 'message', role: 'agent', messageId: randomUUID(), taskId, contextId, parts: [{ kind: 'text', text }] };
}

class WeatherExecutor {
  // Task ids of cancel requests, in order (served at /debug/cancels).
  cancels = [];
  canceled = new Set();
  // contextId of each task, so that cancelTask (which gets only the task id) can name it.
  contexts = new Map();

  async execute(requestContext, eventBus) {
    const { taskId, contextId, userMessage, task } = requestContext;
    const text = userText(userMessage).trim();
    this.contexts.set(taskId, contextId);
    const status = (state, message, final = false) =>
      eventBus.publish({
        kind: 'status-update',
        taskId,
        contextId,
        status: { state, timestamp: now(), ...(message ? { message: agentMessage(taskId, contextId, message) } : {}) },
        final,
      });
    const chunk = (artifactId, i, n, part) =>
      eventBus.publish({
        kind: 'artifact-update',
        taskId,
        contextId,
        artifact: { artifactId, name: 'answer', parts: [{ kind: 'text', text: part }] },
        append: i > 0,
        lastChunk: i === n - 1,
      });

    // The answer to our question continues the same task.
    if (task && task.status.state === 'input-required') {
      status('working');
      chunk(`${taskId}-answer`, 0, 1, `Weather in ${text}: sunny.`);
      status('completed', undefined, true);
      eventBus.finished();
      return;
    }

    const behaviour = text.split(/\s+/)[0].toLowerCase();
    if (behaviour === 'crash') {
      throw new Error('weather backend crashed');
    }
    if (!['stream', 'ask', 'reject', 'fail', 'slow', 'hangup'].includes(behaviour)) {
      eventBus.publish(agentMessage(undefined, contextId, 'Hello from the JS agent.'));
      eventBus.finished();
      return;
    }

    if (!task) {
      // The SDK stores a task only once it saw a Task event (its samples do the same).
      eventBus.publish({
        kind: 'task',
        id: taskId,
        contextId,
        status: { state: 'submitted', timestamp: now() },
        history: [userMessage],
      });
    }
    status('working');
    switch (behaviour) {
      case 'stream':
        CHUNKS.forEach((c, i) => chunk(`${taskId}-answer`, i, CHUNKS.length, c));
        status('completed', undefined, true);
        break;
      case 'ask':
        status('input-required', QUESTION, true);
        break;
      case 'reject':
        status('rejected', REJECT_TEXT, true);
        break;
      case 'fail':
        status('failed', FAIL_TEXT, true);
        break;
      case 'hangup':
        chunk(`${taskId}-answer`, 0, 2, 'partial ');
        break; // no final state
      case 'slow':
        for (let i = 0; i < SLOW_TICKS; i++) {
          await sleep(SLOW_TICK_MS);
          if (this.canceled.has(taskId)) {
            return; // cancelTask published the final state
          }
          chunk(`${taskId}-answer`, i, SLOW_TICKS, `tick ${i} `);
        }
        status('completed', undefined, true);
        break;
    }
    eventBus.finished();
  }

  cancelTask = async (taskId, eventBus) => {
    this.cancels.push(taskId);
    this.canceled.add(taskId);
    console.log(`canceled ${taskId}`);
    const contextId = this.contexts.get(taskId);
    eventBus.publish({
      kind: 'status-update',
      taskId,
      contextId,
      status: { state: 'canceled', timestamp: now(), message: agentMessage(taskId, contextId, 'Canceled.') },
      final: true,
    });
    eventBus.finished();
  };
}

const card = {
  name: 'JS SDK weather agent',
  description: 'An agent on @a2a-js/sdk for the a2a-connector interop tests.',
  protocolVersion: '0.3.0',
  version: '1.0.0',
  url: 'http://127.0.0.1:0/a2a', // set once the port is known
  preferredTransport: 'JSONRPC',
  capabilities: { streaming: true, pushNotifications: false },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 'weather', name: 'Weather', description: 'Tells the weather.', tags: ['weather'] }],
};

const executor = new WeatherExecutor();
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
app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: requestHandler }));
app.use('/a2a', jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));

const port = Number(process.argv[2] ?? process.env.PORT ?? 0);
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
