// Two A2A agents built on the official JavaScript SDK at protocol 1.0 (@a2a-js/sdk 1.3.0) and its
// Express middlewares, for the interop tests of internal/invoke (js_v1_interop_test.go). Nobody
// on this project wrote the server side of the protocol here: only the executor below is ours.
//
//   v1only  a 1.0-only agent, as the SDK's quickstart builds it: its card lists one JSONRPC 1.0
//           interface; a request without `A2A-Version: 1.0` is refused (-32009).
//   dual    the same agent with `legacyCompat: {enabled: true}` on the JSON-RPC and card
//           handlers (per the SDK's v0.3 compatibility guide): requests with `A2A-Version: 1.0`
//           speak 1.0, requests with 0.3 or no header speak 0.3, on the same URL; its card lists
//           a JSONRPC 1.0 and a JSONRPC 0.3 interface.
//   rest    the same agent served over HTTP+JSON only (the SDK's restHandler at /rest): its card
//           lists one HTTP+JSON 1.0 interface, as Google's hosted agents do.
//   grpc    the same agent served over gRPC only (the SDK's grpcService on @grpc/grpc-js, on a
//           port of its own, plaintext): its card (on the HTTP port) lists one GRPC 1.0
//           interface, http://127.0.0.1:<grpc port>.
//
// Usage: node agent.mjs [--voice=URI [--voice-required]]   It listens on free ports of 127.0.0.1 and prints
// "A2A_AGENT_PORTS=<v1only> <dual> <rest> <grpc>" on stdout once all accept connections (the
// grpc agent's HTTP port, which serves its card and /debug/requests). It exits when stdin
// closes, so it never outlives the test process that started it.
//
// Routes (on each port):
//   POST /a2a                         JSON-RPC — the SDK
//   /rest/...                         HTTP+JSON (message:send, message:stream, tasks/...) — the SDK
//   GET  /.well-known/agent-card.json the card — the SDK
//   GET  /debug/requests              every POST seen (path, JSON-RPC method, ids, headers)
//   GET  /debug/turns                 every user message as the executor was handed it (sdkagent.Turn JSON)
//
// The behaviour is chosen by the first word of the user's text:
//   stream  a Task (submitted), working, three artifact chunks (append), completed
//   ask     a Task, working, input-required with a question. The next message on that taskId is
//           answered the way the SDK requires of executors (the first event of every execution
//           must be a Task or a Message, follow-ups included): the stored Task first — still
//           input-required, with the old question — then working, the answer
//           "Weather in <text>: sunny." as an artifact, completed.
//   reject  a Task, rejected with a status message
//   other   a direct Message reply (no task)
//
// With --voice=URI every agent also implements the platform's voice extension under that URI
// (--voice-required lists it with required: true): ../voice.mjs says what it answers, and how it
// reads the activation through the SDK's own API (requestContext.context.requestedExtensions,
// addActivatedExtension).

