package a2aclient

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/a2a-connector/a2a-connector/internal/a2a"

	sdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
	"github.com/google/go-cmp/cmp"
)

// echoExecutor is an agent written with the official A2A Go SDK (v0.3.x): for "hello" it reports
// working, streams "echo: " and "hello" as two chunks of one artifact, and completes.
type echoExecutor struct{}

func (echoExecutor) Execute(ctx context.Context, reqCtx *a2asrv.RequestContext, q eventqueue.Queue) error {
	text := ""
	for _, p := range reqCtx.Message.Parts {
		if tp, ok := p.(sdk.TextPart); ok {
			text += tp.Text
		}
	}
	if reqCtx.StoredTask == nil {
		if err := q.Write(ctx, sdk.NewSubmittedTask(reqCtx, reqCtx.Message)); err != nil {
			return err
		}
	}
	events := []sdk.Event{sdk.NewStatusUpdateEvent(reqCtx, sdk.TaskStateWorking, nil)}
	first := sdk.NewArtifactEvent(reqCtx, sdk.TextPart{Text: "echo: "})
	second := sdk.NewArtifactUpdateEvent(reqCtx, first.Artifact.ID, sdk.TextPart{Text: text})
	second.LastChunk = true
	done := sdk.NewStatusUpdateEvent(reqCtx, sdk.TaskStateCompleted, nil)
	done.Final = true
	events = append(events, first, second, done)
	for _, ev := range events {
		if err := q.Write(ctx, ev); err != nil {
			return err
		}
	}
	return nil
}

func (echoExecutor) Cancel(ctx context.Context, reqCtx *a2asrv.RequestContext, q eventqueue.Queue) error {
	return q.Write(ctx, sdk.NewStatusUpdateEvent(reqCtx, sdk.TaskStateCanceled, nil))
}

func sdkAgent(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(echoExecutor{})))
	t.Cleanup(srv.Close)
	return srv
}

func userMessage(text string) *a2a.SendMessageRequest {
	return &a2a.SendMessageRequest{Message: a2a.Message{Role: a2a.RoleUser, MessageID: "msg-sdk-1", Parts: a2a.Parts{a2a.TextPart(text)}}}
}

// textOf returns the text of the artifact chunks of a stream, honouring append.
func textOf(evs []a2a.Event) string {
	text := ""
	for _, ev := range evs {
		if a, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok {
			if !a.Append {
				text = ""
			}
			for _, p := range a.Artifact.Parts {
				text += p.Text
			}
		}
	}
	return text
}

func TestSDKInterop_stream(t *testing.T) {
	t.Parallel()
	srv := sdkAgent(t)
	c := NewClient(testHTTPClient(t), ClientOptions{})
	s, err := c.SendStreamingMessage(t.Context(), Endpoint{URL: srv.URL}, userMessage("hello"), StreamOptions{})
	if err != nil {
		t.Fatalf("StreamMessage: %v", err)
	}
	defer s.Close()
	evs, err := collect(s)
	if err != io.EOF {
		t.Fatalf("end = %v after %d events, want io.EOF", err, len(evs))
	}
	var kinds []string
	for _, ev := range evs {
		kinds = append(kinds, eventName(ev))
	}
	want := []string{"task", "status update", "artifact update", "artifact update", "status update"}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Fatalf("event kinds (-want +got):\n%s", diff)
	}
	if got := textOf(evs); got != "echo: hello" {
		t.Errorf("text = %q, want %q", got, "echo: hello")
	}
	last := evs[len(evs)-1].(*a2a.TaskStatusUpdateEvent)
	if last.Status.State != a2a.TaskStateCompleted {
		t.Errorf("last status = %+v", last)
	}
	task := evs[0].(*a2a.Task)
	if task.ID == "" || task.ContextID == "" || last.TaskID != task.ID || last.Status.Timestamp == "" {
		t.Errorf("ids: task %q/%q, last %q, timestamp %q", task.ID, task.ContextID, last.TaskID, last.Status.Timestamp)
	}

	// The finished task is visible through tasks/get with its artifact.
	got, err := c.GetTask(t.Context(), Endpoint{URL: srv.URL}, a2a.GetTaskRequest{ID: task.ID})
	if err != nil {
		t.Fatalf("GetTask: %v", err)
	}
	if got.Status.State != a2a.TaskStateCompleted || len(got.Artifacts) != 1 || len(got.Artifacts[0].Parts) != 2 {
		t.Errorf("task = %+v", got)
	}
}

func TestSDKInterop_send(t *testing.T) {
	t.Parallel()
	srv := sdkAgent(t)
	c := NewClient(testHTTPClient(t), ClientOptions{})
	p := userMessage("hi there")
	p.Configuration = &a2a.SendMessageConfiguration{AcceptedOutputModes: []string{"text/plain"}}
	ev, err := c.SendMessage(t.Context(), Endpoint{URL: srv.URL}, p)
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	task, ok := ev.(*a2a.Task)
	if !ok {
		t.Fatalf("result is %T, want *Task", ev)
	}
	if task.Status.State != a2a.TaskStateCompleted {
		t.Errorf("state = %s", task.Status.State)
	}
	text := ""
	for _, a := range task.Artifacts {
		for _, p := range a.Parts {
			text += p.Text
		}
	}
	if text != "echo: hi there" {
		t.Errorf("artifact text = %q", text)
	}
}

func TestSDKInterop_errors(t *testing.T) {
	t.Parallel()
	srv := sdkAgent(t)
	c := NewClient(testHTTPClient(t), ClientOptions{})
	ep := Endpoint{URL: srv.URL}

	_, err := c.GetTask(t.Context(), ep, a2a.GetTaskRequest{ID: "no-such-task"})
	var rpc *a2a.RPCError
	if !errors.As(err, &rpc) || rpc.Code != a2a.CodeTaskNotFound {
		t.Errorf("GetTask unknown = %v, want RPCError -32001", err)
	}

	s, err := c.SubscribeToTask(t.Context(), ep, a2a.SubscribeToTaskRequest{ID: "no-such-task"}, StreamOptions{})
	if err == nil {
		defer s.Close()
		_, err = s.Next()
	}
	if !errors.As(err, &rpc) || rpc.Code != a2a.CodeTaskNotFound {
		t.Errorf("Resubscribe unknown = %v, want RPCError -32001", err)
	}
}
