package agent

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/a2a-connector/a2a-connector/internal/a2a/a2av0"
)

// voiceKey is a metadata key of the default voice extension.
func voiceKey(name string) string { return VoiceExtensionURI + "/" + name }

// activation is the header by which a connector activates the default voice extension.
func activation() http.Header { return http.Header{"X-A2A-Extensions": {VoiceExtensionURI}} }

// newVoiceFixture is an agent that declares the default voice extension.
func newVoiceFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixture(t, Options{VoiceExtension: VoiceExtensionURI})
}

// utterance is one user message of a voice test; an empty messageID gets a fresh one.
type utterance struct {
	text, taskID, contextID, messageID string
	md                                 map[string]any
}

func (u utterance) params() a2av0.MessageSendParams {
	p := userMessage(u.text, u.taskID, u.contextID)
	if u.messageID != "" {
		p.Message.MessageID = u.messageID
	}
	p.Message.Metadata = u.md
	return p
}

// sendTurn runs message/send with header and returns the task and the raw result.
func (f *fixture) sendTurn(t *testing.T, u utterance, header http.Header) (a2av0.Task, string) {
	t.Helper()
	resp := f.call(t, a2av0.MethodMessageSend, u.params(), header)
	if resp.Error != nil {
		t.Fatalf("message/send: error %d %s", resp.Error.Code, resp.Error.Message)
	}
	var task a2av0.Task
	if err := json.Unmarshal(resp.Result, &task); err != nil {
		t.Fatalf("decode task: %v", err)
	}
	return task, string(resp.Result)
}

// streamTurn runs message/stream with header and returns its events and their JSON.
func (f *fixture) streamTurn(t *testing.T, u utterance, header http.Header) ([]a2av0.Event, string) {
	t.Helper()
	evs := f.openStreamWith(t, t.Context(), StreamPath, a2av0.MethodMessageStream, u.params(), header).all()
	raw, err := json.Marshal(evs)
	if err != nil {
		t.Fatal(err)
	}
	return evs, string(raw)
}

// merge joins metadata maps.
func merge(mds ...map[string]any) map[string]any {
	out := map[string]any{}
	for _, md := range mds {
		for k, v := range md {
			out[k] = v
		}
	}
	return out
}

func dtmfMD(digits string) map[string]any {
	return map[string]any{voiceKey("input"): map[string]any{"kind": "dtmf", "dtmf": map[string]any{"digits": digits, "termination": "endKey"}}}
}

func noInputMD() map[string]any {
	return map[string]any{voiceKey("input"): map[string]any{"kind": "noInput", "silenceMs": 6000}}
}

func channelMD(locale string) map[string]any {
	return map[string]any{voiceKey("channel"): map[string]any{"kind": "voice", "locale": locale}}
}

func interruptionMD(messageID, heard string) map[string]any {
	return map[string]any{voiceKey("interruption"): map[string]any{"messageId": messageID, "heardText": heard}}
}

// statusMeta is a voice key of the status message's metadata, nil when absent.
func statusMeta(st a2av0.TaskStatus, name string) any {
	if st.Message == nil {
		return nil
	}
	return st.Message.Metadata[voiceKey(name)]
}

// wantPINExpect is the balance skill's expectation as a client decodes it.
var wantPINExpect = map[string]any{
	"input":            []any{"dtmf"},
	"dtmf":             map[string]any{"maxDigits": 6.0, "endKey": "#", "timeoutMs": 8000.0},
	"noInputTimeoutMs": 6000.0,
}

var wantComplete = map[string]any{"type": "complete"}

// taskSays is what a task answers, its ids left out (a random id may hold any digits): the
// status message and artifacts, text and metadata.
func taskSays(t *testing.T, task a2av0.Task) string {
	t.Helper()
	var md []any
	if task.Status.Message != nil {
		md = append(md, task.Status.Message.Metadata)
	}
	for _, art := range task.Artifacts {
		md = append(md, art.Metadata)
	}
	raw, err := json.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	return statusText(task.Status) + taskText(task) + string(raw)
}

// eventsSay is taskSays for the events of a stream.
func eventsSay(t *testing.T, evs []a2av0.Event) string {
	t.Helper()
	var b strings.Builder
	for _, ev := range evs {
		switch e := ev.(type) {
		case *a2av0.Task:
			b.WriteString(taskSays(t, *e))
		case *a2av0.TaskStatusUpdateEvent:
			b.WriteString(taskSays(t, a2av0.Task{Status: e.Status}))
		case *a2av0.TaskArtifactUpdateEvent:
			b.WriteString(taskSays(t, a2av0.Task{Artifacts: []a2av0.Artifact{e.Artifact}}))
		}
	}
	return b.String()
}