import express from 'express';
import { Role, TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { grpcService, A2AService } from '@a2a-js/sdk/server/grpc';
import * as grpc from '@grpc/grpc-js';
import { randomUUID } from 'node:crypto';

import { decideVoice, readVoice, TERMS_CHUNKS, voiceCard } from '../voice.mjs';

const CHUNKS = ['The weather ', 'is sunny ', 'all day.'];
const QUESTION = 'Which city?';
const REJECT_TEXT = 'I only talk about the weather.';

const now = () => new Date().toISOString();

const textPart = (text) => ({ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' });

function userText(message) {
  return (message?.parts ?? [])
    .filter((p) => p.content?.$case === 'text')
    .map((p) => p.content.value)
    .join('');
}

function agentMessage(taskId, contextId, text, metadata) {
  return {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [textPart(text)],
    metadata,
    extensions: [],
    referenceTaskIds: [],
  };
}

// seenParts is how the executor was handed the message's parts.
const seenParts = (message) =>
  (message?.parts ?? []).map((p) => {
    switch (p.content?.$case) {
      case 'text':
        return { kind: 'text', text: p.content.value };
      case 'data':
        return { kind: 'data', data: p.content.value };
      default:
        return { kind: 'file' };
    }
  });

const FINAL_STATES = {
  complete: TaskState.TASK_STATE_COMPLETED,
  ask: TaskState.TASK_STATE_INPUT_REQUIRED,
  reject: TaskState.TASK_STATE_REJECTED,
};

class WeatherExecutor {
  // voice is the extension URI ('' for none); turns records every user message (/debug/turns).
  constructor(voice, turns) {
    this.voice = voice;
    this.turns = turns;
  }

  // record notes the user message and reads the voice extension: the activation from the SDK's
  // call context (requestedExtensions, already limited to the URIs the card declares), the keys
  // from the message's metadata.
  record(requestContext) {
    const { userMessage } = requestContext;
    const requested = [...(requestContext.context?.requestedExtensions ?? [])];
    const voice = readVoice(this.voice, userMessage?.metadata);
    if (this.voice && requested.includes(this.voice)) {
      requestContext.context.addActivatedExtension(this.voice);
      voice.active = true;
    }
    this.turns.push({
      messageId: userMessage?.messageId ?? '',
      taskId: userMessage?.taskId ?? '',
      parts: seenParts(userMessage),
      requested,
      metadata: userMessage?.metadata ?? null,
      voice,
    });
    return voice;
  }

  async execute(requestContext, eventBus) {
    const { taskId, contextId, userMessage, task } = requestContext;
    const text = userText(userMessage).trim();
    const behaviour = text.split(/\s+/)[0].toLowerCase();
    const reply = decideVoice(this.record(requestContext), behaviour);
    const meta = reply.key ? { [`${this.voice}/${reply.key}`]: reply.value } : undefined;
    const status = (state, message) =>
      eventBus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: { state, timestamp: now(), message: message ? agentMessage(taskId, contextId, message, meta) : undefined },
          metadata: undefined,
        })
      );
    const chunk = (artifactId, i, n, part) =>
      eventBus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: { artifactId, name: 'answer', description: '', parts: [textPart(part)], metadata: undefined, extensions: [] },
          append: i > 0,
          lastChunk: i === n - 1,
          metadata: undefined,
        })
      );

    // The answer to our question continues the same task. The SDK wants a Task or a Message as
    // the first event of every execution: the stored task, as it stands.
    if (!reply.act && task && task.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED) {
      eventBus.publish(AgentEvent.task(task));
      status(TaskState.TASK_STATE_WORKING);
      chunk(`${taskId}-answer`, 0, 1, `Weather in ${text}: sunny.`);
      status(TaskState.TASK_STATE_COMPLETED);
      return;
    }

    if (!reply.act && !['stream', 'ask', 'reject'].includes(behaviour)) {
      eventBus.publish(AgentEvent.message(agentMessage(undefined, contextId, 'Hello from the JS agent.')));
      return;
    }
    if (task) {
      // A voice reply on the open task (DTMF or silence after our question) starts, as any
      // execution must, with the stored task.
      eventBus.publish(AgentEvent.task(task));
    } else {
      eventBus.publish(
        AgentEvent.task({
          id: taskId,
          contextId,
          status: { state: TaskState.TASK_STATE_SUBMITTED, timestamp: now(), message: undefined },
          artifacts: [],
          history: [userMessage],
          metadata: undefined,
        })
      );
    }
    if (reply.act === 'terms') {
      // The speech policy rides on the reply's first status update.
      status(TaskState.TASK_STATE_WORKING, reply.text);
      TERMS_CHUNKS.forEach((c, i) => chunk(`${taskId}-terms`, i, TERMS_CHUNKS.length, c));
      status(TaskState.TASK_STATE_COMPLETED);
      return;
    }
    status(TaskState.TASK_STATE_WORKING);
    if (reply.act) {
      status(FINAL_STATES[reply.act], reply.text);
      return;
    }
    switch (behaviour) {
      case 'stream':
        CHUNKS.forEach((c, i) => chunk(`${taskId}-answer`, i, CHUNKS.length, c));
        status(TaskState.TASK_STATE_COMPLETED);
        break;
      case 'ask':
        status(TaskState.TASK_STATE_INPUT_REQUIRED, QUESTION);
        break;
      case 'reject':
        status(TaskState.TASK_STATE_REJECTED, REJECT_TEXT);
        break;
    }
  }

  cancelTask = async (taskId, eventBus) => {
    eventBus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId: '',
        status: { state: TaskState.TASK_STATE_CANCELED, timestamp: now(), message: undefined },
        metadata: undefined,
      })
    );
  };
}

function card(name, interfaces, voice) {
  return {
    name,
    description: 'An agent on @a2a-js/sdk 1.x for the a2a-connector interop tests.',
    supportedInterfaces: interfaces,
    provider: undefined,
    version: '1.0.0',
    documentationUrl: '',
    capabilities: { streaming: true, pushNotifications: false, extensions: voiceCard(voice), extendedAgentCard: false },
    securitySchemes: {
      apiKey: { scheme: { $case: 'apiKeySecurityScheme', value: { description: '', location: 'header', name: 'X-API-KEY' } } },
    },
    securityRequirements: [{ schemes: { apiKey: { list: [] } } }],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: 'weather',
        name: 'Weather',
        description: 'Tells the weather.',
        tags: ['weather'],
        examples: [],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
  };
}

