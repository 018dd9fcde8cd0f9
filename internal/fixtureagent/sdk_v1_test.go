package fixtureagent_test

import (
	"iter"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/google/go-cmp/cmp"

	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
)

// The 1.0 mode is checked with a client nobody here wrote: the JSON-RPC client of the official
// A2A Go SDK v2 (a2aclient), which decodes into its own 1.0 types. If the agent's 1.0 encoding
// were wrong, the SDK would fail to decode it or decode something else than the behaviour
// describes.

// sdkClient is an a2a-go v2 client for the agent's 1.0 interface, on an HTTP client of its own
// whose idle connections are closed at the end of the test.
func sdkClient(t *testing.T, url string) *a2aclient.Client {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	c, err := a2aclient.NewFromEndpoints(t.Context(), []*a2a.AgentInterface{a2a.NewAgentInterface(url, a2a.TransportProtocolJSONRPC)},
		a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		t.Fatalf("a2aclient: %v", err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

func userMessage(text string) *a2a.SendMessageRequest {
	return &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))}
}

func textOf(parts a2a.ContentParts) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text())
	}
	return b.String()
}

// describe renders an event as the SDK decoded it, for comparisons:
// "status TASK_STATE_WORKING", "artifact append last chunk 2. ", "task TASK_STATE_WORKING [chunk 0. ]".
func describe(ev a2a.Event) string {
	switch e := ev.(type) {
	case *a2a.Task:
		s := "task " + string(e.Status.State)
		if m := e.Status.Message; m != nil {
			s += " " + string(m.Role) + ": " + textOf(m.Parts)
		}
		for _, a := range e.Artifacts {
			s += " [" + textOf(a.Parts) + "]"
		}
		return s
	case *a2a.Message:
		return "message " + string(e.Role) + ": " + textOf(e.Parts)
	case *a2a.TaskStatusUpdateEvent:
		s := "status " + string(e.Status.State)
		if m := e.Status.Message; m != nil {
			s += " " + string(m.Role) + ": " + textOf(m.Parts)
		}
		return s
	case *a2a.TaskArtifactUpdateEvent:
		s := "artifact"
		if e.Append {
			s += " append"
		}
		if e.LastChunk {
			s += " last"
		}
		return s + " " + textOf(e.Artifact.Parts)
	}
	return "?"
}

