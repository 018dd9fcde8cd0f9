package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/a2a-connector/a2a-connector/internal/a2a"
	"github.com/a2a-connector/a2a-connector/internal/a2a/a2av0"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// wireCard is the card as a client decodes it.
type wireCard struct {
	Name            string `json:"name"`
	ProtocolVersion string `json:"protocolVersion"`
	URL             string `json:"url"`
	Version         string `json:"version"`
	Capabilities    struct {
		Streaming  bool  `json:"streaming"`
		Extensions []any `json:"extensions"`
	} `json:"capabilities"`
	Security           []string                   `json:"security"`
	SecuritySchemes    map[string]json.RawMessage `json:"securitySchemes"`
	DefaultInputModes  []string                   `json:"defaultInputModes"`
	DefaultOutputModes []string                   `json:"defaultOutputModes"`
	Skills             []struct {
		ID       string   `json:"id"`
		Name     string   `json:"name"`
		Examples []string `json:"examples"`
	} `json:"skills"`
}

func getCard(t *testing.T, f *fixture, path string) wireCard {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, f.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: HTTP %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var c wireCard
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCard(t *testing.T) {
	t.Parallel()
	skills := []string{"ai-repeat", "ai-calculate", "ai-count", "ai-flash", "ai-coach"}
	tests := []struct {
		name         string
		opts         Options
		wantURL      func(srvURL string) string
		wantSecurity []string
		wantSchemes  bool
	}{
		{
			name:         "without_key_the_url_comes_from_the_request_and_security_is_empty",
			wantURL:      func(srvURL string) string { return srvURL + "/a2a/demo/v1" },
			wantSecurity: []string{},
		},
		{
			name:         "public_url_and_api_key_are_declared",
			opts:         Options{PublicURL: "https://agent.example.com/", APIKey: "k"},
			wantURL:      func(string) string { return "https://agent.example.com/a2a/demo/v1" },
			wantSecurity: []string{"apiKey"},
			wantSchemes:  true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, tt.opts)
			for _, path := range []string{"/.well-known/agent.json", "/.well-known/agent-card.json"} {
				c := getCard(t, f, path)
				if c.Name != "超级AI助理" || c.ProtocolVersion != "0.2.5" || c.Version != "1.0.0" || !c.Capabilities.Streaming {
					t.Errorf("%s: name %q protocol %q version %q streaming %v", path, c.Name, c.ProtocolVersion, c.Version, c.Capabilities.Streaming)
				}
				if got, want := c.URL, tt.wantURL(f.srv.URL); got != want {
					t.Errorf("%s: url %q, want %q", path, got, want)
				}
				if diff := cmp.Diff(tt.wantSecurity, c.Security); diff != "" {
					t.Errorf("%s: security (-want +got):\n%s", path, diff)
				}
				if got := c.SecuritySchemes["apiKey"] != nil; got != tt.wantSchemes {
					t.Errorf("%s: securitySchemes.apiKey present = %v, want %v", path, got, tt.wantSchemes)
				}
				if diff := cmp.Diff([]string{"text/plain"}, c.DefaultInputModes); diff != "" {
					t.Errorf("%s: defaultInputModes (-want +got):\n%s", path, diff)
				}
				if diff := cmp.Diff([]string{"text/plain"}, c.DefaultOutputModes); diff != "" {
					t.Errorf("%s: defaultOutputModes (-want +got):\n%s", path, diff)
				}
				var ids []string
				for _, s := range c.Skills {
					ids = append(ids, s.ID)
					if s.Name == "" || len(s.Examples) == 0 {
						t.Errorf("%s: skill %s lacks name or examples", path, s.ID)
					}
				}
				if diff := cmp.Diff(skills, ids); diff != "" {
					t.Errorf("%s: skill ids (-want +got):\n%s", path, diff)
				}
			}
		})
	}
}