// noVoiceKeys fails when raw mentions the voice extension.
func noVoiceKeys(t *testing.T, what, raw string) {
	t.Helper()
	if strings.Contains(raw, "urn:a2a-connector:voice") {
		t.Errorf("%s carries voice metadata without activation: %s", what, raw)
	}
}

func TestVoiceCard(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		uri            string
		wantExtensions []any
		wantSkills     []string
	}{
		{
			name:       "without_the_extension_the_guides_card",
			wantSkills: []string{"ai-repeat", "ai-calculate", "ai-count", "ai-flash", "ai-coach"},
		},
		{
			name: "a_custom_uri_is_declared_not_required_with_the_voice_skills",
			uri:  "urn:example:voice:v9",
			wantExtensions: []any{map[string]any{
				"uri": "urn:example:voice:v9", "required": false,
				"description": "Voice turns: reads the input kind (speech, text, DTMF, no input), the interruption and the channel; answers with how to collect the next input, replies that must not be interrupted, and hand-offs (escalate, end of conversation).",
			}},
			wantSkills: []string{"ai-repeat", "ai-calculate", "ai-count", "ai-flash", "ai-coach", "ai-balance", "ai-terms", "ai-handoff"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := getCard(t, newFixture(t, Options{VoiceExtension: tt.uri}), CardPathV03)
			want := tt.wantExtensions
			if want == nil {
				want = []any{}
			}
			if diff := cmp.Diff(want, c.Capabilities.Extensions); diff != "" {
				t.Errorf("extensions (-want +got):\n%s", diff)
			}
			var ids []string
			for _, s := range c.Skills {
				ids = append(ids, s.ID)
			}
			if diff := cmp.Diff(tt.wantSkills, ids); diff != "" {
				t.Errorf("skills (-want +got):\n%s", diff)
			}
		})
	}
}

// TestVoice_activation sends a no-input turn whose text is "1加2": an activated turn reads the
// metadata and reprompts, any other answers the text and says nothing voice-specific.
func TestVoice_activation(t *testing.T) {
	t.Parallel()
	const custom = "urn:example:voice:v9"
	noInput := func(uri string) map[string]any {
		return map[string]any{uri + "/input": map[string]any{"kind": "noInput", "silenceMs": 6000}}
	}
	tests := []struct {
		name      string
		agentURI  string
		header    http.Header
		md        map[string]any
		activated bool
		// wantReprompt: the metadata was read (else the text was answered).
		wantReprompt bool
	}{
		{name: "x_a2a_extensions", agentURI: VoiceExtensionURI, header: activation(), md: noInput(VoiceExtensionURI), activated: true, wantReprompt: true},
		{name: "a2a_extensions_in_a_list", agentURI: VoiceExtensionURI, header: http.Header{"A2a-Extensions": {"urn:other:x, " + VoiceExtensionURI}}, md: noInput(VoiceExtensionURI), activated: true, wantReprompt: true},
		{name: "one_value_per_uri", agentURI: VoiceExtensionURI, header: http.Header{"A2a-Extensions": {"urn:other:x", VoiceExtensionURI}}, md: noInput(VoiceExtensionURI), activated: true, wantReprompt: true},
		{name: "custom_uri_and_its_keys", agentURI: custom, header: http.Header{"X-A2a-Extensions": {custom}}, md: noInput(custom), activated: true, wantReprompt: true},
		{name: "keys_of_another_uri_are_not_read", agentURI: custom, header: http.Header{"X-A2a-Extensions": {custom}}, md: noInput(VoiceExtensionURI), activated: true},
		{name: "malformed_input_is_ignored", agentURI: VoiceExtensionURI, header: activation(), md: map[string]any{voiceKey("input"): "noInput"}, activated: true},
		{name: "no_header", agentURI: VoiceExtensionURI, md: noInput(VoiceExtensionURI)},
		{name: "another_uri_only", agentURI: VoiceExtensionURI, header: http.Header{"X-A2a-Extensions": {"urn:other:x"}}, md: noInput(VoiceExtensionURI)},
		{name: "agent_without_the_extension", header: activation(), md: noInput(VoiceExtensionURI)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, Options{VoiceExtension: tt.agentURI})
			task, raw := f.sendTurn(t, utterance{text: "1加2", md: tt.md}, tt.header)
			got := statusText(task.Status) + taskText(task)
			want := "1与2相加等于3"
			if tt.wantReprompt {
				want = "您还在吗？请问有什么可以帮您？"
			}
			if got != want {
				t.Errorf("answer %q (%s), want %q", got, task.Status.State, want)
			}
			if !tt.activated {
				noVoiceKeys(t, "answer", raw)
			}
		})
	}
}

