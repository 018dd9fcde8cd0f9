// The weather agent's executor, shared by agent.mjs (JSON-RPC) and bindings.mjs (HTTP+JSON and
// gRPC): the same behaviours and words on every binding.

import { randomUUID } from 'node:crypto';

import { decideVoice, readVoice, TERMS_CHUNKS } from '../voice.mjs';

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

function agentMessage(taskId, contextId, text, metadata) {
  return { kind: 'message', role: 'agent', messageId: randomUUID(), taskId, contextId, parts: [{ kind: 'text', text }], ...(metadata ? { metadata } : {}) };
}

// seenParts is how the executor was handed the message's parts.
const seenParts = (message) =>
  (message?.parts ?? []).map((p) => {
    switch (p.kind) {
      case 'text':
        return { kind: 'text', text: p.text };
      case 'data':
        return { kind: 'data', data: p.data };
      default:
        return { kind: 'file' };
    }
  });

const FINAL_STATES = { complete: 'completed', ask: 'input-required', reject: 'rejected' };

export class WeatherExecutor {
  // voice is the voice extension's URI ('' for none: ../voice.mjs); turns records every user
  // message as the executor was handed it (GET /debug/turns).
  constructor(voice = '') {
    this.voice = voice;
    this.turns = [];
  }

  // record notes the user message and reads the voice extension: the activation from the SDK's
  // call context (requestedExtensions, limited to the URIs the card declares), the keys from the
  // message's metadata.
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

  // Task ids of cancel requests, in order (served at /debug/cancels).
  cancels = [];
  canceled = new Set();
  // contextId of each task, so that cancelTask (which gets only the task id) can name it.
  contexts = new Map();

  async execute(requestContext, eventBus) {
    const { taskId, contextId, userMessage, task } = requestContext;
    const text = userText(userMessage).trim();
    const behaviour = text.split(/\s+/)[0].toLowerCase();
    const reply = decideVoice(this.record(requestContext), behaviour);
    const meta = reply.key ? { [`${this.voice}/${reply.key}`]: reply.value } : undefined;
    this.contexts.set(taskId, contextId);
    const status = (state, message, final = false) =>
      eventBus.publish({
        kind: 'status-update',
        taskId,
        contextId,
        status: { state, timestamp: now(), ...(message ? { message: agentMessage(taskId, contextId, message, meta) } : {}) },
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
    if (!reply.act && task && task.status.state === 'input-required') {
      status('working');
      chunk(`${taskId}-answer`, 0, 1, `Weather in ${text}: sunny.`);
      status('completed', undefined, true);
      eventBus.finished();
      return;
    }

    if (reply.act) {
      this.answerVoice(reply, task, requestContext, status, chunk, eventBus);
      return;
    }
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

  // answerVoice sends the voice reply (../voice.mjs) on a new task or the open one.
  answerVoice(reply, task, { taskId, contextId, userMessage }, status, chunk, eventBus) {
    if (!task) {
      eventBus.publish({ kind: 'task', id: taskId, contextId, status: { state: 'submitted', timestamp: now() }, history: [userMessage] });
    }
    if (reply.act === 'terms') {
      // The speech policy rides on the reply's first status update.
      status('working', reply.text);
      TERMS_CHUNKS.forEach((c, i) => chunk(`${taskId}-terms`, i, TERMS_CHUNKS.length, c));
      status('completed', undefined, true);
    } else {
      status('working');
      status(FINAL_STATES[reply.act], reply.text, true);
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