// skillCases are the one-turn skills, each tried by message/send and by message/stream.
var skillCases = []struct {
	name      string
	text      string
	wantState a2av0.TaskState
	wantText  string // the artifacts' text
	// wantShape is the stream's event shape.
	wantShape []string
	// wantStatus is a prefix of the final status message.
	wantStatus string
}{
	{
		name: "repeat_chinese", text: "重复我说的话：今天天气很好", wantState: a2av0.TaskStateCompleted, wantText: "今天天气很好",
		wantShape: []string{"task:submitted", "artifact", "artifact", "artifact:last", "status:completed:final"},
	},
	{
		name: "repeat_english", text: "Repeat after me: the weather is nice today", wantState: a2av0.TaskStateCompleted, wantText: "the weather is nice today",
		wantShape: []string{"task:submitted", "artifact", "artifact", "artifact:last", "status:completed:final"},
	},
	{
		name: "add_chinese", text: "1与2相加是多少", wantState: a2av0.TaskStateCompleted, wantText: "1与2相加等于3",
		wantShape: []string{"task:submitted", "artifact:last", "status:completed:final"},
	},
	{
		name: "add_english_decimals", text: "what is 1.5 plus 2.25", wantState: a2av0.TaskStateCompleted, wantText: "1.5 plus 2.25 equals 3.75",
		wantShape: []string{"task:submitted", "artifact:last", "status:completed:final"},
	},
	{
		name: "count_first_sentence", text: "数一下我说了几句话", wantState: a2av0.TaskStateCompleted, wantText: "你在这次对话中一共说了1句话。",
		wantShape: []string{"task:submitted", "artifact:last", "status:completed:final"},
	},
	{
		name: "count_english", text: "Count my sentences", wantState: a2av0.TaskStateCompleted, wantText: "You have said 1 sentence in this conversation.",
		wantShape: []string{"task:submitted", "artifact:last", "status:completed:final"},
	},
	{
		name: "flash_chinese", text: "进行闪光", wantState: a2av0.TaskStateCompleted, wantText: "好的，正在闪光",
		wantShape: []string{"task:submitted", "artifact:last", "status:completed:final"},
	},
	{
		name: "flash_english", text: "flash the lights", wantState: a2av0.TaskStateCompleted, wantText: "OK, flashing now",
		wantShape: []string{"task:submitted", "artifact:last", "status:completed:final"},
	},
	{
		name: "coach_basketball", text: "如何打好蓝球", wantState: a2av0.TaskStateCompleted, wantText: strings.Join(coachChunks(zh, "篮球"), ""),
		wantShape: append(append([]string{"task:submitted"}, repeatString("artifact", 8)...), "artifact:last", "status:completed:final"),
	},
	{
		name: "coach_football_english", text: "How do I get better at football?", wantState: a2av0.TaskStateCompleted, wantText: strings.Join(coachChunks(en, "football"), ""),
		wantShape: append(append([]string{"task:submitted"}, repeatString("artifact", 8)...), "artifact:last", "status:completed:final"),
	},
	{
		name: "anything_else_is_rejected", text: "今天会下雨吗?", wantState: a2av0.TaskStateRejected, wantStatus: "抱歉",
		wantShape: []string{"task:submitted", "status:rejected:final"},
	},
	{
		name: "anything_else_is_rejected_in_english", text: "Will it rain today?", wantState: a2av0.TaskStateRejected, wantStatus: "Sorry",
		wantShape: []string{"task:submitted", "status:rejected:final"},
	},
}

func repeatString(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestSkills_send(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	for _, tt := range skillCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			task := f.send(t, tt.text, "", "")
			if task.ID == "" || task.ContextID == "" {
				t.Errorf("task id %q context %q: both must be generated", task.ID, task.ContextID)
			}
			if task.Status.State != tt.wantState {
				t.Errorf("state %s, want %s (status %q)", task.Status.State, tt.wantState, statusText(task.Status))
			}
			if got := taskText(task); got != tt.wantText {
				t.Errorf("text %q, want %q", got, tt.wantText)
			}
			if got := statusText(task.Status); !strings.HasPrefix(got, tt.wantStatus) {
				t.Errorf("status message %q, want prefix %q", got, tt.wantStatus)
			}
		})
	}
}