func TestVoice_balance_PIN_by_DTMF(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                    string
		first, locale           string
		wantQuestion, wantAgain string
		wantBalance             string
	}{
		{
			name: "english", first: "check my balance", locale: "en-US",
			wantQuestion: "Please type your 6-digit PIN on the keypad, then press the pound key.",
			wantAgain:    "A PIN has exactly 6 digits. Please type your 6-digit PIN again, then press the pound key.",
			wantBalance:  "Thank you. Your balance is 1,024.00 yuan.",
		},
		{
			name: "chinese", first: "帮我查余额", locale: "zh-CN",
			wantQuestion: "请用电话按键输入您的6位密码，以井号键结束。",
			wantAgain:    "密码应为6位数字。请重新输入您的6位密码，以井号键结束。",
			wantBalance:  "密码正确。您的账户余额为1,024.00元。",
		},
		{
			name: "the_channel_locale_decides_the_language_of_digits", first: "查余额", locale: "en-GB",
			wantQuestion: "请用电话按键输入您的6位密码，以井号键结束。",
			wantAgain:    "A PIN has exactly 6 digits. Please type your 6-digit PIN again, then press the pound key.",
			wantBalance:  "Thank you. Your balance is 1,024.00 yuan.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newVoiceFixture(t)
			// The question, by stream as the connector sends to a streaming agent.
			evs, _ := f.streamTurn(t, utterance{text: tt.first, md: channelMD(tt.locale)}, activation())
			if diff := cmp.Diff([]string{"task:submitted", "status:input-required:final"}, shape(evs)); diff != "" {
				t.Fatalf("question shape (-want +got):\n%s", diff)
			}
			asked := finalStatus(t, evs)
			if got := statusText(asked.Status); got != tt.wantQuestion {
				t.Errorf("question %q, want %q", got, tt.wantQuestion)
			}
			if diff := cmp.Diff(wantPINExpect, statusMeta(asked.Status, "expect")); diff != "" {
				t.Errorf("expect (-want +got):\n%s", diff)
			}

			// Four digits (collection timed out): asked again, collected the same way.
			again, _ := f.sendTurn(t, utterance{text: "2048", taskID: asked.TaskID, md: merge(dtmfMD("2048"), channelMD(tt.locale))}, activation())
			if again.Status.State != a2av0.TaskStateInputRequired || statusText(again.Status) != tt.wantAgain {
				t.Errorf("wrong length: %s %q, want input-required %q", again.Status.State, statusText(again.Status), tt.wantAgain)
			}
			if diff := cmp.Diff(wantPINExpect, statusMeta(again.Status, "expect")); diff != "" {
				t.Errorf("expect after a wrong length (-want +got):\n%s", diff)
			}
			if said := taskSays(t, again); strings.Contains(said, "2048") {
				t.Errorf("the answer echoes the digits: %s", said)
			}

			// Six digits complete the same task; the digits are never said back.
			evs, _ = f.streamTurn(t, utterance{text: "204816", taskID: asked.TaskID, md: merge(dtmfMD("204816"), channelMD(tt.locale))}, activation())
			if diff := cmp.Diff([]string{"task:working", "artifact:last", "status:completed:final"}, shape(evs)); diff != "" {
				t.Fatalf("answer shape (-want +got):\n%s", diff)
			}
			if got := streamedText(t, evs); got != tt.wantBalance {
				t.Errorf("answer %q, want %q", got, tt.wantBalance)
			}
			if diff := cmp.Diff(wantComplete, statusMeta(finalStatus(t, evs).Status, "finish")); diff != "" {
				t.Errorf("finish (-want +got):\n%s", diff)
			}
			if said := eventsSay(t, evs); strings.Contains(said, "204816") {
				t.Errorf("the answer echoes the PIN: %s", said)
			}
		})
	}
}

// TestVoice_DTMF_digits_come_from_the_metadata: on an activated DTMF turn the input's digits are
// the PIN, whatever the text part says (the mirror of TestVoice_without_activation).
func TestVoice_DTMF_digits_come_from_the_metadata(t *testing.T) {
	t.Parallel()
	f := newVoiceFixture(t)
	asked, _ := f.sendTurn(t, utterance{text: "check my balance"}, activation())
	done, _ := f.sendTurn(t, utterance{text: "2048", taskID: asked.ID, md: dtmfMD("204816#")}, activation())
	if got := taskText(done); got != "Thank you. Your balance is 1,024.00 yuan." {
		t.Errorf("answer %q (%s), want the balance: six digits and the end key", got, done.Status.State)
	}
}