// drain reads a stream to its end; err is the error that ended it, if any.
func drain(seq iter.Seq2[a2a.Event, error]) (evs []a2a.Event, err error) {
	for ev, err := range seq {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

func describeAll(evs []a2a.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = describe(ev)
	}
	return out
}

// sameTask checks that every event of a stream belongs to one task and context.
func sameTask(t *testing.T, evs []a2a.Event) (a2a.TaskID, string) {
	t.Helper()
	var id a2a.TaskID
	var ctx string
	for i, ev := range evs {
		var info a2a.TaskInfo
		switch e := ev.(type) {
		case *a2a.Task:
			info = e.TaskInfo()
		case *a2a.TaskStatusUpdateEvent:
			info = e.TaskInfo()
		case *a2a.TaskArtifactUpdateEvent:
			info = e.TaskInfo()
		default:
			continue
		}
		if i == 0 {
			id, ctx = info.TaskID, info.ContextID
		}
		if info.TaskID != id || info.ContextID != ctx || id == "" || ctx == "" {
			t.Errorf("event %d is for task %q context %q, the first for %q %q", i, info.TaskID, info.ContextID, id, ctx)
		}
	}
	return id, ctx
}

func TestV1StreamsDecodeWithTheSDK(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		behavior fixtureagent.Behavior
		want     []string
	}{
		{name: "stream", behavior: fixtureagent.Stream, want: []string{
			"task TASK_STATE_SUBMITTED",
			"status TASK_STATE_WORKING",
			"artifact " + fixtureagent.ChunkText(0),
			"artifact append " + fixtureagent.ChunkText(1),
			"artifact append last " + fixtureagent.ChunkText(2),
			"status TASK_STATE_COMPLETED",
		}},
		{name: "input_required", behavior: fixtureagent.InputRequired, want: []string{
			"task TASK_STATE_SUBMITTED",
			"status TASK_STATE_INPUT_REQUIRED ROLE_AGENT: " + fixtureagent.InputQuestion,
		}},
		{name: "rejected", behavior: fixtureagent.Rejected, want: []string{
			"task TASK_STATE_SUBMITTED",
			"status TASK_STATE_REJECTED ROLE_AGENT: " + fixtureagent.RejectedText,
		}},
		{name: "failed", behavior: fixtureagent.Failed, want: []string{
			"task TASK_STATE_SUBMITTED",
			"status TASK_STATE_FAILED ROLE_AGENT: " + fixtureagent.FailedText,
		}},
		{name: "auth_required", behavior: fixtureagent.AuthRequired, want: []string{
			"task TASK_STATE_SUBMITTED",
			"status TASK_STATE_AUTH_REQUIRED ROLE_AGENT: please sign in",
		}},
		{name: "message", behavior: fixtureagent.MessageResult, want: []string{
			"message ROLE_AGENT: " + fixtureagent.MessageText,
		}},
		{name: "guide_task", behavior: fixtureagent.Send, want: []string{
			"task TASK_STATE_COMPLETED [今天天气晴，] [没有雨。]",
		}},
		{name: "cumulative", behavior: fixtureagent.Cumulative, want: []string{
			"task TASK_STATE_SUBMITTED", "artifact Hel", "artifact Hello", "artifact " + fixtureagent.CumulativeText, "status TASK_STATE_COMPLETED",
		}},
		{name: "unknown_state_is_unspecified", behavior: fixtureagent.UnknownState, want: []string{
			"task TASK_STATE_SUBMITTED", "status ",
		}},
		{name: "no_stream_path_is_plain_stream_on_1.0", behavior: fixtureagent.NoStreamPath, want: []string{
			"task TASK_STATE_SUBMITTED",
			"status TASK_STATE_WORKING",
			"artifact " + fixtureagent.ChunkText(0),
			"artifact append " + fixtureagent.ChunkText(1),
			"artifact append last " + fixtureagent.ChunkText(2),
			"status TASK_STATE_COMPLETED",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := fixtureagent.NewV1(t)
			c := sdkClient(t, srv.URL)
			evs, err := drain(c.SendStreamingMessage(t.Context(), userMessage("behave:"+string(tt.behavior)+" hello")))
			if err != nil {
				t.Fatalf("stream: %v (after %q)", err, describeAll(evs))
			}
			if diff := cmp.Diff(tt.want, describeAll(evs)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			sameTask(t, evs)
			reqs := srv.Requests()
			if len(reqs) != 1 || reqs[0].RPCMethod != "SendStreamingMessage" || reqs[0].Op != fixtureagent.OpStream || reqs[0].Path != "/a2a" {
				t.Fatalf("requests = %+v, want one SendStreamingMessage on /a2a", reqs)
			}
			// What a real 1.0 client sends, and what the agent understood of it.
			if got := reqs[0].Header.Get("A2A-Version"); got != "1.0" {
				t.Errorf("the SDK sent A2A-Version %q", got)
			}
			if !strings.HasSuffix(reqs[0].Text, " hello") || reqs[0].MessageID == "" {
				t.Errorf("recorded text %q, message id %q", reqs[0].Text, reqs[0].MessageID)
			}
		})
	}
}

func TestV1SendDecodesWithTheSDK(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		behavior fixtureagent.Behavior
		want     string
	}{
		{name: "stream_as_one_task", behavior: fixtureagent.Stream, want: "task TASK_STATE_COMPLETED [" + fixtureagent.StreamText(3) + "]"},
		{name: "guide_task", behavior: fixtureagent.Send, want: "task TASK_STATE_COMPLETED [今天天气晴，] [没有雨。]"},
		{name: "input_required", behavior: fixtureagent.InputRequired, want: "task TASK_STATE_INPUT_REQUIRED ROLE_AGENT: " + fixtureagent.InputQuestion},
		{name: "rejected", behavior: fixtureagent.Rejected, want: "task TASK_STATE_REJECTED"},
		{name: "message", behavior: fixtureagent.MessageResult, want: "message ROLE_AGENT: " + fixtureagent.MessageText},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := fixtureagent.NewV1(t)
			res, err := sdkClient(t, srv.URL).SendMessage(t.Context(), userMessage("behave:"+string(tt.behavior)))
			if err != nil {
				t.Fatalf("send: %v", err)
			}
			if got := describe(res); got != tt.want {
				t.Errorf("result = %q, want %q", got, tt.want)
			}
			if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].RPCMethod != "SendMessage" || reqs[0].Op != fixtureagent.OpSend {
				t.Errorf("requests = %+v, want one SendMessage", reqs)
			}
		})
	}
}

