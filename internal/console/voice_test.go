package console

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/voiceagent"
)

// TestTestTurnVoiceMembersAreChecked: a test turn's voice members follow the gRPC API's rules;
// each fault is a 400 naming the member, before any agent is looked up or called.
func TestTestTurnVoiceMembersAreChecked(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, token := e.newTenant("voice checks")
	path := "/v1/agents/" + uuid.NewString() + "/test"
	dtmf := map[string]any{"digits": "1234", "termination": "endKey"}
	for _, c := range []struct {
		name        string
		body        map[string]any
		field, code string
	}{
		{"no_input_at_all", map[string]any{}, "text", "required"},
		{"text_and_dtmf", map[string]any{"text": "hi", "dtmf": dtmf}, "dtmf", "conflicting_fields"},
		{"dtmf_and_no_input", map[string]any{"dtmf": dtmf, "noInput": map[string]any{}}, "noInput", "conflicting_fields"},
		{"dtmf_without_digits", map[string]any{"dtmf": map[string]any{"termination": "timeout"}}, "dtmf.digits", "required"},
		{"dtmf_with_a_letter", map[string]any{"dtmf": map[string]any{"digits": "12x", "termination": "timeout"}}, "dtmf.digits", "invalid_characters"},
		{"dtmf_too_long", map[string]any{"dtmf": map[string]any{"digits": strings.Repeat("1", 65), "termination": "timeout"}}, "dtmf.digits", "too_long"},
		{"dtmf_without_termination", map[string]any{"dtmf": map[string]any{"digits": "1"}}, "dtmf.termination", "required"},
		{"dtmf_unknown_termination", map[string]any{"dtmf": map[string]any{"digits": "1", "termination": "END_KEY"}}, "dtmf.termination", "invalid_value"},
		{"silence_over_an_hour", map[string]any{"noInput": map[string]any{"silenceMs": 3_600_001}}, "noInput.silenceMs", "out_of_range"},
		{"negative_silence", map[string]any{"noInput": map[string]any{"silenceMs": -1}}, "noInput.silenceMs", "out_of_range"},
		{"silence_not_a_number", map[string]any{"noInput": map[string]any{"silenceMs": "5s"}}, "noInput.silenceMs", "invalid_type"},
		{"silence_in_another_case", map[string]any{"noInput": map[string]any{"SilenceMs": 5}}, "noInput.SilenceMs", "unknown_field"},
		{"interruption_without_turn", map[string]any{"text": "hi", "interruption": map[string]any{"heardText": "x"}}, "interruption.turnId", "required"},
		{"heard_text_control_character", map[string]any{"text": "hi", "interruption": map[string]any{"turnId": "t0", "heardText": "a\x1b"}}, "interruption.heardText", "invalid_characters"},
		{"heard_text_too_long", map[string]any{"text": "hi", "interruption": map[string]any{"turnId": "t0", "heardText": strings.Repeat("x", 16<<10+1)}}, "interruption.heardText", "too_long"},
		{"channel_without_kind", map[string]any{"text": "hi", "channel": map[string]any{"locale": "en"}}, "channel.kind", "required"},
		{"channel_kind_upper", map[string]any{"text": "hi", "channel": map[string]any{"kind": "Voice"}}, "channel.kind", "invalid_characters"},
		{"channel_bad_locale", map[string]any{"text": "hi", "channel": map[string]any{"kind": "voice", "locale": "not a tag"}}, "channel.locale", "invalid_value"},
		{"blank_turn_id", map[string]any{"text": "hi", "turnId": " "}, "turnId", "required"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(http.MethodPost, path, token, c.body)
			e.expect(r, http.StatusBadRequest)
			p := r.json(t)
			if p["field"] != c.field || p["code"] != c.code {
				t.Errorf("problem = %s, want field %s and code %s", r.body, c.field, c.code)
			}
		})
	}
}

// testAnswer is a test turn's answer, as a client reads it.
type testAnswer struct {
	SessionID, TurnID, Outcome, Text, StatusText string
	Finish                                       *finishJSON
	Expect                                       *expectJSON
	BargeIn                                      *bool
}