// TestVoice_without_activation runs every voice skill on an agent that declares the extension,
// without the activation header but with voice metadata in the messages: the metadata is not
// read, nothing voice-specific is answered, and digits are the text's.
func TestVoice_without_activation(t *testing.T) {
	t.Parallel()
	f := newVoiceFixture(t)

	asked, raw := f.sendTurn(t, utterance{text: "check my balance", md: channelMD("en-US")}, nil)
	noVoiceKeys(t, "question", raw)
	if asked.Status.State != a2av0.TaskStateInputRequired || asked.Status.Message.Metadata != nil {
		t.Errorf("question: %s with metadata %v, want input-required without", asked.Status.State, asked.Status.Message.Metadata)
	}
	// The DTMF member says six digits, the text four: the text counts.
	again, raw := f.sendTurn(t, utterance{text: "2048", taskID: asked.ID, md: dtmfMD("204816")}, nil)
	noVoiceKeys(t, "second question", raw)
	if again.Status.State != a2av0.TaskStateInputRequired {
		t.Errorf("four digits as text: %s, want input-required (asked again)", again.Status.State)
	}
	done, raw := f.sendTurn(t, utterance{text: "my PIN is 204 816", taskID: asked.ID}, nil)
	noVoiceKeys(t, "balance", raw)
	if done.Status.State != a2av0.TaskStateCompleted || taskText(done) != "Thank you. Your balance is 1,024.00 yuan." || done.Status.Message != nil {
		t.Errorf("six digits as text: %s %q, status message %v; want completed with the balance and no status message", done.Status.State, taskText(done), done.Status.Message)
	}

	evs, raw := f.streamTurn(t, utterance{text: "read me the terms"}, nil)
	noVoiceKeys(t, "terms", raw)
	if got := finalStatus(t, evs).Status.State; got != a2av0.TaskStateCompleted {
		t.Errorf("terms: %s, want completed", got)
	}

	human, raw := f.sendTurn(t, utterance{text: "I want to talk to a human"}, nil)
	noVoiceKeys(t, "hand-off", raw)
	if human.Status.State != a2av0.TaskStateCompleted || statusText(human.Status) != "Sure, I'm passing you to a colleague now. Please hold." {
		t.Errorf("hand-off: %s %q", human.Status.State, statusText(human.Status))
	}

	// Silence and an interruption in the metadata are not read: the text is answered.
	plain, raw := f.sendTurn(t, utterance{text: "1加2", md: merge(noInputMD(), interruptionMD("m-x", ""))}, nil)
	noVoiceKeys(t, "sum", raw)
	if got := taskText(plain); got != "1与2相加等于3" || plain.Status.Message != nil {
		t.Errorf("sum: %q with status message %v, want %q alone", got, plain.Status.Message, "1与2相加等于3")
	}
}

