// The platform's voice extension as the JS test agents implement it (js-agent-v1/agent.mjs on
// @a2a-js/sdk 1.x, js-agent/executor.mjs on 0.3): the same answers as internal/sdkagent's Go
// agents (its voice.go), so that every peer of the connector's voice tests behaves alike. Plain
// JavaScript without imports, shared by both packages; the executors read the activation
// through their SDK (requestContext.context.requestedExtensions, addActivatedExtension) and
// hand it here with the message's metadata.
//
// While the extension is active the agents answer:
//   input kind "dtmf"     completed, status message PIN_RECEIVED, <URI>/finish FINISH_PIN
//   input kind "noInput"  input-required, status message REPROMPT (the task stays open)
//   text "pin"            input-required, status message PIN_PROMPT, <URI>/expect EXPECT_PIN
//   text "human"          completed, status message ESCALATED, <URI>/finish FINISH_HUMAN
//   text "bye"            rejected, status message GOODBYE, <URI>/finish FINISH_BYE
//   text "terms"          working with status message TERMS_INTRO and <URI>/speech SPEECH_TERMS,
//                         then TERMS_CHUNKS as one artifact, completed
// DTMF and silence come first; the words are the message's first word. Anything else, and
// everything while the extension is not active, is the agent's usual answer.

export const PIN_PROMPT = 'Please type your PIN.';
export const PIN_RECEIVED = 'PIN received.';
export const REPROMPT = 'Sorry, I did not hear you. Which city?';
export const ESCALATED = 'Connecting you to a human.';
export const GOODBYE = 'Goodbye.';
export const TERMS_INTRO = 'Please listen to our terms.';
export const TERMS_CHUNKS = ['Our terms: ', 'no refunds, ', 'no returns.'];

export const EXPECT_PIN = { input: ['dtmf'], dtmf: { maxDigits: 4, endKey: '#', timeoutMs: 5000 }, noInputTimeoutMs: 4000 };
export const FINISH_PIN = { type: 'complete', reason: 'pin received' };
export const FINISH_HUMAN = { type: 'escalate', reason: 'asked for a human', summary: 'The caller asked for a human agent.' };
export const FINISH_BYE = { type: 'endConversation' };
export const SPEECH_TERMS = { bargeIn: false };

// voiceCard is the card's capabilities.extensions for voice ({uri, required}; uri '' for none).
export function voiceCard(voice) {
  if (!voice.uri) {
    return [];
  }
  return [
    {
      uri: voice.uri,
      description: 'Voice turns: what the caller heard, DTMF, silence, how the agent ends its part.',
      required: voice.required,
    },
  ];
}

const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);

// readVoice reads the extension's keys of a message's metadata (uri '' reads none). The result is
// recorded as is (GET /debug/turns) and decodes into sdkagent.VoiceTurn; active is set by the
// executor once its SDK reported the activation.
export function readVoice(uri, metadata) {
  const voice = { active: false, keys: null, input: null, interruption: null, channel: null };
  if (!uri || !isObject(metadata)) {
    return voice;
  }
  const keys = Object.keys(metadata).filter((k) => k.startsWith(`${uri}/`)).sort();
  voice.keys = keys.length ? keys : null;
  for (const name of ['input', 'interruption', 'channel']) {
    const v = metadata[`${uri}/${name}`];
    voice[name] = isObject(v) ? v : null;
  }
  return voice;
}

// decideVoice chooses the answer while the extension is active: {act, text, key, value}, act one of
// 'complete', 'ask', 'reject', 'terms', or '' for the agent's usual answer; key (under the URI) and
// value go on the status message's metadata. first is the message's first word, lowercased.
export function decideVoice(voice, first) {
  if (!voice.active) {
    return { act: '' };
  }
  switch (voice.input?.kind) {
    case 'dtmf':
      return { act: 'complete', text: PIN_RECEIVED, key: 'finish', value: FINISH_PIN };
    case 'noInput':
      return { act: 'ask', text: REPROMPT };
  }
  switch (first) {
    case 'pin':
      return { act: 'ask', text: PIN_PROMPT, key: 'expect', value: EXPECT_PIN };
    case 'human':
      return { act: 'complete', text: ESCALATED, key: 'finish', value: FINISH_HUMAN };
    case 'bye':
      return { act: 'reject', text: GOODBYE, key: 'finish', value: FINISH_BYE };
    case 'terms':
      return { act: 'terms', text: TERMS_INTRO, key: 'speech', value: SPEECH_TERMS };
  }
  return { act: '' };
}
