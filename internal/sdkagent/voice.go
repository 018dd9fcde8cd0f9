package sdkagent

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
)

// The platform's voice extension, as an agent on the SDK implements it (Options.Voice,
// OptionsV03.Voice). The agent reads the activation through its SDK's own API
// (a2asrv.ExtensionsFrom(ctx).Requested, then Activate) and the user message's metadata keys
// <URI>/input, <URI>/interruption and <URI>/channel. While the extension is active it answers:
//
//	input kind "dtmf"     completed, status message PINReceived, <URI>/finish FinishPIN
//	input kind "noInput"  input-required, status message Reprompt (the task stays open)
//	text "pin"            input-required, status message PINPrompt, <URI>/expect ExpectPIN
//	text "human"          completed, status message Escalated, <URI>/finish FinishHuman
//	text "bye"            rejected, status message Goodbye, <URI>/finish FinishBye
//	text "terms"          working with status message TermsIntro and <URI>/speech SpeechTerms,
//	                      then TermsChunks() as one artifact, completed
//
// DTMF and silence come first (they answer a "pin" question on the same task); the words are
// the first word of the message's text. Anything else, and everything while the extension is
// not active, is the weather agent's usual answer.

// What the voice agent says.
const (
	PINPrompt   = "Please type your PIN."
	PINReceived = "PIN received."
	Reprompt    = "Sorry, I did not hear you. Which city?"
	Escalated   = "Connecting you to a human."
	Goodbye     = "Goodbye."
	TermsIntro  = "Please listen to our terms."
)

// TermsChunks returns the artifact chunks of the "terms" reply, in order.
func TermsChunks() []string { return []string{"Our terms: ", "no refunds, ", "no returns."} }

// The values the voice agent writes under <URI>/expect, <URI>/finish and <URI>/speech, as JSON
// objects (tests compare them with what the connector reads back).
const (
	ExpectPIN   = `{"input":["dtmf"],"dtmf":{"maxDigits":4,"endKey":"#","timeoutMs":5000},"noInputTimeoutMs":4000}`
	FinishPIN   = `{"type":"complete","reason":"pin received"}`
	FinishHuman = `{"type":"escalate","reason":"asked for a human","summary":"The caller asked for a human agent."}`
	FinishBye   = `{"type":"endConversation"}`
	SpeechTerms = `{"bargeIn":false}`
)

// VoiceInput is <URI>/input as the agent read it.
type VoiceInput struct {
	Kind      string     `json:"kind"`
	DTMF      *VoiceDTMF `json:"dtmf,omitempty"`
	SilenceMs int        `json:"silenceMs,omitempty"`
}

// VoiceDTMF is the dtmf member of <URI>/input.
type VoiceDTMF struct {
	Digits      string `json:"digits"`
	Termination string `json:"termination"`
}

// VoiceInterruption is <URI>/interruption as the agent read it.
type VoiceInterruption struct {
	MessageID string `json:"messageId"`
	HeardText string `json:"heardText"`
}

// VoiceChannel is <URI>/channel as the agent read it.
type VoiceChannel struct {
	Kind   string `json:"kind"`
	Locale string `json:"locale"`
}

// VoiceTurn is the voice side of one user message as the executor saw it.
type VoiceTurn struct {
	// Active is true when the agent declares the extension and the SDK reported it requested
	// by the client (its Requested API); the agent then activated it (Activate) and acted on
	// the keys below. Without the activation the keys are still recorded, and ignored.
	Active bool
	// Keys are the message metadata keys under the extension's URI ("<URI>/input", ...),
	// sorted; nil when none arrived.
	Keys []string
	// Input, Interruption and Channel are the keys' values; nil when absent (or not the JSON
	// object the extension defines: Keys still lists them).
	Input        *VoiceInput
	Interruption *VoiceInterruption
	Channel      *VoiceChannel
}