func TestVoice_terms_must_not_be_interrupted(t *testing.T) {
	t.Parallel()
	f := newVoiceFixture(t)
	for _, tt := range []struct{ name, text, wantNotice string }{
		{name: "english", text: "read me the terms", wantNotice: "Here are the terms of service; please listen to the end."},
		{name: "chinese", text: "读一下服务条款", wantNotice: "以下是服务条款，请完整收听。"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			evs, _ := f.streamTurn(t, utterance{text: tt.text}, activation())
			want := []string{"task:submitted", "status:working", "artifact", "artifact", "artifact", "artifact", "artifact:last", "status:completed:final"}
			if diff := cmp.Diff(want, shape(evs)); diff != "" {
				t.Fatalf("shape (-want +got):\n%s", diff)
			}
			first := evs[1].(*a2av0.TaskStatusUpdateEvent)
			if got := statusText(first.Status); got != tt.wantNotice {
				t.Errorf("notice %q, want %q", got, tt.wantNotice)
			}
			if diff := cmp.Diff(map[string]any{"bargeIn": false}, statusMeta(first.Status, "speech")); diff != "" {
				t.Errorf("speech on the first status-update (-want +got):\n%s", diff)
			}
			for _, ev := range evs[2:7] {
				if md := ev.(*a2av0.TaskArtifactUpdateEvent).Artifact.Metadata; md != nil {
					t.Errorf("artifact metadata %v, want none", md)
				}
			}
			if diff := cmp.Diff(wantComplete, statusMeta(finalStatus(t, evs).Status, "finish")); diff != "" {
				t.Errorf("finish (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVoice_reprompt_on_silence(t *testing.T) {
	t.Parallel()
	f := newVoiceFixture(t)
	t.Run("held_question_is_asked_again_collected_the_same_way", func(t *testing.T) {
		t.Parallel()
		asked, _ := f.sendTurn(t, utterance{text: "查余额"}, activation())
		for i := range 2 { // a second silence does not stack the prefix
			again, _ := f.sendTurn(t, utterance{taskID: asked.ID, md: merge(noInputMD(), channelMD("zh-CN"))}, activation())
			if got, want := statusText(again.Status), "您还在吗？请用电话按键输入您的6位密码，以井号键结束。"; again.Status.State != a2av0.TaskStateInputRequired || got != want {
				t.Errorf("silence %d: %s %q, want input-required %q", i+1, again.Status.State, got, want)
			}
			if diff := cmp.Diff(wantPINExpect, statusMeta(again.Status, "expect")); diff != "" {
				t.Errorf("silence %d: expect (-want +got):\n%s", i+1, diff)
			}
		}
		done, _ := f.sendTurn(t, utterance{text: "204816", taskID: asked.ID, md: dtmfMD("204816")}, activation())
		if got := taskText(done); got != "密码正确。您的账户余额为1,024.00元。" {
			t.Errorf("after the reprompts: %q", got)
		}
	})
	t.Run("without_a_question_it_asks_and_silence_is_no_sentence", func(t *testing.T) {
		t.Parallel()
		asked, raw := f.sendTurn(t, utterance{md: merge(noInputMD(), channelMD("en-US"))}, activation())
		if got, want := statusText(asked.Status), "Are you still there? What can I do for you?"; asked.Status.State != a2av0.TaskStateInputRequired || got != want {
			t.Errorf("fresh silence: %s %q, want input-required %q", asked.Status.State, got, want)
		}
		if strings.Contains(raw, voiceKey("expect")) {
			t.Errorf("fresh silence says how to collect input: %s", raw)
		}
		count, _ := f.sendTurn(t, utterance{text: "How many sentences have I said?", taskID: asked.ID}, activation())
		if got := taskText(count); got != "You have said 1 sentence in this conversation." {
			t.Errorf("count after a silence: %q", got)
		}
	})
}

func TestVoice_handoff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		before     string // an earlier turn in the context
		text       string
		holdBefore bool // the hand-off continues the earlier turn's held task
		wantText   string
		wantFinish map[string]any
	}{
		{
			name: "escalate_with_a_summary", before: "1加2", text: "I want to talk to a human",
			wantText:   "Sure, I'm passing you to a colleague now. Please hold.",
			wantFinish: map[string]any{"type": "escalate", "reason": "caller asked for a human", "summary": "Messages from the caller: 2. Topics: addition."},
		},
		{
			name: "转人工", text: "转人工",
			wantText:   "好的，正在为您转接人工客服，请稍候。",
			wantFinish: map[string]any{"type": "escalate", "reason": "caller asked for a human", "summary": "来电者共说了1句话，没有其他话题。"},
		},
		{
			name: "人工_while_the_PIN_is_asked", before: "查余额", holdBefore: true, text: "人工",
			wantText:   "好的，正在为您转接人工客服，请稍候。",
			wantFinish: map[string]any{"type": "escalate", "reason": "caller asked for a human", "summary": "来电者共说了2句话。话题：查余额。"},
		},
		{
			name: "goodbye_ends_the_conversation", text: "再见",
			wantText:   "感谢来电，再见！",
			wantFinish: map[string]any{"type": "endConversation", "reason": "caller said goodbye", "summary": "来电者共说了1句话，没有其他话题。"},
		},
	}
	f := newVoiceFixture(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			u := utterance{text: tt.text, contextID: uuid.NewString()}
			if tt.before != "" {
				first, _ := f.sendTurn(t, utterance{text: tt.before, contextID: u.contextID}, activation())
				if tt.holdBefore {
					u.taskID = first.ID
				}
			}
			task, _ := f.sendTurn(t, u, activation())
			if task.Status.State != a2av0.TaskStateCompleted || statusText(task.Status) != tt.wantText || taskText(task) != "" {
				t.Errorf("%s, status %q, artifacts %q; want completed, status %q alone", task.Status.State, statusText(task.Status), taskText(task), tt.wantText)
			}
			if diff := cmp.Diff(tt.wantFinish, statusMeta(task.Status, "finish")); diff != "" {
				t.Errorf("finish (-want +got):\n%s", diff)
			}
		})
	}
}

