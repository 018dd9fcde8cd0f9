package voice

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	connector "github.com/a2a-connector/a2a-connector"
)

func messageID(turnID string) string { return "msg-of-" + turnID }

// roundTrip is md as the agent reads it: JSON.
func roundTrip(t *testing.T, md map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestOutgoing_active_agent_gets_the_extension_keys(t *testing.T) {
	x := New("")
	engine := map[string]any{"user": map[string]any{"id": "u1"}}
	tests := []struct {
		name     string
		turn     connector.Turn
		wantText string
		want     map[string]any
	}{
		{name: "speech on a voice channel, interrupted",
			turn: connector.Turn{Text: "what about tomorrow", Metadata: engine,
				Interruption: &connector.Interruption{TurnID: "t1", HeardText: "Tomorrow will be"},
				Channel:      &connector.Channel{Kind: "voice", Locale: "zh-CN"}},
			wantText: "what about tomorrow",
			want: map[string]any{"user": map[string]any{"id": "u1"},
				"urn:a2a-connector:voice:v1/input":        map[string]any{"kind": "speech"},
				"urn:a2a-connector:voice:v1/interruption": map[string]any{"messageId": "msg-of-t1", "heardText": "Tomorrow will be"},
				"urn:a2a-connector:voice:v1/channel":      map[string]any{"kind": "voice", "locale": "zh-CN"}}},
		{name: "typed text without a channel",
			turn:     connector.Turn{Text: "hi"},
			wantText: "hi",
			want:     map[string]any{"urn:a2a-connector:voice:v1/input": map[string]any{"kind": "text"}}},
		{name: "dtmf digits are also the text",
			turn:     connector.Turn{DTMF: &connector.DTMF{Digits: "4711", Termination: connector.DTMFEndKey}, Channel: &connector.Channel{Kind: "voice"}},
			wantText: "4711",
			want: map[string]any{
				"urn:a2a-connector:voice:v1/input":   map[string]any{"kind": "dtmf", "dtmf": map[string]any{"digits": "4711", "termination": "endKey"}},
				"urn:a2a-connector:voice:v1/channel": map[string]any{"kind": "voice"}}},
		{name: "no input",
			turn:     connector.Turn{NoInput: &connector.NoInput{Silence: 5 * time.Second}},
			wantText: "",
			want:     map[string]any{"urn:a2a-connector:voice:v1/input": map[string]any{"kind": "noInput", "silenceMs": float64(5000)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := x.Outgoing(&tt.turn, true, messageID)
			if err != nil {
				t.Fatal(err)
			}
			if m.Text != tt.wantText {
				t.Errorf("text = %q, want %q", m.Text, tt.wantText)
			}
			if diff := cmp.Diff(tt.want, roundTrip(t, m.Metadata)); diff != "" {
				t.Errorf("metadata (-want +got):\n%s", diff)
			}
		})
	}
	if len(engine) != 1 {
		t.Errorf("the engine's metadata map was changed: %v", engine)
	}
}

func TestOutgoing_inactive_agent_sees_nothing_new(t *testing.T) {
	x := New("")
	engine := map[string]any{"user": "u1"}
	m, err := x.Outgoing(&connector.Turn{DTMF: &connector.DTMF{Digits: "12#", Termination: connector.DTMFTimeout}, Metadata: engine,
		Interruption: &connector.Interruption{TurnID: "t1", HeardText: "x"}, Channel: &connector.Channel{Kind: "voice"}}, false, messageID)
	if err != nil {
		t.Fatal(err)
	}
	if m.Text != "12#" || !cmp.Equal(m.Metadata, engine) {
		t.Errorf("got %q %v, want the digits as text and the engine's metadata as is", m.Text, m.Metadata)
	}
	if _, err := x.Outgoing(&connector.Turn{NoInput: &connector.NoInput{}}, false, messageID); !errors.Is(err, connector.ErrNoInputUnsupported) {
		t.Errorf("no input to an agent without the extension: err = %v, want ErrNoInputUnsupported", err)
	}
}

func TestOutgoing_under_a_configured_uri(t *testing.T) {
	x := New("https://voice.example.com/v2")
	m, err := x.Outgoing(&connector.Turn{Text: "hi"}, true, messageID)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Metadata["https://voice.example.com/v2/input"]; !ok || len(m.Metadata) != 1 {
		t.Errorf("metadata = %v, want only the configured URI's input key", m.Metadata)
	}
	if !x.Active(&connector.Agent{CardProfile: connector.CardProfile{Extensions: []string{"https://voice.example.com/v2"}}}) ||
		x.Active(&connector.Agent{CardProfile: connector.CardProfile{Extensions: []string{connector.VoiceExtensionURI}}}) {
		t.Error("Active must follow the configured URI only")
	}
}

// agentJSON is metadata as it arrives from an agent's JSON.
func agentJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var md map[string]any
	if err := json.Unmarshal([]byte(s), &md); err != nil {
		t.Fatal(err)
	}
	return md
}

func TestFinish(t *testing.T) {
	x := New("")
	tests := []struct {
		name, md string
		want     *connector.Finish
	}{
		{"escalate", `{"urn:a2a-connector:voice:v1/finish":{"type":"escalate","reason":"asked for a human","summary":"balance question"}}`,
			&connector.Finish{Type: connector.FinishEscalate, Reason: "asked for a human", Summary: "balance question"}},
		{"end conversation", `{"urn:a2a-connector:voice:v1/finish":{"type":"endConversation"}}`, &connector.Finish{Type: connector.FinishEndConversation}},
		{"unknown type", `{"urn:a2a-connector:voice:v1/finish":{"type":"completeWithError"}}`, nil},
		{"not an object", `{"urn:a2a-connector:voice:v1/finish":"escalate"}`, nil},
		{"reason of the wrong type is left out", `{"urn:a2a-connector:voice:v1/finish":{"type":"complete","reason":7}}`, &connector.Finish{Type: connector.FinishComplete}},
		{"absent", `{"other":1}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, x.Finish(agentJSON(t, tt.md))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestFinish_clips_what_an_agent_could_inflate(t *testing.T) {
	long := make([]byte, 3*maxSummaryBytes)
	for i := range long {
		long[i] = 'a'
	}
	f := New("").Finish(map[string]any{"urn:a2a-connector:voice:v1/finish": map[string]any{"type": "complete", "summary": "é" + string(long), "reason": string(long)}})
	if len(f.Summary) > maxSummaryBytes || len(f.Reason) > maxReasonBytes || f.Summary[:2] != "é" {
		t.Errorf("summary %d bytes, reason %d bytes: not clipped to %d and %d", len(f.Summary), len(f.Reason), maxSummaryBytes, maxReasonBytes)
	}
}

func TestExpect(t *testing.T) {
	x := New("")
	tests := []struct {
		name, md string
		want     *connector.Expect
	}{
		{"pin", `{"urn:a2a-connector:voice:v1/expect":{"input":["dtmf"],"dtmf":{"maxDigits":6,"endKey":"#","timeoutMs":8000},"noInputTimeoutMs":6000}}`,
			&connector.Expect{Input: []connector.InputMode{connector.InputModeDTMF},
				DTMF: &connector.ExpectDTMF{MaxDigits: 6, EndKey: "#", Timeout: 8 * time.Second}, NoInputTimeout: 6 * time.Second}},
		{"speech or dtmf, unknown mode dropped", `{"urn:a2a-connector:voice:v1/expect":{"input":["speech","video","dtmf"]}}`,
			&connector.Expect{Input: []connector.InputMode{connector.InputModeSpeech, connector.InputModeDTMF}}},
		{"out of range members are left out", `{"urn:a2a-connector:voice:v1/expect":{"input":["speech"],"dtmf":{"maxDigits":1000,"endKey":"##","timeoutMs":-1},"noInputTimeoutMs":1.5}}`,
			&connector.Expect{Input: []connector.InputMode{connector.InputModeSpeech}}},
		{"nothing usable", `{"urn:a2a-connector:voice:v1/expect":{"input":"dtmf"}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, x.Expect(agentJSON(t, tt.md))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestSpeech(t *testing.T) {
	x := New("")
	for _, tt := range []struct {
		md            string
		bargeIn, said bool
	}{
		{`{"urn:a2a-connector:voice:v1/speech":{"bargeIn":false}}`, false, true},
		{`{"urn:a2a-connector:voice:v1/speech":{"bargeIn":true}}`, true, true},
		{`{"urn:a2a-connector:voice:v1/speech":{"bargeIn":"no"}}`, false, false},
		{`{"urn:a2a-connector:voice:v1/speech":{}}`, false, false},
		{`{}`, false, false},
	} {
		if b, ok := x.Speech(agentJSON(t, tt.md)); b != tt.bargeIn || ok != tt.said {
			t.Errorf("Speech(%s) = %v, %v; want %v, %v", tt.md, b, ok, tt.bargeIn, tt.said)
		}
	}
}