// send-working: SendMessage answers a working Task, GetTask (a bare Task on 1.0) answers working
// once more, then completed.
func TestV1SendWorkingThenGetTask(t *testing.T) {
	t.Parallel()
	srv := fixtureagent.NewV1(t)
	c := sdkClient(t, srv.URL)
	res, err := c.SendMessage(t.Context(), userMessage("behave:send-working"))
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok || task.Status.State != a2a.TaskStateWorking {
		t.Fatalf("send = %q, want a working task", describe(res))
	}
	var got []string
	for range 2 {
		tk, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if tk.ID != task.ID || tk.ContextID != task.ContextID {
			t.Errorf("get answered task %q context %q, want %q %q", tk.ID, tk.ContextID, task.ID, task.ContextID)
		}
		got = append(got, describe(tk))
	}
	want := []string{"task TASK_STATE_WORKING", "task TASK_STATE_COMPLETED [" + fixtureagent.PolledText + "]"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("gets (-want +got):\n%s", diff)
	}
	if gets := srv.RequestsForOp(fixtureagent.OpGet); len(gets) != 2 || gets[0].RPCMethod != "GetTask" || gets[0].TaskID != string(task.ID) {
		t.Errorf("get requests = %+v", gets)
	}
}

// input-required, then the answer continues the same task; with InputRequiredSnapshot the
// continuation stream opens with the stored task, as @a2a-js/sdk 1.x servers do.
func TestV1InputRequiredThenContinuation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		behavior  fixtureagent.Behavior
		streaming bool
		want      []string
	}{
		{name: "stream", behavior: fixtureagent.InputRequired, streaming: true, want: []string{
			"artifact last " + fixtureagent.ContinuedText, "status TASK_STATE_COMPLETED",
		}},
		{name: "stream_snapshot_first", behavior: fixtureagent.InputRequiredSnapshot, streaming: true, want: []string{
			"task TASK_STATE_INPUT_REQUIRED ROLE_AGENT: " + fixtureagent.InputQuestion,
			"status TASK_STATE_WORKING",
			"artifact last " + fixtureagent.ContinuedText,
			"status TASK_STATE_COMPLETED",
		}},
		{name: "send", behavior: fixtureagent.InputRequired, want: []string{
			"task TASK_STATE_COMPLETED [" + fixtureagent.ContinuedText + "]",
		}},
		{name: "send_snapshot_behaviour", behavior: fixtureagent.InputRequiredSnapshot, want: []string{
			"task TASK_STATE_COMPLETED [" + fixtureagent.ContinuedText + "]",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := fixtureagent.NewV1(t)
			c := sdkClient(t, srv.URL)
			first, err := drain(c.SendStreamingMessage(t.Context(), userMessage("behave:"+string(tt.behavior))))
			if err != nil {
				t.Fatal(err)
			}
			id, ctx := sameTask(t, first)
			if got := describe(first[len(first)-1]); got != "status TASK_STATE_INPUT_REQUIRED ROLE_AGENT: "+fixtureagent.InputQuestion {
				t.Fatalf("first turn ended with %q", got)
			}
			req := userMessage("Berlin")
			req.Message.TaskID, req.Message.ContextID = id, ctx
			var second []a2a.Event
			if tt.streaming {
				second, err = drain(c.SendStreamingMessage(t.Context(), req))
			} else {
				var res a2a.SendMessageResult
				res, err = c.SendMessage(t.Context(), req)
				second = []a2a.Event{res}
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, describeAll(second)); diff != "" {
				t.Errorf("continuation (-want +got):\n%s", diff)
			}
			if id2, ctx2 := sameTask(t, second); id2 != id || ctx2 != ctx {
				t.Errorf("continuation on task %q context %q, want %q %q", id2, ctx2, id, ctx)
			}
			reqs := srv.Requests()
			if last := reqs[len(reqs)-1]; last.TaskID != string(id) || last.ContextID != ctx || last.Text != "Berlin" {
				t.Errorf("continuation recorded as %+v", last)
			}
		})
	}
}