// TestVoice_plain_turns_finish_complete: an activated turn that completes says so; the reply
// stays in the artifacts, the status message has only the finish.
func TestVoice_plain_turns_finish_complete(t *testing.T) {
	t.Parallel()
	f := newVoiceFixture(t)
	task, _ := f.sendTurn(t, utterance{text: "1加2"}, activation())
	if taskText(task) != "1与2相加等于3" || statusText(task.Status) != "" {
		t.Errorf("artifacts %q status %q, want the sum and an empty status text", taskText(task), statusText(task.Status))
	}
	if diff := cmp.Diff(wantComplete, statusMeta(task.Status, "finish")); diff != "" {
		t.Errorf("finish (-want +got):\n%s", diff)
	}
	rejected, _ := f.sendTurn(t, utterance{text: "Will it rain today?"}, activation())
	if rejected.Status.State != a2av0.TaskStateRejected || statusMeta(rejected.Status, "finish") != nil {
		t.Errorf("rejected: %s with finish %v, want no finish (the platform handles the turn)", rejected.Status.State, statusMeta(rejected.Status, "finish"))
	}
}

// TestVoice_interruption: each case runs a long coach reply and a short flash reply in its own
// context, then a turn reporting that one of them was cut.
func TestVoice_interruption(t *testing.T) {
	t.Parallel()
	coachEN := strings.Join(coachChunks(en, "basketball"), "")
	coachZH := strings.Join(coachChunks(zh, "篮球"), "")
	firstParagraphEN := strings.Join(coachChunks(en, "basketball")[:3], "")
	tests := []struct {
		name   string
		coach  string // the long reply's request
		cut    string // "coach", "flash" or an unknown messageId
		heard  string
		text   string
		header http.Header
		want   string // status message and artifacts
	}{
		{
			name: "cut_after_the_first_sentence", coach: "how do I play basketball", cut: "coach",
			heard: "Good basketball starts with dribbling.", text: "flash", header: activation(),
			want: "You stopped me after “…starts with dribbling”. OK, flashing now",
		},
		{
			name: "chinese", coach: "如何打好篮球", cut: "coach",
			heard: "打好篮球，先练好运球。", text: "闪光", header: activation(),
			want: "您在我说到“打好篮球，先练好运球”时打断了我。好的，正在闪光",
		},
		{
			name: "heard_everything_is_not_acknowledged", coach: "how do I play basketball", cut: "coach",
			heard: coachEN, text: "flash", header: activation(),
			want: "OK, flashing now",
		},
		{
			// As long as the flash reply: only the coach reply, found by messageId, was cut.
			name: "the_messageId_names_the_reply_not_the_context", coach: "how do I play basketball", cut: "coach",
			heard: "OK, flashing now", text: "flash", header: activation(),
			want: "You stopped me after “OK, flashing now”. OK, flashing now",
		},
		{
			// An unknown messageId falls back to the context's last reply, heard in full.
			name: "unknown_messageId_falls_back_to_the_context", coach: "how do I play basketball", cut: "m-unknown",
			heard: "OK, flashing now", text: "flash", header: activation(),
			want: "OK, flashing now",
		},
		{
			name: "nothing_heard", coach: "how do I play basketball", cut: "coach",
			heard: "", text: "flash", header: activation(),
			want: "You stopped me before I said anything. OK, flashing now",
		},
		{
			name: "go_on_resumes_where_it_was_cut", coach: "how do I play basketball", cut: "coach",
			heard: firstParagraphEN, text: "go on", header: activation(),
			want: "Sure, picking up where you stopped me: " + strings.TrimSpace(strings.TrimPrefix(coachEN, firstParagraphEN)),
		},
		{
			name: "继续", coach: "如何打好篮球", cut: "coach",
			heard: "打好篮球，先练好运球。", text: "继续", header: activation(),
			want: "好的，接着刚才说：" + strings.TrimPrefix(coachZH, "打好篮球，先练好运球。"),
		},
		{
			name: "a_question_starts_with_the_acknowledgement", coach: "how do I play basketball", cut: "coach",
			heard: "Good basketball starts with dribbling.", text: "check my balance", header: activation(),
			want: "You stopped me after “…starts with dribbling”. Please type your 6-digit PIN on the keypad, then press the pound key.",
		},
		{
			name: "not_activated_the_interruption_is_not_read", coach: "how do I play basketball", cut: "coach",
			heard: "Good basketball starts with dribbling.", text: "flash",
			want: "OK, flashing now",
		},
	}
	f := newVoiceFixture(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctxID := uuid.NewString()
			ids := map[string]string{"coach": uuid.NewString(), "flash": uuid.NewString()}
			evs, _ := f.streamTurn(t, utterance{text: tt.coach, contextID: ctxID, messageID: ids["coach"]}, activation())
			if got := finalStatus(t, evs).Status.State; got != a2av0.TaskStateCompleted {
				t.Fatalf("coach: %s", got)
			}
			f.sendTurn(t, utterance{text: "flash", contextID: ctxID, messageID: ids["flash"]}, activation())
			cut, ok := ids[tt.cut]
			if !ok {
				cut = tt.cut
			}
			task, _ := f.sendTurn(t, utterance{text: tt.text, contextID: ctxID, md: interruptionMD(cut, tt.heard)}, tt.header)
			if got := statusText(task.Status) + taskText(task); got != tt.want {
				t.Errorf("answer\n%q, want\n%q", got, tt.want)
			}
		})
	}
}