// start serves one agent on a free port and resolves to that port once it listens. versions are
// the interfaces its card lists, in order: JSONRPC ones at /a2a, or (rest) one HTTP+JSON at /rest.
function start(name, versions, legacy, rest, withGrpc) {
  const agentCard = card(name, [], VOICE);
  const turns = [];
  const requestHandler = new DefaultRequestHandler(agentCard, new InMemoryTaskStore(), new WeatherExecutor(VOICE.uri, turns));
  const requests = [];
  const app = express();
  app.use(express.json());
  app.use((req, _res, next) => {
    if (req.method === 'POST') {
      // JSON-RPC carries the request in params; HTTP+JSON is the request itself.
      const params = req.body?.params ?? req.body ?? {};
      requests.push({
        path: req.path,
        rpcMethod: req.body?.method ?? '',
        messageId: params.message?.messageId ?? '',
        taskId: params.message?.taskId ?? params.id ?? '',
        contextId: params.message?.contextId ?? '',
        tenant: params.tenant ?? '',
        a2aVersion: req.get('a2a-version') ?? '',
        apiKey: req.get('x-api-key') ?? '',
        extensions: req.get('a2a-extensions') ?? '',
        xExtensions: req.get('x-a2a-extensions') ?? '',
        accept: req.get('accept') ?? '',
        contentType: req.get('content-type') ?? '',
      });
    }
    next();
  });
  app.get('/debug/requests', (_req, res) => res.json(requests));
  app.get('/debug/turns', (_req, res) => res.json(turns));
  const compat = legacy ? { legacyCompat: { enabled: true } } : {};
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: requestHandler, ...compat }));
  app.use('/a2a', jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication, ...compat }));
  app.use('/rest', restHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
  if (withGrpc) {
    return startGrpc(requestHandler, requests).then((grpcPort) => new Promise((resolve, reject) => {
      const server = app.listen(0, '127.0.0.1', () => {
        agentCard.supportedInterfaces = [{ url: `http://127.0.0.1:${grpcPort}`, protocolBinding: 'GRPC', tenant: '', protocolVersion: '1.0' }];
        resolve(server.address().port);
      });
      server.on('error', reject);
    }));
  }
  return new Promise((resolve, reject) => {
    const server = app.listen(0, '127.0.0.1', () => {
      const port = server.address().port;
      const url = `http://127.0.0.1:${port}/${rest ? 'rest' : 'a2a'}`;
      const protocolBinding = rest ? 'HTTP+JSON' : 'JSONRPC';
      agentCard.supportedInterfaces = versions.map((protocolVersion) => ({ url, protocolBinding, tenant: '', protocolVersion }));
      resolve(port);
    });
    server.on('error', reject);
  });
}

// startGrpc serves the SDK's grpcService on a free port, recording every call the way the HTTP
// middleware records POSTs, and resolves to the port.
function startGrpc(requestHandler, requests) {
  const impl = grpcService({ requestHandler, userBuilder: UserBuilder.noAuthentication });
  const recorded = {};
  for (const [name, fn] of Object.entries(impl)) {
    const method = (A2AService[name]?.path ?? name).split('/').pop();
    recorded[name] = (call, ...rest) => {
      const r = call.request ?? {};
      const md = (k) => String(call.metadata.get(k)[0] ?? '');
      requests.push({
        path: '/',
        rpcMethod: method,
        messageId: r.message?.messageId ?? '',
        taskId: r.message?.taskId || r.id || '',
        contextId: r.message?.contextId ?? '',
        tenant: r.tenant ?? '',
        a2aVersion: md('a2a-version'),
        apiKey: md('x-api-key'),
        extensions: md('a2a-extensions'),
        xExtensions: md('x-a2a-extensions'),
        accept: '',
        contentType: md('content-type'),
      });
      return fn(call, ...rest);
    };
  }
  const server = new grpc.Server();
  server.addService(A2AService, recorded);
  return new Promise((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => (err ? reject(err) : resolve(port)));
  });
}

// VOICE is the voice extension the agents implement (--voice=URI; uri '' for none).
const VOICE = {
  uri: process.argv.find((a) => a.startsWith('--voice='))?.slice('--voice='.length) ?? '',
  required: process.argv.includes('--voice-required'),
};

try {
  const v1only = await start('JS SDK 1.x weather agent (1.0 only)', ['1.0'], false);
  const dual = await start('JS SDK 1.x weather agent (1.0 and 0.3)', ['1.0', '0.3'], true);
  const rest = await start('JS SDK 1.x weather agent (HTTP+JSON)', ['1.0'], false, true);
  const grpcAgent = await start('JS SDK 1.x weather agent (gRPC)', ['1.0'], false, false, true);
  console.log(`A2A_AGENT_PORTS=${v1only} ${dual} ${rest} ${grpcAgent}`);
} catch (err) {
  console.error(`listen: ${err.message}`);
  process.exit(1);
}

// Never outlive the test process: it holds our stdin open.
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
process.on('SIGTERM', () => process.exit(0));