func TestSkills_stream(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{ChunkDelay: time.Millisecond})
	for _, tt := range skillCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			evs := f.stream(t, tt.text, "", "")
			if diff := cmp.Diff(tt.wantShape, shape(evs)); diff != "" {
				t.Fatalf("event shape (-want +got):\n%s", diff)
			}
			first := evs[0].(*a2av0.Task)
			for _, ev := range evs[1:] {
				var taskID, contextID string
				switch e := ev.(type) {
				case *a2av0.TaskArtifactUpdateEvent:
					taskID, contextID = e.TaskID, e.ContextID
				case *a2av0.TaskStatusUpdateEvent:
					taskID, contextID = e.TaskID, e.ContextID
				}
				if taskID != first.ID || contextID != first.ContextID {
					t.Errorf("event of task %q context %q, want %q %q", taskID, contextID, first.ID, first.ContextID)
				}
			}
			if got := streamedText(t, evs); got != tt.wantText {
				t.Errorf("streamed text %q, want %q", got, tt.wantText)
			}
			if got := statusText(finalStatus(t, evs).Status); !strings.HasPrefix(got, tt.wantStatus) {
				t.Errorf("status message %q, want prefix %q", got, tt.wantStatus)
			}
			// The stored task agrees with the stream.
			stored := f.task(t, a2av0.MethodTasksGet, a2av0.TaskQueryParams{ID: first.ID})
			if stored.Status.State != tt.wantState || taskText(stored) != tt.wantText {
				t.Errorf("tasks/get: state %s text %q, want %s %q", stored.Status.State, taskText(stored), tt.wantState, tt.wantText)
			}
		})
	}
}

// TestStream_chunks_are_flushed_as_they_are_made reads the first coach chunk while the agent is
// still producing the rest: proof that events are not buffered until the end.
func TestStream_chunks_are_flushed_as_they_are_made(t *testing.T) {
	t.Parallel()
	// A pause no test waits out: the task is cancelled once the point is made.
	f := newFixture(t, Options{ChunkDelay: time.Hour})
	s := f.openStream(t, t.Context(), StreamPath, a2av0.MethodMessageStream, userMessage("教我踢足球", "", ""))
	first, ok := s.next().(*a2av0.Task)
	if !ok {
		t.Fatal("first event is not the task")
	}
	if _, ok := s.next().(*a2av0.TaskArtifactUpdateEvent); !ok {
		t.Fatal("second event is not an artifact-update")
	}
	if got, _ := f.agent.Task(first.ID); got.Status.State != a2av0.TaskStateWorking {
		t.Errorf("after the first chunk the task is %s, want working (still producing)", got.Status.State)
	}
	f.task(t, a2av0.MethodTasksCancel, a2av0.TaskIDParams{ID: first.ID})
	if st := finalStatus(t, s.all()); st.Status.State != a2av0.TaskStateCanceled {
		t.Errorf("final state %s, want canceled", st.Status.State)
	}
}

func TestAdd_asks_for_numbers_then_completes_the_same_task(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		first, next  string
		wantQuestion string
		wantText     string
	}{
		{name: "chinese", first: "帮我算加法", next: "3和5", wantQuestion: "请告诉我要相加的两个数，例如：3和5", wantText: "3与5相加等于8"},
		{name: "english", first: "Please add two numbers for me", next: "3 and 5", wantQuestion: "Which two numbers should I add? For example: 3 and 5", wantText: "3 plus 5 equals 8"},
		{name: "one_number_is_kept_for_the_next_turn", first: "5加上一个数", next: "3", wantQuestion: "请告诉我要相加的两个数，例如：3和5", wantText: "5与3相加等于8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, Options{})
			// First turn by stream, as the connector does with this streaming agent.
			evs := f.stream(t, tt.first, "", "")
			if diff := cmp.Diff([]string{"task:submitted", "status:input-required:final"}, shape(evs)); diff != "" {
				t.Fatalf("first turn shape (-want +got):\n%s", diff)
			}
			asked := finalStatus(t, evs)
			if got := statusText(asked.Status); got != tt.wantQuestion {
				t.Errorf("question %q, want %q", got, tt.wantQuestion)
			}
			// Second turn continues the task.
			evs = f.stream(t, tt.next, asked.TaskID, asked.ContextID)
			if diff := cmp.Diff([]string{"task:working", "artifact:last", "status:completed:final"}, shape(evs)); diff != "" {
				t.Fatalf("second turn shape (-want +got):\n%s", diff)
			}
			if got := evs[0].(*a2av0.Task).ID; got != asked.TaskID {
				t.Errorf("second turn ran task %q, want the same task %q", got, asked.TaskID)
			}
			if got := streamedText(t, evs); got != tt.wantText {
				t.Errorf("answer %q, want %q", got, tt.wantText)
			}
			stored := f.task(t, a2av0.MethodTasksGet, a2av0.TaskQueryParams{ID: asked.TaskID})
			if n := len(stored.History); n != 3 { // user, agent question, user
				t.Errorf("history has %d messages, want 3", n)
			}
		})
	}
}