// TestVoice_reply_canceled_on_barge_in: a platform that cancels the task when the caller talks
// over it reports what was heard of the chunks sent so far; the agent remembers those.
func TestVoice_reply_canceled_on_barge_in(t *testing.T) {
	t.Parallel()
	// A pause no test waits out: the task is canceled after the first chunk.
	f := newFixture(t, Options{VoiceExtension: VoiceExtensionURI, ChunkDelay: time.Hour})
	ctxID, coachID := uuid.NewString(), uuid.NewString()
	coach := utterance{text: "how do I play basketball", contextID: ctxID, messageID: coachID}
	s := f.openStreamWith(t, t.Context(), StreamPath, a2av0.MethodMessageStream, coach.params(), activation())
	first, ok := s.next().(*a2av0.Task)
	if !ok {
		t.Fatal("first event is not the task")
	}
	art, ok := s.next().(*a2av0.TaskArtifactUpdateEvent)
	if !ok {
		t.Fatal("second event is not an artifact-update")
	}
	sent := strings.TrimSpace(art.Artifact.Parts[0].Text)
	f.task(t, a2av0.MethodTasksCancel, a2av0.TaskIDParams{ID: first.ID})
	if st := finalStatus(t, s.all()); st.Status.State != a2av0.TaskStateCanceled {
		t.Fatalf("coach ended %s, want canceled", st.Status.State)
	}
	for _, tt := range []struct{ heard, want string }{
		{heard: sent, want: "OK, flashing now"}, // all that was sent
		{heard: "Good basketball", want: "You stopped me after “Good basketball”. OK, flashing now"},
	} {
		task, _ := f.sendTurn(t, utterance{text: "flash", contextID: ctxID, md: interruptionMD(coachID, tt.heard)}, activation())
		if got := statusText(task.Status) + taskText(task); got != tt.want {
			t.Errorf("heard %q: answer %q, want %q", tt.heard, got, tt.want)
		}
	}
}

// TestVoice_a_cut_question: a reply without chunks (the PIN question) is its status message;
// the answer to it knows how much of it was heard.
func TestVoice_a_cut_question(t *testing.T) {
	t.Parallel()
	f := newVoiceFixture(t)
	const question = "Please type your 6-digit PIN on the keypad, then press the pound key."
	for _, tt := range []struct{ name, heard, want string }{
		{name: "heard_in_full", heard: question, want: "Thank you. Your balance is 1,024.00 yuan."},
		{name: "cut", heard: "Please type your", want: "You stopped me after “Please type your”. Thank you. Your balance is 1,024.00 yuan."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			askID := uuid.NewString()
			asked, _ := f.sendTurn(t, utterance{text: "check my balance", messageID: askID}, activation())
			done, _ := f.sendTurn(t, utterance{text: "204816", taskID: asked.ID, md: merge(dtmfMD("204816"), interruptionMD(askID, tt.heard))}, activation())
			if got := taskText(done); got != tt.want {
				t.Errorf("answer %q, want %q", got, tt.want)
			}
		})
	}
}

