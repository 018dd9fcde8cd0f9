// Package voice is the platform's voice extension on the A2A wire (docs/voice-extension.md): the
// metadata a voice turn adds to the user's message for an agent that declares the extension, and
// the metadata such an agent answers with (how it finishes, how to collect the next input,
// whether its reply may be interrupted), read into the domain's records. It does no I/O.
package voice

import (
	"maps"

	connector "github.com/a2a-connector/a2a-connector"
)

// Extension is the voice extension under one URI; its metadata keys are the URI and a suffix.
type Extension struct {
	uri string
	// The metadata keys, made once.
	input, interruption, channel, finish, expect, speech string
}

// New returns the extension of URI uri ("" means connector.VoiceExtensionURI).
func New(uri string) *Extension {
	if uri == "" {
		uri = connector.VoiceExtensionURI
	}
	return &Extension{uri: uri,
		input: uri + "/input", interruption: uri + "/interruption", channel: uri + "/channel",
		finish: uri + "/finish", expect: uri + "/expect", speech: uri + "/speech"}
}

// URI is the extension's URI, as cards declare it.
func (x *Extension) URI() string { return x.uri }

// Active reports whether agent a declares the extension.
func (x *Extension) Active(a *connector.Agent) bool { return a.VoiceActive(x.uri) }

// Message is the user message a turn becomes for an agent: its one text part and its metadata.
type Message struct {
	Text     string
	Metadata map[string]any
}

// Outgoing is the message turn t sends to an agent; active says whether the agent declares the
// extension. messageID names the A2A messageId the connector sent for a turn id of the same
// session (the interrupted turn's). An agent without the extension gets exactly what it got
// before the extension existed: the text (DTMF digits as text), the engine's metadata as is;
// a no-input turn cannot be said to it (connector.ErrNoInputUnsupported).
func (x *Extension) Outgoing(t *connector.Turn, active bool, messageID func(turnID string) string) (Message, error) {
	m := Message{Text: t.Text, Metadata: t.Metadata}
	if t.DTMF != nil {
		m.Text = t.DTMF.Digits
	}
	if !active {
		if t.NoInput != nil {
			return Message{}, connector.ErrNoInputUnsupported
		}
		return m, nil
	}
	if t.NoInput != nil {
		m.Text = ""
	}
	md := make(map[string]any, len(t.Metadata)+3)
	maps.Copy(md, t.Metadata)
	md[x.input] = inputJSON(t)
	if i := t.Interruption; i != nil {
		md[x.interruption] = map[string]any{"messageId": messageID(i.TurnID), "heardText": i.HeardText}
	}
	if c := t.Channel; c != nil {
		ch := map[string]any{}
		if c.Kind != "" {
			ch["kind"] = c.Kind
		}
		if c.Locale != "" {
			ch["locale"] = c.Locale
		}
		md[x.channel] = ch
	}
	m.Metadata = md
	return m, nil
}

// inputJSON is the input member of turn t.
func inputJSON(t *connector.Turn) map[string]any {
	in := map[string]any{"kind": string(t.InputKind())}
	switch {
	case t.DTMF != nil:
		in["dtmf"] = map[string]any{"digits": t.DTMF.Digits, "termination": string(t.DTMF.Termination)}
	case t.NoInput != nil:
		in["silenceMs"] = t.NoInput.Silence.Milliseconds()
	}
	return in
}