// Barge-in: CancelTask (a bare Task on 1.0) during a slow stream, which then ends canceled.
func TestV1CancelTask(t *testing.T) {
	t.Parallel()
	srv := fixtureagent.NewV1(t)
	srv.SetChunkDelay(5 * time.Millisecond)
	c := sdkClient(t, srv.URL)
	var canceled *a2a.Task
	var evs []a2a.Event
	for ev, err := range c.SendStreamingMessage(t.Context(), userMessage("behave:slow-stream")) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		evs = append(evs, ev)
		if _, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok && canceled == nil {
			canceled, err = c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: ev.(*a2a.TaskArtifactUpdateEvent).TaskID})
			if err != nil {
				t.Fatalf("cancel: %v", err)
			}
		}
	}
	if canceled == nil || canceled.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("cancel answered %+v, want a canceled task", canceled)
	}
	if got := describe(evs[len(evs)-1]); got != "status TASK_STATE_CANCELED" {
		t.Errorf("the stream ended with %q", got)
	}
	id, _ := sameTask(t, evs)
	if got := srv.Cancels(); len(got) != 1 || got[0] != string(id) || canceled.ID != id {
		t.Errorf("cancels = %q, canceled task %q, want [%q]", got, canceled.ID, id)
	}
	if cs := srv.RequestsForOp(fixtureagent.OpCancel); len(cs) != 1 || cs[0].RPCMethod != "CancelTask" {
		t.Errorf("cancel requests = %+v", cs)
	}
}

// A stream destroyed mid-body breaks the SDK's stream with an error; SubscribeToTask then
// answers the snapshot (with the text so far), the rest and completed.
func TestV1StreamDropThenSubscribe(t *testing.T) {
	t.Parallel()
	for _, b := range []fixtureagent.Behavior{fixtureagent.StreamDrop, fixtureagent.StreamReset} {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			srv := fixtureagent.NewV1(t)
			c := sdkClient(t, srv.URL)
			evs, err := drain(c.SendStreamingMessage(t.Context(), userMessage("behave:"+string(b))))
			if err == nil {
				t.Fatalf("the stream ended without an error after %q", describeAll(evs))
			}
			want := []string{"task TASK_STATE_SUBMITTED", "status TASK_STATE_WORKING", "artifact " + fixtureagent.ChunkText(0)}
			if diff := cmp.Diff(want, describeAll(evs)); diff != "" {
				t.Errorf("events before the break (-want +got):\n%s", diff)
			}
			id, _ := sameTask(t, evs)
			rest, err := drain(c.SubscribeToTask(t.Context(), &a2a.SubscribeToTaskRequest{ID: id}))
			if err != nil {
				t.Fatalf("subscribe: %v", err)
			}
			want = []string{
				"task TASK_STATE_WORKING [" + fixtureagent.ChunkText(0) + "]",
				"artifact append last " + fixtureagent.ChunkText(1),
				"status TASK_STATE_COMPLETED",
			}
			if diff := cmp.Diff(want, describeAll(rest)); diff != "" {
				t.Errorf("subscription (-want +got):\n%s", diff)
			}
			if rs := srv.RequestsForOp(fixtureagent.OpResubscribe); len(rs) != 1 || rs[0].RPCMethod != "SubscribeToTask" || rs[0].TaskID != string(id) {
				t.Errorf("subscribe requests = %+v", rs)
			}
		})
	}
}
