package invoke_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
	"github.com/google/go-cmp/cmp"

	connector "github.com/a2a-connector/a2a-connector"
)

// sdkExecutor is an agent written on the official A2A Go SDK, code nobody here wrote the server
// side of. "ask ..." answers input-required with a question; the answer to it completes the task
// with "Weather in <answer>: sunny."; anything else streams sdkChunks and completes.
type sdkExecutor struct{}

var sdkChunks = []string{"The weather ", "is sunny ", "all day."}

const sdkQuestion = "Which city?"

func (sdkExecutor) Execute(ctx context.Context, reqCtx *a2asrv.RequestContext, q eventqueue.Queue) error {
	var text string
	for _, p := range reqCtx.Message.Parts {
		if tp, ok := p.(sdk.TextPart); ok {
			text += tp.Text
		}
	}
	write := func(ev sdk.Event) error {
		if err := q.Write(ctx, ev); err != nil {
			return fmt.Errorf("write event: %w", err)
		}
		return nil
	}
	final := func(state sdk.TaskState, msg *sdk.Message) error {
		ev := sdk.NewStatusUpdateEvent(reqCtx, state, msg)
		ev.Final = true // the SDK leaves it to the executor
		return write(ev)
	}

	if reqCtx.StoredTask != nil && reqCtx.StoredTask.Status.State == sdk.TaskStateInputRequired {
		if err := write(sdk.NewArtifactEvent(reqCtx, sdk.TextPart{Text: "Weather in " + text + ": sunny."})); err != nil {
			return err
		}
		return final(sdk.TaskStateCompleted, nil)
	}
	if reqCtx.StoredTask == nil {
		if err := write(sdk.NewStatusUpdateEvent(reqCtx, sdk.TaskStateSubmitted, nil)); err != nil {
			return err
		}
	}
	if err := write(sdk.NewStatusUpdateEvent(reqCtx, sdk.TaskStateWorking, nil)); err != nil {
		return err
	}
	if strings.HasPrefix(text, "ask") {
		return final(sdk.TaskStateInputRequired, sdk.NewMessageForTask(sdk.MessageRoleAgent, reqCtx, sdk.TextPart{Text: sdkQuestion}))
	}
	var artifactID sdk.ArtifactID
	for i, chunk := range sdkChunks {
		var ev *sdk.TaskArtifactUpdateEvent
		if i == 0 {
			ev = sdk.NewArtifactEvent(reqCtx, sdk.TextPart{Text: chunk})
			artifactID = ev.Artifact.ID
		} else {
			ev = sdk.NewArtifactUpdateEvent(reqCtx, artifactID, sdk.TextPart{Text: chunk})
		}
		ev.LastChunk = i == len(sdkChunks)-1
		if err := write(ev); err != nil {
			return err
		}
	}
	return final(sdk.TaskStateCompleted, nil)
}

func (sdkExecutor) Cancel(ctx context.Context, reqCtx *a2asrv.RequestContext, q eventqueue.Queue) error {
	ev := sdk.NewStatusUpdateEvent(reqCtx, sdk.TaskStateCanceled, nil)
	ev.Final = true
	return q.Write(ctx, ev)
}

// sdkServer runs the SDK agent at /sdk, and also at /sdk/stream when alsoStream (the platform's
// convention); it records the paths it was called on.
type sdkServer struct {
	URL   string
	mu    sync.Mutex
	paths []string
}

func newSDKServer(t *testing.T, alsoStream bool) *sdkServer {
	t.Helper()
	s := &sdkServer{}
	rpc := a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(sdkExecutor{}))
	mux := http.NewServeMux()
	mux.Handle("/sdk", rpc) // the standard mount: send and stream on the same url
	if alsoStream {
		mux.Handle("/sdk/stream", rpc)
	}
	card := sdk.AgentCard{Name: "sdk agent", URL: "/sdk", ProtocolVersion: "0.3.0", Version: "1.0.0",
		Capabilities: sdk.AgentCapabilities{Streaming: true}, DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"}}
	mux.Handle("/.well-known/agent-card.json", a2asrv.NewStaticAgentCardHandler(&card))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.paths = append(s.paths, r.URL.Path)
		s.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL + "/sdk"
	return s
}

func (s *sdkServer) Paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.paths...)
}

func TestSDKInterop(t *testing.T) {
	t.Parallel()
	whole := strings.Join(sdkChunks, "")
	tests := []struct {
		name       string
		alsoStream bool
		streaming  bool
		wantPaths  []string
	}{
		{name: "standard_mount_streaming_falls_back_from_url_stream", streaming: true, wantPaths: []string{"/sdk/stream", "/sdk"}},
		{name: "mounted_at_url_stream_like_the_platform_expects", alsoStream: true, streaming: true, wantPaths: []string{"/sdk/stream"}},
		{name: "non_streaming_message_send", streaming: false, wantPaths: []string{"/sdk"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newSDKServer(t, tt.alsoStream)
			h := newHarness(t, nil)
			agent := agentAt(srv.URL, tt.streaming)
			res, rec := h.turn(t, t.Context(), connector.TurnRequest{Agent: &agent, MessageID: "turn-1", Text: "weather " + userWords, ContextID: "ctx-session"})
			if res.Outcome != connector.OutcomeCompleted || res.Err != nil || res.Text != whole || res.State != "completed" {
				t.Fatalf("result = %+v, want COMPLETED %q", res, whole)
			}
			if res.TaskID == "" || res.ContextID == "" {
				t.Errorf("task %q context %q, want both", res.TaskID, res.ContextID)
			}
			if tt.streaming {
				// (3) the answer arrives in chunks, each spoken as it comes.
				if diff := cmp.Diff(sdkChunks, rec.texts()); diff != "" {
					t.Errorf("deltas (-want +got):\n%s", diff)
				}
			} else if got := strings.Join(rec.texts(), ""); got != whole {
				t.Errorf("deltas add up to %q", got)
			}
			if diff := cmp.Diff(tt.wantPaths, srv.Paths()); diff != "" {
				t.Errorf("paths (-want +got):\n%s", diff)
			}
		})
	}
}

// (4) input-required, then the user's answer continues the same task.
func TestSDKInteropInputRequiredThenContinuation(t *testing.T) {
	t.Parallel()
	for _, streaming := range []bool{true, false} {
		t.Run(map[bool]string{true: "stream", false: "send"}[streaming], func(t *testing.T) {
			t.Parallel()
			srv := newSDKServer(t, false)
			h := newHarness(t, nil)
			agent := agentAt(srv.URL, streaming)
			first, rec := h.turn(t, t.Context(), connector.TurnRequest{Agent: &agent, MessageID: "turn-1", Text: "ask me " + userWords})
			if first.Outcome != connector.OutcomeInputRequired || first.Text != sdkQuestion || first.TaskID == "" {
				t.Fatalf("first = %+v, want INPUT_REQUIRED %q", first, sdkQuestion)
			}
			if got := strings.Join(rec.texts(), ""); got != sdkQuestion {
				t.Errorf("first deltas = %q, want the question", got)
			}
			second, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: &agent, MessageID: "turn-2", Text: "Berlin",
				TaskID: first.TaskID, ContextID: first.ContextID})
			if second.Outcome != connector.OutcomeCompleted || second.Text != "Weather in Berlin: sunny." || second.TaskID != first.TaskID {
				t.Fatalf("second = %+v, want COMPLETED on task %s", second, first.TaskID)
			}
		})
	}
}