// TestVoice_reprompt_after_an_acknowledged_question repeats the question, not the
// acknowledgement that led it.
func TestVoice_reprompt_after_an_acknowledged_question(t *testing.T) {
	t.Parallel()
	f := newVoiceFixture(t)
	ctxID := uuid.NewString()
	f.sendTurn(t, utterance{text: "flash", contextID: ctxID}, activation())
	asked, _ := f.sendTurn(t, utterance{text: "check my balance", contextID: ctxID, md: interruptionMD("", "OK")}, activation())
	if got := statusText(asked.Status); !strings.HasPrefix(got, "You stopped me after “OK”.") {
		t.Fatalf("question %q, want it to start with the acknowledgement", got)
	}
	again, _ := f.sendTurn(t, utterance{taskID: asked.ID, md: noInputMD()}, activation())
	if got, want := statusText(again.Status), "Are you still there? Please type your 6-digit PIN on the keypad, then press the pound key."; got != want {
		t.Errorf("reprompt %q, want %q", got, want)
	}
}

func TestChooseSkill_voice(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		text        string
		voiceSkills bool
		want        string
	}{
		{name: "转人工", text: "转人工", voiceSkills: true, want: skillHandoff},
		{name: "人工_alone", text: "人工", voiceSkills: true, want: skillHandoff},
		{name: "artificial_intelligence_is_no_human", text: "人工智能是什么", voiceSkills: true, want: ""},
		{name: "an_agent", text: "Let me speak to an agent", voiceSkills: true, want: skillHandoff},
		{name: "goodbye", text: "OK goodbye", voiceSkills: true, want: skillHandoff},
		{name: "repeat_wins", text: "重复：转人工", voiceSkills: true, want: skillRepeat},
		{name: "balance", text: "check my balance", voiceSkills: true, want: skillBalance},
		{name: "查余额", text: "查余额", voiceSkills: true, want: skillBalance},
		{name: "terms", text: "read me the terms", voiceSkills: true, want: skillTerms},
		{name: "条款", text: "读一下服务条款", voiceSkills: true, want: skillTerms},
		{name: "without_the_extension_no_balance", text: "check my balance", want: ""},
		{name: "without_the_extension_no_handoff", text: "转人工", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := chooseSkill(tt.text, tt.voiceSkills); got != tt.want {
				t.Errorf("chooseSkill(%q, %v) = %q, want %q", tt.text, tt.voiceSkills, got, tt.want)
			}
		})
	}
}

func TestFallbackLang(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   voiceInput
		def  lang
		want lang
	}{
		{name: "dtmf_zh_CN", in: voiceInput{kind: inputDTMF, locale: "zh-CN"}, def: en, want: zh},
		{name: "dtmf_zh_Hant_TW", in: voiceInput{kind: inputDTMF, locale: "zh-Hant-TW"}, def: en, want: zh},
		{name: "no_input_en_US", in: voiceInput{kind: inputNoInput, locale: "en-US"}, def: zh, want: en},
		{name: "no_input_de", in: voiceInput{kind: inputNoInput, locale: "de"}, def: zh, want: en},
		{name: "no_locale_keeps_the_default", in: voiceInput{kind: inputDTMF}, def: en, want: en},
		{name: "speech_keeps_the_default", in: voiceInput{kind: inputSpeech, locale: "en-US"}, def: zh, want: zh},
		{name: "zhuang_is_not_chinese", in: voiceInput{kind: inputDTMF, locale: "za"}, def: zh, want: en},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.in.fallbackLang(tt.def); got != tt.want {
				t.Errorf("fallbackLang = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSpokenReply_is_bounded(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("长", maxSaidBytes) // 3 bytes a rune
	s := newSpokenReply(long)
	if !s.truncated || s.runes != maxSaidBytes || len(s.text) > maxSaidBytes || !utf8.ValidString(s.text) {
		t.Errorf("truncated %v runes %d len %d valid %v; want a valid cut text and the full length", s.truncated, s.runes, len(s.text), utf8.ValidString(s.text))
	}
	// A cut reply is not resumed: its rest is unknown.
	in := turnInput{text: "go on", lang: en, said: s, voice: voiceInput{interruption: &interruption{heard: "长"}}}
	if rep, ok := resume(in); ok {
		t.Errorf("resumed a truncated reply: %q", rep.chunks)
	}
}

func TestLastRunes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{s: "abc", n: 3, want: "abc"},
		{s: "abcdef", n: 3, want: "…def"},
		{s: "一二三四五", n: 3, want: "…三四五"},
		{s: "ab cd efgh", n: 6, want: "…efgh"}, // no word is cut in two
		{s: "abcdefgh", n: 3, want: "…fgh"},    // unless there is no word boundary
	} {
		if got := lastRunes(tt.s, tt.n); got != tt.want {
			t.Errorf("lastRunes(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}