func TestAdd_continuation_by_send(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	asked := f.send(t, "帮我算加法", "", "")
	if asked.Status.State != a2av0.TaskStateInputRequired {
		t.Fatalf("state %s, want input-required", asked.Status.State)
	}
	still := f.send(t, "嗯", asked.ID, asked.ContextID)
	if still.Status.State != a2av0.TaskStateInputRequired || still.ID != asked.ID {
		t.Fatalf("without numbers: task %s state %s, want the same task still input-required", still.ID, still.Status.State)
	}
	done := f.send(t, "10和0.5", asked.ID, "")
	if done.ID != asked.ID || done.Status.State != a2av0.TaskStateCompleted || taskText(done) != "10与0.5相加等于10.5" {
		t.Fatalf("got task %s %s %q, want %s completed %q", done.ID, done.Status.State, taskText(done), asked.ID, "10与0.5相加等于10.5")
	}
}

func TestAdd_cancel_word_ends_the_question(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	asked := f.send(t, "帮我算加法", "", "")
	got := f.send(t, "算了", asked.ID, asked.ContextID)
	if got.Status.State != a2av0.TaskStateCanceled {
		t.Errorf("state %s, want canceled", got.Status.State)
	}
}

func TestContinuation_errors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	completed := f.send(t, "1加2", "", "")
	asked := f.send(t, "帮我算加法", "", "")
	tests := []struct {
		name     string
		params   a2av0.MessageSendParams
		wantCode int
	}{
		{name: "unknown_task", params: userMessage("3和5", "no-such-task", ""), wantCode: a2a.CodeTaskNotFound},
		{name: "completed_task", params: userMessage("3和5", completed.ID, ""), wantCode: a2a.CodeInvalidParams},
		{name: "task_of_another_context", params: userMessage("3和5", asked.ID, "other-context"), wantCode: a2a.CodeInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp := f.call(t, a2av0.MethodMessageSend, tt.params, nil)
			if resp.Error == nil || resp.Error.Code != tt.wantCode {
				t.Errorf("error %+v, want code %d", resp.Error, tt.wantCode)
			}
		})
	}
}

func TestCount_counts_every_user_message_of_the_context(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	first := f.send(t, "你好", "", "") // rejected, but still a sentence of the context
	ctxID := first.ContextID
	f.send(t, "重复：哈哈", "", ctxID)
	asked := f.send(t, "帮我算加法", "", ctxID)
	f.send(t, "3和5", asked.ID, ctxID)
	got := f.send(t, "数一下我说了几句话", "", ctxID)
	if got.ContextID != ctxID {
		t.Errorf("context %q, want %q reused", got.ContextID, ctxID)
	}
	if want := "你在这次对话中一共说了5句话。"; taskText(got) != want {
		t.Errorf("count %q, want %q", taskText(got), want)
	}
	other := f.send(t, "how many sentences did I say", "", "")
	if want := "You have said 1 sentence in this conversation."; taskText(other) != want {
		t.Errorf("new context: %q, want %q", taskText(other), want)
	}
	// A context id the agent has never seen is adopted.
	adopted := f.send(t, "count", "", "client-chosen")
	if adopted.ContextID != "client-chosen" {
		t.Errorf("context %q, want client-chosen", adopted.ContextID)
	}
}

