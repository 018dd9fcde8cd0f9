package agent

import (
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/a2a-connector/a2a-connector/internal/a2a/a2av0"
)

// VoiceExtensionURI is the default URI of the platform's voice extension. An agent that lists
// it in capabilities.extensions gets, on turns that activate it, the input's kind, the
// interruption of its previous reply and the channel in the user message's metadata, and may
// answer with how to collect the next input, whether a reply may be interrupted and how it ends
// its part of the call.
const VoiceExtensionURI = "urn:a2a-connector:voice:v1"

// Input kinds of <URI>/input.
const (
	inputSpeech  = "speech"
	inputText    = "text"
	inputDTMF    = "dtmf"
	inputNoInput = "noInput"
)

// Finish types of <URI>/finish.
const (
	finishComplete        = "complete"
	finishEscalate        = "escalate"
	finishEndConversation = "endConversation"
)

// voiceActive reports whether the request activated the agent's voice extension: the agent
// declares one and the request lists its URI in A2A-Extensions or X-A2A-Extensions (one value
// per URI or comma-separated, as clients differ). Only then are the metadata keys read and
// written; every other request is served exactly as by an agent without the extension.
func (a *Agent) voiceActive(h http.Header) bool {
	uri := a.opts.VoiceExtension
	if uri == "" {
		return false
	}
	for _, name := range []string{"A2A-Extensions", "X-A2A-Extensions"} {
		for _, v := range h.Values(name) {
			for u := range strings.SplitSeq(v, ",") {
				if strings.TrimSpace(u) == uri {
					return true
				}
			}
		}
	}
	return false
}

// voiceInput is what the voice metadata of one user message says. The zero value is a turn that
// did not activate the extension: plain text, as for any A2A client.
type voiceInput struct {
	// kind is the input kind ("speech", "text", "dtmf", "noInput"); "" when not sent.
	kind string
	// digits are the keypad digits of a "dtmf" input.
	digits string
	// locale is the channel's BCP 47 locale, "" when not sent.
	locale string
	// interruption is set when the caller cut the agent's reply to an earlier turn.
	interruption *interruption
}

// interruption is <URI>/interruption: which earlier turn's reply was cut, and what of it the
// caller heard.
type interruption struct {
	// messageID is the messageId of the user message whose reply was cut.
	messageID string
	heard     string
}

// The members of the metadata keys as they arrive; the connector sends only those that apply.
type (
	wireInput struct {
		Kind string `json:"kind"`
		DTMF *struct {
			Digits      string `json:"digits"`
			Termination string `json:"termination"`
		} `json:"dtmf"`
	}
	wireInterruption struct {
		MessageID string `json:"messageId"`
		HeardText string `json:"heardText"`
	}
	wireChannel struct {
		Kind   string `json:"kind"`
		Locale string `json:"locale"`
	}
)

// readVoice reads the voice keys of an activated turn's message metadata. A member that does not
// decode is left out and named in the returned list, for the log: a demo answers what it can
// rather than refuse the caller's turn over a malformed hint.
func (a *Agent) readVoice(md map[string]any) (voiceInput, []string) {
	uri := a.opts.VoiceExtension
	var in voiceInput
	var bad []string
	var wi wireInput
	switch ok, err := metaMember(md, uri+"/input", &wi); {
	case err != nil:
		bad = append(bad, "input")
	case ok:
		in.kind = wi.Kind
		if wi.DTMF != nil {
			in.digits = wi.DTMF.Digits
		}
	}
	var wr wireInterruption
	switch ok, err := metaMember(md, uri+"/interruption", &wr); {
	case err != nil:
		bad = append(bad, "interruption")
	case ok:
		in.interruption = &interruption{messageID: wr.MessageID, heard: wr.HeardText}
	}
	var wc wireChannel
	switch ok, err := metaMember(md, uri+"/channel", &wc); {
	case err != nil:
		bad = append(bad, "channel")
	case ok:
		in.locale = wc.Locale
	}
	return in, bad
}

// metaMember decodes md[key] into v, reporting whether the key was there. The params were
// decoded into map[string]any, so the value goes through JSON once more to get its typed form.
func metaMember(md map[string]any, key string, v any) (bool, error) {
	raw, ok := md[key]
	if !ok || raw == nil {
		return false, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, err
	}
	return true, nil
}

