package console

import (
	"net/http"
	"time"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/voice"
)

// A test turn may be a voice turn, as the dialog engine sends them (docs/voice-extension.md):
// keypad digits or silence instead of text, what the caller heard of an interrupted reply, the
// channel. The fields follow the gRPC API's rules (internal/voice holds the limits both use);
// their faults are this API's 400s.

// testTurnRequest is the body of POST /v1/agents/{id}/test. Exactly one input: text, dtmf or
// noInput.
type testTurnRequest struct {
	Text         string            `json:"text"`
	DTMF         *dtmfJSON         `json:"dtmf"`
	NoInput      *noInputJSON      `json:"noInput"`
	Interruption *interruptionJSON `json:"interruption"`
	Channel      *channelJSON      `json:"channel"`
	// SessionID continues a test conversation; TurnID names this turn (a new id when absent),
	// so that the next turn's interruption can name it.
	SessionID *string `json:"sessionId"`
	TurnID    *string `json:"turnId"`
	// UserID names the platform's user of the turn, as HandleTurnRequest.caller.user_id does:
	// an agent with callerIdentity receives the token naming them.
	UserID *string `json:"userId"`
}

type dtmfJSON struct {
	Digits      string `json:"digits"`
	Termination string `json:"termination"`
}

type noInputJSON struct {
	SilenceMs int64 `json:"silenceMs"`
}

type interruptionJSON struct {
	TurnID    string `json:"turnId"`
	HeardText string `json:"heardText"`
}

type channelJSON struct {
	Kind   string `json:"kind"`
	Locale string `json:"locale,omitempty"`
}

// The rules of the voice members; ids are as long as a test conversation's.
var (
	ruleTurnID      = fieldRule{required: true, maxBytes: 128}
	ruleDigits      = fieldRule{required: true, maxBytes: voice.MaxDTMFDigits}
	ruleHeardText   = fieldRule{maxBytes: ruleText.maxBytes, multiline: true}
	ruleChannelKind = fieldRule{required: true, maxBytes: voice.MaxChannelKindBytes}
	ruleLocale      = fieldRule{maxBytes: voice.MaxLocaleBytes}
)

var dtmfTerminations = map[string]connector.DTMFTermination{
	string(connector.DTMFEndKey):    connector.DTMFEndKey,
	string(connector.DTMFTimeout):   connector.DTMFTimeout,
	string(connector.DTMFMaxDigits): connector.DTMFMaxDigits,
}

// faultError is the 400 of a value that internal/voice found fault with (fault is "" when it
// found none).
func faultError(field, code, fault string) error {
	if fault == "" {
		return nil
	}
	return fieldError(field, code, "%s: %s.", field, fault)
}