func TestFlash_device_command_in_last_artifact_metadata(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	tests := []struct {
		name string
		text string
		want map[string]any
	}{
		{
			name: "defaults",
			text: "进行闪光",
			want: map[string]any{"commands": []any{map[string]any{"name": "flash", "params": map[string]any{"times": float64(3), "color": "white"}}}},
		},
		{
			name: "times_and_colour_from_the_text",
			text: "闪光5次，用红色",
			want: map[string]any{"commands": []any{map[string]any{"name": "flash", "params": map[string]any{"times": float64(5), "color": "red"}}}},
		},
		{
			name: "english",
			text: "flash green twice: 2 times",
			want: map[string]any{"commands": []any{map[string]any{"name": "flash", "params": map[string]any{"times": float64(2), "color": "green"}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			task := f.send(t, tt.text, "", "")
			if len(task.Artifacts) == 0 {
				t.Fatal("no artifacts")
			}
			if diff := cmp.Diff(tt.want, task.Artifacts[len(task.Artifacts)-1].Metadata); diff != "" {
				t.Errorf("send: last artifact metadata (-want +got):\n%s", diff)
			}
			evs := f.stream(t, tt.text, "", "")
			var last *a2av0.TaskArtifactUpdateEvent
			for _, ev := range evs {
				if e, ok := ev.(*a2av0.TaskArtifactUpdateEvent); ok {
					last = e
				}
			}
			if last == nil || !last.LastChunk {
				t.Fatalf("stream: no last artifact chunk in %v", shape(evs))
			}
			if diff := cmp.Diff(tt.want, last.Artifact.Metadata); diff != "" {
				t.Errorf("stream: last artifact metadata (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCancel_stops_a_running_coach_stream(t *testing.T) {
	t.Parallel()
	// Only the cancel can end this stream in reasonable time.
	f := newFixture(t, Options{ChunkDelay: time.Hour})
	s := f.openStream(t, t.Context(), StreamPath, a2av0.MethodMessageStream, userMessage("教练，教我打篮球", "", ""))
	task := s.next().(*a2av0.Task)
	if _, ok := s.next().(*a2av0.TaskArtifactUpdateEvent); !ok {
		t.Fatal("want an artifact chunk before cancelling")
	}

	canceled := f.task(t, a2av0.MethodTasksCancel, a2av0.TaskIDParams{ID: task.ID})
	if canceled.Status.State != a2av0.TaskStateCanceled {
		t.Errorf("tasks/cancel answered state %s, want canceled", canceled.Status.State)
	}
	rest := s.all()
	if st := finalStatus(t, rest); st.Status.State != a2av0.TaskStateCanceled {
		t.Errorf("stream ended %s, want canceled", st.Status.State)
	}
	chunks := 1
	for _, ev := range rest {
		if _, ok := ev.(*a2av0.TaskArtifactUpdateEvent); ok {
			chunks++
		}
	}
	if all := len(coachChunks(zh, "篮球")); chunks >= all {
		t.Errorf("stream carried %d of %d chunks after cancel, want it stopped early", chunks, all)
	}
	if !f.agent.Canceled(task.ID) || f.agent.CancelCount() != 1 {
		t.Errorf("Canceled = %v, CancelCount = %d; want true, 1", f.agent.Canceled(task.ID), f.agent.CancelCount())
	}

	for _, tt := range []struct {
		name     string
		id       string
		wantCode int
	}{
		{name: "again_is_not_cancelable", id: task.ID, wantCode: a2a.CodeTaskNotCancelable},
		{name: "unknown_task", id: "nope", wantCode: a2a.CodeTaskNotFound},
		{name: "missing_id", id: "", wantCode: a2a.CodeInvalidParams},
	} {
		resp := f.call(t, a2av0.MethodTasksCancel, a2av0.TaskIDParams{ID: tt.id}, nil)
		if resp.Error == nil || resp.Error.Code != tt.wantCode {
			t.Errorf("%s: error %+v, want code %d", tt.name, resp.Error, tt.wantCode)
		}
	}
}

func TestCancel_an_input_required_task(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	asked := f.send(t, "帮我算加法", "", "")
	got := f.task(t, a2av0.MethodTasksCancel, a2av0.TaskIDParams{ID: asked.ID})
	if got.Status.State != a2av0.TaskStateCanceled {
		t.Errorf("state %s, want canceled", got.Status.State)
	}
	resp := f.call(t, a2av0.MethodMessageSend, userMessage("3和5", asked.ID, ""), nil)
	if resp.Error == nil || resp.Error.Code != a2a.CodeInvalidParams {
		t.Errorf("continuing a canceled task: error %+v, want %d", resp.Error, a2a.CodeInvalidParams)
	}
}

func TestClient_disconnect_stops_the_coach(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{ChunkDelay: time.Hour})
	ctx, cancel := context.WithCancel(t.Context())
	s := f.openStream(t, ctx, StreamPath, a2av0.MethodMessageStream, userMessage("how to play basketball", "", ""))
	task := s.next().(*a2av0.Task)
	s.next()
	cancel()
	s.resp.Body.Close()

	// Wait (bounded by the test's own deadline) for the agent to notice.
	for {
		got, _ := f.agent.Task(task.ID)
		if got.Status.State == a2av0.TaskStateCanceled {
			if n := len(got.Artifacts); n != 1 {
				t.Errorf("%d artifacts, want 1", n)
			}
			if text := taskText(got); text == strings.Join(coachChunks(en, "basketball"), "") {
				t.Error("the whole answer was produced after the client left")
			}
			break
		}
		if got.Status.State.IsTerminal() {
			t.Fatalf("task ended %s, want canceled", got.Status.State)
		}
		select {
		case <-t.Context().Done():
			t.Fatal("task still running after the client left")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if f.agent.Canceled(task.ID) {
		t.Error("Canceled reports a tasks/cancel that never happened")
	}
}

func TestResubscribe(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{ChunkDelay: 30 * time.Millisecond})
	want := strings.Join(coachChunks(zh, "足球"), "")

	s := f.openStream(t, t.Context(), StreamPath, a2av0.MethodMessageStream, userMessage("足球教练在吗", "", ""))
	task := s.next().(*a2av0.Task)
	s.next()

	// A second client joins the running task: it gets the task so far, then the rest.
	r := f.openStream(t, t.Context(), StreamPath, a2av0.MethodTasksResubscribe, a2av0.TaskIDParams{ID: task.ID})
	evs := r.all()
	snap, ok := evs[0].(*a2av0.Task)
	if !ok || snap.ID != task.ID {
		t.Fatalf("resubscribe starts with %v, want the task", shape(evs[:1]))
	}
	if got := taskText(*snap) + streamedText(t, evs[1:]); got != want {
		t.Errorf("snapshot + followed chunks = %q, want %q", got, want)
	}
	if st := finalStatus(t, evs); st.Status.State != a2av0.TaskStateCompleted {
		t.Errorf("resubscription ended %s, want completed", st.Status.State)
	}
	if got := streamedText(t, s.all()); got == "" {
		t.Error("the original stream lost its chunks")
	}

	// A final task: its state at once.
	evs = f.openStream(t, t.Context(), RPCPath, a2av0.MethodTasksResubscribe, a2av0.TaskIDParams{ID: task.ID}).all()
	if diff := cmp.Diff([]string{"task:completed", "status:completed:final"}, shape(evs)); diff != "" {
		t.Errorf("resubscribe to a final task (-want +got):\n%s", diff)
	}
	resp := f.call(t, a2av0.MethodTasksResubscribe, a2av0.TaskIDParams{ID: "nope"}, nil)
	if resp.Error == nil || resp.Error.Code != a2a.CodeTaskNotFound {
		t.Errorf("unknown task: error %+v, want %d", resp.Error, a2a.CodeTaskNotFound)
	}
}

func TestAPIKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{APIKey: "s3cret"})
	body := requestBody(t, "k-1", a2av0.MethodMessageSend, userMessage("1加2", "", ""))
	tests := []struct {
		name       string
		header     http.Header
		wantStatus int
	}{
		{name: "missing_key", header: nil, wantStatus: http.StatusUnauthorized},
		{name: "wrong_key", header: http.Header{"X-Api-Key": {"guess"}}, wantStatus: http.StatusUnauthorized},
		{name: "right_key", header: http.Header{"X-Api-Key": {"s3cret"}}, wantStatus: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, path := range []string{RPCPath, StreamPath} {
				resp := f.post(t, t.Context(), path, body, tt.header)
				out := decodeResponse(t, resp.Body, "")
				resp.Body.Close()
				if resp.StatusCode != tt.wantStatus {
					t.Errorf("%s: HTTP %d, want %d", path, resp.StatusCode, tt.wantStatus)
				}
				if (out.Error != nil) != (tt.wantStatus != http.StatusOK) {
					t.Errorf("%s: error %+v", path, out.Error)
				}
			}
		})
	}
	t.Run("card_stays_public", func(t *testing.T) {
		t.Parallel()
		if c := getCard(t, f, CardPath); len(c.Security) != 1 {
			t.Errorf("security %v", c.Security)
		}
	})
}

func TestRequests_records_methods_and_redacted_headers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{APIKey: "s3cret"})
	header := http.Header{
		"X-Api-Key":        {"s3cret"},
		"X-A2a-Extensions": {"https://help.aliyun.com/zh/model-studio/multimodal-integration-a2a-protocol"},
		"Traceparent":      {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
	}
	params := userMessage("进行闪光", "", "ctx-1")
	params.Message.Metadata = map[string]any{"device": map[string]any{"id": "d-1"}}
	resp := f.post(t, t.Context(), RPCPath, requestBody(t, "r-1", a2av0.MethodMessageSend, params), header)
	resp.Body.Close()
	resp = f.post(t, t.Context(), RPCPath, requestBody(t, "r-2", a2av0.MethodTasksGet, a2av0.TaskQueryParams{ID: "x"}), nil)
	resp.Body.Close()

	got := f.agent.Requests()
	if len(got) != 2 {
		t.Fatalf("%d requests recorded, want 2", len(got))
	}
	type summary struct {
		Path, Method, Key, Extensions, Traceparent, MessageID, ContextID, Text string
		Unauthorized                                                           bool
		Metadata                                                               map[string]any
	}
	sum := func(r Request) summary {
		return summary{
			Path: r.Path, Method: r.Method, Key: r.Header.Get("X-API-KEY"), Extensions: r.Header.Get("X-A2A-Extensions"),
			Traceparent: r.Header.Get("traceparent"), MessageID: r.MessageID, ContextID: r.ContextID, Text: r.Text,
			Unauthorized: r.Unauthorized, Metadata: r.Metadata,
		}
	}
	want := []summary{
		{
			Path: RPCPath, Method: a2av0.MethodMessageSend, Key: "set", Extensions: header.Get("X-A2A-Extensions"),
			Traceparent: header.Get("Traceparent"), MessageID: params.Message.MessageID, ContextID: "ctx-1", Text: "进行闪光",
			Metadata: map[string]any{"device": map[string]any{"id": "d-1"}},
		},
		{Path: RPCPath, Unauthorized: true},
	}
	var gotSum []summary
	for _, r := range got {
		gotSum = append(gotSum, sum(r))
	}
	if diff := cmp.Diff(want, gotSum); diff != "" {
		t.Errorf("recorded requests (-want +got):\n%s", diff)
	}
}

func TestMalformed_requests_get_JSON_RPC_errors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	msg := func(mutate func(m map[string]any)) string {
		m := map[string]any{"kind": "message", "role": "user", "messageId": "m-1", "parts": []any{map[string]any{"kind": "text", "text": "1加2"}}}
		mutate(m)
		raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "message/send", "params": map[string]any{"message": m}})
		return string(raw)
	}
	tests := []struct {
		name       string
		path       string
		body       string
		wantStatus int
		wantCode   int
		wantID     string
	}{
		{name: "bad_json", body: `{"jsonrpc":`, wantCode: a2a.CodeParseError, wantID: "null"},
		{name: "empty_body", body: ``, wantCode: a2a.CodeParseError, wantID: "null"},
		{name: "batch", body: `[{"jsonrpc":"2.0","id":1,"method":"tasks/get"}]`, wantCode: a2a.CodeInvalidRequest, wantID: "null"},
		{name: "not_an_object", body: `"hello"`, wantCode: a2a.CodeInvalidRequest, wantID: "null"},
		{name: "wrong_version", body: `{"jsonrpc":"1.0","id":"a","method":"tasks/get"}`, wantCode: a2a.CodeInvalidRequest, wantID: `"a"`},
		{name: "object_id", body: `{"jsonrpc":"2.0","id":{},"method":"tasks/get"}`, wantCode: a2a.CodeInvalidRequest, wantID: "null"},
		{name: "no_method", body: `{"jsonrpc":"2.0","id":"a"}`, wantCode: a2a.CodeInvalidRequest, wantID: `"a"`},
		{name: "unknown_method", body: `{"jsonrpc":"2.0","id":"a","method":"tasks/pushNotificationConfig/set","params":{}}`, wantCode: a2a.CodeMethodNotFound, wantID: `"a"`},
		{name: "send_without_params", body: `{"jsonrpc":"2.0","id":1,"method":"message/send"}`, wantCode: a2a.CodeInvalidParams, wantID: "1"},
		{name: "params_of_wrong_type", body: `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":"hi"}}`, wantCode: a2a.CodeInvalidParams, wantID: "1"},
		{name: "message_without_id", body: msg(func(m map[string]any) { delete(m, "messageId") }), wantCode: a2a.CodeInvalidParams, wantID: "7"},
		{name: "message_from_the_agent", body: msg(func(m map[string]any) { m["role"] = "agent" }), wantCode: a2a.CodeInvalidParams, wantID: "7"},
		{name: "message_without_parts", body: msg(func(m map[string]any) { m["parts"] = []any{} }), wantCode: a2a.CodeInvalidParams, wantID: "7"},
		{name: "data_part_only", body: msg(func(m map[string]any) { m["parts"] = []any{map[string]any{"kind": "data", "data": map[string]any{}}} }), wantCode: a2a.CodeContentTypeNotSupported, wantID: "7"},
		{name: "stream_with_bad_params_answers_json", path: StreamPath, body: `{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{}}`, wantCode: a2a.CodeInvalidParams, wantID: "1"},
		{name: "get_without_id", body: `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{}}`, wantCode: a2a.CodeInvalidParams, wantID: "1"},
		{name: "get_unknown_task", body: `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"nope"}}`, wantCode: a2a.CodeTaskNotFound, wantID: "1"},
		{
			name: "body_over_1MiB", body: `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"pad":"` + strings.Repeat("x", MaxBodyBytes) + `"}}`,
			wantStatus: http.StatusRequestEntityTooLarge, wantCode: a2a.CodeInvalidRequest, wantID: "null",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := tt.path
			if path == "" {
				path = RPCPath
			}
			resp := f.post(t, t.Context(), path, []byte(tt.body), nil)
			defer resp.Body.Close()
			wantStatus := tt.wantStatus
			if wantStatus == 0 {
				wantStatus = http.StatusOK
			}
			if resp.StatusCode != wantStatus {
				t.Errorf("HTTP %d, want %d", resp.StatusCode, wantStatus)
			}
			out := decodeResponse(t, resp.Body, "")
			if out.Error == nil || out.Error.Code != tt.wantCode {
				t.Fatalf("error %+v, want code %d", out.Error, tt.wantCode)
			}
			if got := string(out.ID); got != tt.wantID {
				t.Errorf("id %s, want %s", got, tt.wantID)
			}
			if out.Result != nil {
				t.Errorf("result %s next to an error", out.Result)
			}
		})
	}
	t.Run("GET_on_the_rpc_path_is_405", func(t *testing.T) {
		t.Parallel()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, f.srv.URL+RPCPath, nil)
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("HTTP %d, want 405", resp.StatusCode)
		}
	})
}