// Turn is one user message as the SDK handed it to the agent's executor.
type Turn struct {
	// MessageID and TaskID are the message's ids (TaskID "" for a message that starts a task).
	MessageID, TaskID string
	// Parts are the message's parts as the SDK decoded them.
	Parts []SeenPart
	// Requested are the extension URIs the SDK reports the client requested
	// (a2asrv.ExtensionsFrom(ctx).RequestedURIs(): header values as sent, unsplit; the JS test
	// agents' records, decoded into a Turn, hold @a2a-js's requestedExtensions, which keeps
	// only URIs the card declares).
	Requested []string
	// Metadata is the message's metadata (nil when it had none).
	Metadata map[string]any
	// Voice is what the message said in the voice extension's terms (zero without Voice).
	Voice VoiceTurn
}

// SeenPart is one part of a received message: its kind ("text", "data", "file") and, for text,
// its text; for data, its value.
type SeenPart struct {
	Kind string
	Text string
	Data any
}

// turns records what the executor was handed, for tests (Server.Turns and friends).
type turns struct {
	mu       sync.Mutex
	all      []Turn
	canceled []string // task ids
}

func (r *turns) cancel(taskID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.canceled = append(r.canceled, taskID)
}

func (r *turns) wasCanceled(taskID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.canceled, taskID)
}

func (r *turns) add(t Turn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, t)
}

func (r *turns) list() []Turn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.all)
}

func (r *turns) byMessage(id string) (Turn, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.all) - 1; i >= 0; i-- {
		if r.all[i].MessageID == id {
			return r.all[i], true
		}
	}
	return Turn{}, false
}

func (r *turns) last() (Turn, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.all) == 0 {
		return Turn{}, false
	}
	return r.all[len(r.all)-1], true
}

func (r *turns) lastVoice() (VoiceTurn, bool) {
	t, ok := r.last()
	return t.Voice, ok
}

// readVoice reads the extension's keys of metadata; uri "" reads none.
func readVoice(uri string, metadata map[string]any) VoiceTurn {
	var v VoiceTurn
	if uri == "" {
		return v
	}
	for k := range metadata {
		if strings.HasPrefix(k, uri+"/") {
			v.Keys = append(v.Keys, k)
		}
	}
	slices.Sort(v.Keys)
	v.Input = metaObject[VoiceInput](metadata, uri+"/input")
	v.Interruption = metaObject[VoiceInterruption](metadata, uri+"/interruption")
	v.Channel = metaObject[VoiceChannel](metadata, uri+"/channel")
	return v
}

// metaObject decodes metadata[key] (a JSON object as the SDK decoded it) into a T; nil when it
// is absent or no such object.
func metaObject[T any](metadata map[string]any, key string) *T {
	raw, ok := metadata[key]
	if !ok {
		return nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return nil
	}
	return &v
}

// metaValue decodes one of the JSON constants above into the map an SDK's SetMeta takes (the
// numbers become float64, which every binding's metadata Struct carries).
func metaValue(j string) map[string]any {
	var v map[string]any
	if err := json.Unmarshal([]byte(j), &v); err != nil {
		panic("sdkagent: bad metadata constant " + j + ": " + err.Error())
	}
	return v
}

// voiceAct is what the voice agent does with a turn.
type voiceAct uint8

const (
	voiceNone voiceAct = iota // the weather agent's usual answer
	voiceComplete
	voiceAsk
	voiceReject
	voiceTerms
)

// voiceReply is the decided answer: the act, the status message's text, and the metadata key
// (under the URI) and value that go on the message.
type voiceReply struct {
	act   voiceAct
	text  string
	key   string
	value string
}

// decideVoice chooses the answer to a turn while the extension is active; first is the
// message's first word.
func decideVoice(v VoiceTurn, first string) voiceReply {
	if !v.Active {
		return voiceReply{}
	}
	if v.Input != nil {
		switch v.Input.Kind {
		case "dtmf":
			return voiceReply{voiceComplete, PINReceived, "finish", FinishPIN}
		case "noInput":
			return voiceReply{act: voiceAsk, text: Reprompt}
		}
	}
	switch strings.ToLower(first) {
	case "pin":
		return voiceReply{voiceAsk, PINPrompt, "expect", ExpectPIN}
	case "human":
		return voiceReply{voiceComplete, Escalated, "finish", FinishHuman}
	case "bye":
		return voiceReply{voiceReject, Goodbye, "finish", FinishBye}
	case "terms":
		return voiceReply{voiceTerms, TermsIntro, "speech", SpeechTerms}
	}
	return voiceReply{}
}
