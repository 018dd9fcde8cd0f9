package connector

import (
	"errors"
	"slices"
	"time"
)

// The platform's voice extension (docs/voice-extension.md): what a call adds to a line of text.
// The dialog engine says how the caller answered (speech or typed text, DTMF digits, silence),
// what the caller heard of an interrupted reply and on which channel; an agent that declares the
// extension learns all of it in its message's metadata, and says how it ends its part, how the
// next input should be collected and whether its reply may be interrupted.

// VoiceExtensionURI is the voice extension's default URI (A2AC_VOICE_EXTENSION overrides it).
const VoiceExtensionURI = "urn:a2a-connector:voice:v1"

// ErrNoInputUnsupported: a no-input turn is for an agent that does not declare the voice
// extension, so it cannot be told; nothing was sent, and the engine reprompts the caller itself.
var ErrNoInputUnsupported = errors.New("the agent does not declare the voice extension, so a no-input turn cannot be sent to it")

// InputKind is how the caller answered, as the voice extension names it to the agent.
type InputKind string

// Input kinds.
const (
	InputSpeech  InputKind = "speech"  // text recognised from speech (a turn on a voice channel)
	InputText    InputKind = "text"    // typed text, or text on a channel that is not voice
	InputDTMF    InputKind = "dtmf"    // keypad digits
	InputNoInput InputKind = "noInput" // the caller said nothing
)

// DTMFTermination is how the collection of DTMF digits ended.
type DTMFTermination string

// DTMF terminations, in the extension's spelling.
const (
	DTMFEndKey    DTMFTermination = "endKey"    // the caller pressed the end key
	DTMFTimeout   DTMFTermination = "timeout"   // the caller stopped pressing keys
	DTMFMaxDigits DTMFTermination = "maxDigits" // the caller pressed as many keys as asked
)

// DTMF is a turn whose input is keypad digits.
type DTMF struct {
	// Digits are the keys pressed, end key excluded: 0-9, *, #, A-D.
	Digits      string
	Termination DTMFTermination
}

// NoInput is a turn on which the caller said nothing.
type NoInput struct {
	// Silence is how long the engine waited.
	Silence time.Duration
}

// Interruption is the caller cutting off an earlier turn's reply (barge-in).
type Interruption struct {
	// TurnID is the engine's id of the turn whose reply was cut off.
	TurnID string
	// HeardText is the part of that reply the caller heard.
	HeardText string
}

// Channel is where the conversation happens.
type Channel struct {
	// Kind is "voice", "chat" or another word of the engine's.
	Kind string
	// Locale is a BCP 47 language tag ("zh-CN"), "" when not known.
	Locale string
}

// ChannelVoice is the channel kind of a phone or voice-assistant call: a text turn on it is speech.
const ChannelVoice = "voice"

// InputKind is how the caller answered this turn.
func (t *Turn) InputKind() InputKind {
	switch {
	case t.DTMF != nil:
		return InputDTMF
	case t.NoInput != nil:
		return InputNoInput
	case t.Channel != nil && t.Channel.Kind == ChannelVoice:
		return InputSpeech
	}
	return InputText
}

// FinishType is how an agent ends its part of the conversation.
type FinishType string

// Finish types, in the extension's spelling.
const (
	FinishComplete        FinishType = "complete"        // done; the platform goes on
	FinishEscalate        FinishType = "escalate"        // give the caller to a human
	FinishEndConversation FinishType = "endConversation" // end the conversation here
)

// Finish is how an agent said it ends its part, on a completed or rejected turn.
type Finish struct {
	Type    FinishType
	Reason  string
	Summary string
}

// InputMode is a way the next input may be collected.
type InputMode string

// Input modes.
const (
	InputModeSpeech InputMode = "speech"
	InputModeDTMF   InputMode = "dtmf"
)

// Expect is how an agent that asked a question wants the answer collected.
type Expect struct {
	// Input are the ways the answer may come, in the agent's order; empty when it did not say.
	Input []InputMode
	// DTMF is how to collect digits; nil when the agent did not say.
	DTMF *ExpectDTMF
	// NoInputTimeout is how long to wait for the caller before a no-input turn; 0 when the
	// agent did not say.
	NoInputTimeout time.Duration
}

// ExpectDTMF is how to collect keypad digits.
type ExpectDTMF struct {
	MaxDigits int    // 0: not said
	EndKey    string // "#", "*" or ""
	Timeout   time.Duration
}

// VoiceActive reports whether the agent declares the voice extension of URI uri, and so is told
// about voice turns and may answer with the extension's metadata.
func (a Agent) VoiceActive(uri string) bool {
	return uri != "" && slices.Contains(a.Extensions, uri)
}