func TestLenient_paths(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	evs := f.openStream(t, t.Context(), RPCPath, a2av0.MethodMessageStream, userMessage("1加2", "", "")).all()
	if diff := cmp.Diff([]string{"task:submitted", "artifact:last", "status:completed:final"}, shape(evs)); diff != "" {
		t.Errorf("message/stream on the base path (-want +got):\n%s", diff)
	}
	resp := f.post(t, t.Context(), StreamPath, requestBody(t, "s-1", a2av0.MethodMessageSend, userMessage("1加2", "", "")), nil)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("message/send on /stream: Content-Type %q, want application/json", ct)
	}
	out := decodeResponse(t, resp.Body, "s-1")
	ev, err := a2av0.DecodeEvent(out.Result)
	if err != nil {
		t.Fatal(err)
	}
	if task, ok := ev.(*a2av0.Task); !ok || task.Status.State != a2av0.TaskStateCompleted {
		t.Errorf("message/send on /stream: %+v, want a completed task", ev)
	}
}

func TestTasks_are_bounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{MaxTasks: 2, MaxContexts: 2})
	first := f.send(t, "1加2", "", "")
	f.send(t, "1加3", "", "")
	f.send(t, "1加4", "", "")
	resp := f.call(t, a2av0.MethodTasksGet, a2av0.TaskQueryParams{ID: first.ID}, nil)
	if resp.Error == nil || resp.Error.Code != a2a.CodeTaskNotFound {
		t.Errorf("oldest task: error %+v, want %d after eviction", resp.Error, a2a.CodeTaskNotFound)
	}
	f.agent.mu.Lock()
	tasks, contexts := f.agent.tasks.len(), f.agent.contexts.len()
	f.agent.mu.Unlock()
	if tasks != 2 || contexts != 2 {
		t.Errorf("%d tasks and %d contexts kept, want 2 and 2", tasks, contexts)
	}
}

func TestTasksGet_history_length(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	asked := f.send(t, "帮我算加法", "", "")
	one := 1
	got := f.task(t, a2av0.MethodTasksGet, a2av0.TaskQueryParams{ID: asked.ID, HistoryLength: &one})
	if len(got.History) != 1 || got.History[0].Role != a2av0.RoleAgent {
		t.Errorf("history %+v, want only the agent's question", got.History)
	}
	zero := 0
	if got := f.task(t, a2av0.MethodTasksGet, a2av0.TaskQueryParams{ID: asked.ID, HistoryLength: &zero}); len(got.History) != 0 {
		t.Errorf("historyLength 0: %d messages", len(got.History))
	}
}

func TestHealthz(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, f.srv.URL+"/healthz", nil)
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.HasPrefix(body, []byte("ok")) {
		t.Errorf("HTTP %d %q", resp.StatusCode, body)
	}
}