// fallbackLang is the language for a turn without words (DTMF digits, silence): the channel's
// locale when it has one ("zh", "zh-CN", "zh-Hant-TW" → Chinese, anything else English), else
// def (the held task's language, or the agent's default).
func (v voiceInput) fallbackLang(def lang) lang {
	if v.kind != inputDTMF && v.kind != inputNoInput || v.locale == "" {
		return def
	}
	if l := strings.ToLower(v.locale); l == "zh" || strings.HasPrefix(l, "zh-") || strings.HasPrefix(l, "zh_") {
		return zh
	}
	return en
}

// expectation is <URI>/expect: how the platform should collect the answer to an input-required
// question.
type expectation struct {
	input          []string // "speech", "dtmf"
	maxDigits      int
	endKey         string
	timeoutMs      int
	noInputTimeout int // ms
}

// metadata is the expectation on the wire. Plain maps, not tagged structs: the message is written
// with encoding/json/v2, whose omitempty keeps zero numbers.
func (e *expectation) metadata() map[string]any {
	input := make([]any, len(e.input))
	for i, s := range e.input {
		input[i] = s
	}
	m := map[string]any{"input": input}
	if e.maxDigits > 0 || e.endKey != "" || e.timeoutMs > 0 {
		m["dtmf"] = map[string]any{"maxDigits": e.maxDigits, "endKey": e.endKey, "timeoutMs": e.timeoutMs}
	}
	if e.noInputTimeout > 0 {
		m["noInputTimeoutMs"] = e.noInputTimeout
	}
	return m
}

// finishing is <URI>/finish: how the agent ends its part of the call.
type finishing struct {
	typ, reason, summary string
}

func (f *finishing) metadata() map[string]any {
	m := map[string]any{"type": f.typ}
	if f.reason != "" {
		m["reason"] = f.reason
	}
	if f.summary != "" {
		m["summary"] = f.summary
	}
	return m
}

// statusMetadata is the voice metadata of the message of a turn's last status, for a turn that
// activated uri: the expectation of a question, the finish of a completed turn (complete unless
// the skill said otherwise). Nil when uri is "" (not activated) or there is nothing to say.
func statusMetadata(uri string, state a2av0.TaskState, rep reply) map[string]any {
	if uri == "" {
		return nil
	}
	switch {
	case state == a2av0.TaskStateInputRequired && rep.expect != nil:
		return map[string]any{uri + "/expect": rep.expect.metadata()}
	case state == a2av0.TaskStateCompleted && rep.finish != nil:
		return map[string]any{uri + "/finish": rep.finish.metadata()}
	case state == a2av0.TaskStateCompleted:
		return map[string]any{uri + "/finish": (&finishing{typ: finishComplete}).metadata()}
	}
	return nil
}

// speechMetadata asks, for a turn that activated uri, that the reply it starts not be
// interrupted by the caller.
func speechMetadata(uri string, noBargeIn bool) map[string]any {
	if uri == "" || !noBargeIn {
		return nil
	}
	return map[string]any{uri + "/speech": map[string]any{"bargeIn": false}}
}

// maxSaidBytes caps the text remembered of one reply: enough for every reply of this agent but
// the repeat skill's echo of a long message, whose tail is then not resumable.
const maxSaidBytes = 4 << 10

// spokenReply is what the agent said in reply to one turn, remembered so that a later turn
// reporting an interruption can be answered knowing what the caller missed.
type spokenReply struct {
	// text is the reply, cut to maxSaidBytes.
	text string
	// runes is the length of the whole reply, so a cut text still says whether the caller heard
	// everything.
	runes int
	// truncated says text is only the start of the reply: its rest cannot be resumed.
	truncated bool
}

func newSpokenReply(text string) *spokenReply {
	text = strings.TrimSpace(text)
	s := &spokenReply{text: text, runes: utf8.RuneCountInString(text)}
	if len(text) > maxSaidBytes {
		n := maxSaidBytes
		for n > 0 && !utf8.RuneStart(text[n]) {
			n--
		}
		s.text, s.truncated = text[:n], true
	}
	return s
}