// voiceTurn checks the input and voice members of in and copies them into t.
func voiceTurn(in *testTurnRequest, t *connector.Turn) error {
	inputs := []string{}
	if in.Text != "" {
		inputs = append(inputs, "text")
	}
	if in.DTMF != nil {
		inputs = append(inputs, "dtmf")
	}
	if in.NoInput != nil {
		inputs = append(inputs, "noInput")
	}
	switch {
	case len(inputs) > 1:
		return fieldError(inputs[1], "conflicting_fields", "Send one input: text, dtmf or noInput, not %s and %s.", inputs[0], inputs[1])
	case len(inputs) == 0:
		return fieldError("text", "required", "text is required (or, for a voice turn, dtmf or noInput).")
	case in.DTMF == nil && in.NoInput == nil:
		if err := ruleText.check("text", in.Text); err != nil {
			return err
		}
		t.Text = in.Text
	}
	if d := in.DTMF; d != nil {
		if err := ruleDigits.check("dtmf.digits", d.Digits); err != nil {
			return err
		}
		if err := faultError("dtmf.digits", "invalid_characters", voice.DigitsFault(d.Digits)); err != nil {
			return err
		}
		term, ok := dtmfTerminations[d.Termination]
		switch {
		case d.Termination == "":
			return fieldError("dtmf.termination", "required", "dtmf.termination is required: endKey, timeout or maxDigits.")
		case !ok:
			return fieldError("dtmf.termination", "invalid_value", "dtmf.termination must be endKey, timeout or maxDigits.")
		}
		t.DTMF = &connector.DTMF{Digits: d.Digits, Termination: term}
	}
	if n := in.NoInput; n != nil {
		if n.SilenceMs < 0 || n.SilenceMs > voice.MaxSilenceMs {
			return fieldError("noInput.silenceMs", "out_of_range", "noInput.silenceMs must be between 0 and %d (an hour).", voice.MaxSilenceMs)
		}
		t.NoInput = &connector.NoInput{Silence: time.Duration(n.SilenceMs) * time.Millisecond}
	}
	if i := in.Interruption; i != nil {
		if err := ruleTurnID.check("interruption.turnId", i.TurnID); err != nil {
			return err
		}
		if err := ruleHeardText.check("interruption.heardText", i.HeardText); err != nil {
			return err
		}
		t.Interruption = &connector.Interruption{TurnID: i.TurnID, HeardText: i.HeardText}
	}
	if c := in.Channel; c != nil {
		if err := ruleChannelKind.check("channel.kind", c.Kind); err != nil {
			return err
		}
		if err := faultError("channel.kind", "invalid_characters", voice.ChannelKindFault(c.Kind)); err != nil {
			return err
		}
		if c.Locale != "" {
			if err := ruleLocale.check("channel.locale", c.Locale); err != nil {
				return err
			}
			if err := faultError("channel.locale", "invalid_value", voice.LocaleFault(c.Locale)); err != nil {
				return err
			}
		}
		t.Channel = &connector.Channel{Kind: c.Kind, Locale: c.Locale}
	}
	return nil
}

// errNoInputUnsupported answers a no-input test turn for an agent without the voice extension:
// the connector sends it nothing, and the dialog engine reprompts the caller itself.
func errNoInputUnsupported(uri string) error {
	return &apiError{status: http.StatusConflict, code: "no_input_unsupported",
		detail: "The agent does not declare the voice extension (" + uri + "), so it cannot be told that the caller said nothing: " +
			"nothing was sent to it. A dialog engine reprompts the caller itself here; send text or digits instead."}
}

// finishJSON is how a voice-extension agent ended its part.
type finishJSON struct {
	Type    connector.FinishType `json:"type"`
	Reason  string               `json:"reason,omitempty"`
	Summary string               `json:"summary,omitempty"`
}

// expectJSON is how a voice-extension agent wants its question answered.
type expectJSON struct {
	Input            []connector.InputMode `json:"input,omitempty"`
	DTMF             *expectDTMFJSON       `json:"dtmf,omitempty"`
	NoInputTimeoutMs int64                 `json:"noInputTimeoutMs,omitempty"`
}

type expectDTMFJSON struct {
	MaxDigits int    `json:"maxDigits,omitempty"`
	EndKey    string `json:"endKey,omitempty"`
	TimeoutMs int64  `json:"timeoutMs,omitempty"`
}

func toFinishJSON(f *connector.Finish) *finishJSON {
	if f == nil {
		return nil
	}
	return &finishJSON{Type: f.Type, Reason: f.Reason, Summary: f.Summary}
}

func toExpectJSON(e *connector.Expect) *expectJSON {
	if e == nil {
		return nil
	}
	out := &expectJSON{Input: e.Input, NoInputTimeoutMs: e.NoInputTimeout.Milliseconds()}
	if d := e.DTMF; d != nil {
		out.DTMF = &expectDTMFJSON{MaxDigits: d.MaxDigits, EndKey: d.EndKey, TimeoutMs: d.Timeout.Milliseconds()}
	}
	return out
}