// TestTryItVoiceTurns runs voice test turns through the console against real agents on the A2A
// Go SDK v2 that read the extension with the SDK's own APIs: one that declares it (A2A 1.0, and
// one on 0.3) gets DTMF, silence, the interruption and the channel in its metadata and answers
// with finish, expect and speech, which the answer carries; one that does not gets digits as
// plain text and no activation, and a no-input turn to it is a clean 409 that reaches nothing.
func TestTryItVoiceTurns(t *testing.T) {
	t.Parallel()
	e, _, _ := newDemoEnv(t)
	_, token := e.newTenant("voice turns")
	register := func(cardURL string) map[string]any {
		t.Helper()
		r := e.do(http.MethodPost, "/v1/agents", token, map[string]string{"cardUrl": cardURL})
		e.expect(r, http.StatusCreated)
		return r.json(t)
	}
	send := func(id string, body map[string]any) testAnswer {
		t.Helper()
		r := e.do(http.MethodPost, "/v1/agents/"+id+"/test", token, body)
		e.expect(r, http.StatusOK)
		var a testAnswer
		if err := json.Unmarshal(r.body, &a); err != nil {
			t.Fatal(err)
		}
		return a
	}

	for _, gen := range []struct {
		name string
		v03  bool
	}{{"A2A_1.0", false}, {"A2A_0.3", true}} {
		t.Run(gen.name, func(t *testing.T) {
			agent := voiceagent.New(t, voiceagent.Options{V03: gen.v03})
			a := register(agent.CardURL)
			id := a["id"].(string)
			if a["voiceExtension"] != true {
				t.Fatalf("agent resource of an agent declaring the extension: voiceExtension = %v", a["voiceExtension"])
			}

			// Keypad digits on a voice channel; the turn id comes back.
			got := send(id, map[string]any{"dtmf": map[string]any{"digits": "1234", "termination": "endKey"},
				"channel": map[string]any{"kind": "voice", "locale": "zh-CN"}, "turnId": "turn-1"})
			want := testAnswer{SessionID: got.SessionID, TurnID: "turn-1", Outcome: "COMPLETED", Text: voiceagent.Pressed("1234", "endKey"),
				Finish: &finishJSON{Type: connector.FinishComplete}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("DTMF turn (-want +got):\n%s", diff)
			}
			first := agent.Received()[0]
			if diff := cmp.Diff(voiceagent.Received{Activated: true, Text: "1234", MessageID: first.MessageID, Parts: 1,
				Input:   map[string]any{"kind": "dtmf", "dtmf": map[string]any{"digits": "1234", "termination": "endKey"}},
				Channel: map[string]any{"kind": "voice", "locale": "zh-CN"}}, first); diff != "" {
				t.Errorf("the agent received (-want +got):\n%s", diff)
			}

			// The next turn says the caller heard only part of that reply.
			const heard = "You pressed"
			got = send(id, map[string]any{"text": "what was that", "sessionId": got.SessionID,
				"interruption": map[string]any{"turnId": "turn-1", "heardText": heard}})
			if !strings.HasPrefix(got.Text, voiceagent.Heard(heard)) || got.TurnID == "" || got.TurnID == "turn-1" {
				t.Errorf("interrupted turn = %+v, want a new turn id and a reply that starts with what was heard", got)
			}
			if in := agent.Received()[1].Interruption; in["messageId"] != first.MessageID || in["heardText"] != heard {
				t.Errorf("interruption = %v, want the messageId of turn-1 (%s) and the heard text", in, first.MessageID)
			}

			// A question that wants keypad digits, then silence, which continues the held task.
			got = send(id, map[string]any{"text": "my pin", "sessionId": got.SessionID})
			wantExpect := &expectJSON{Input: []connector.InputMode{connector.InputModeDTMF},
				DTMF: &expectDTMFJSON{MaxDigits: 4, EndKey: "#", TimeoutMs: 8000}, NoInputTimeoutMs: 6000}
			if diff := cmp.Diff(wantExpect, got.Expect); got.Outcome != "INPUT_REQUIRED" || got.StatusText != voiceagent.AskPIN || diff != "" {
				t.Errorf("PIN question = %+v, expect diff (-want +got):\n%s", got, diff)
			}
			got = send(id, map[string]any{"noInput": map[string]any{"silenceMs": 5000}, "sessionId": got.SessionID})
			if got.Outcome != "INPUT_REQUIRED" || got.StatusText != voiceagent.StillThere || got.Expect == nil {
				t.Errorf("silence turn = %+v", got)
			}
			if in := agent.Received()[3]; in.Input["kind"] != "noInput" || in.Input["silenceMs"] != 5000.0 || in.Parts != 1 || in.Text != "" {
				t.Errorf("the agent received for silence %+v", in)
			}

			// A reply that must not be interrupted; an agent that hands the caller to a human.
			got = send(id, map[string]any{"text": "read the disclosure"})
			if got.BargeIn == nil || *got.BargeIn || got.Text != voiceagent.Disclosure {
				t.Errorf("disclosure = %+v, want bargeIn false", got)
			}
			got = send(id, map[string]any{"text": "a human please"})
			if diff := cmp.Diff(&finishJSON{Type: connector.FinishEscalate, Reason: voiceagent.EscalateReason, Summary: voiceagent.EscalateSummary}, got.Finish); diff != "" || got.BargeIn != nil {
				t.Errorf("escalation = %+v, finish diff (-want +got):\n%s", got, diff)
			}
		})
	}

	t.Run("agent_without_the_extension", func(t *testing.T) {
		agent := voiceagent.New(t, voiceagent.Options{Undeclared: true})
		a := register(agent.CardURL)
		id := a["id"].(string)
		if a["voiceExtension"] != false {
			t.Fatalf("voiceExtension = %v for an agent that does not declare it", a["voiceExtension"])
		}
		r := e.do(http.MethodGet, "/v1/agents", token, nil)
		e.expect(r, http.StatusOK)
		if !strings.Contains(string(r.body), `"voiceExtension":false`) || !strings.Contains(string(r.body), `"voiceExtension":true`) {
			t.Errorf("the list does not say which agents have the extension: %s", r.body)
		}

		got := send(id, map[string]any{"dtmf": map[string]any{"digits": "42#", "termination": "timeout"}})
		if got.Text != voiceagent.Echo("42#") || got.Finish != nil {
			t.Errorf("DTMF to an agent without the extension = %+v, want the digits as text", got)
		}
		if in := agent.Received(); len(in) != 1 || in[0].Activated || in[0].Input != nil || in[0].Text != "42#" {
			t.Errorf("the agent received %+v, want the plain text and no activation", in)
		}

		r = e.do(http.MethodPost, "/v1/agents/"+id+"/test", token, map[string]any{"noInput": map[string]any{"silenceMs": 3000}})
		e.expect(r, http.StatusConflict)
		if p := r.json(t); p["code"] != "no_input_unsupported" || !strings.Contains(p["detail"].(string), "reprompts the caller") {
			t.Errorf("no-input to an agent without the extension = %s", r.body)
		}
		if n := len(agent.Received()); n != 1 {
			t.Errorf("the agent received %d messages, want the refused turn to reach nothing", n)
		}
	})
}
