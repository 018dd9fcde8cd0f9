package invoke_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
)

// The fixture agent's behaviours on both wire generations: the same turn, the same outcome,
// whether the agent speaks A2A 0.2.5/0.3 (fixtureagent.New) or A2A 1.0 (fixtureagent.NewV1).
// The agent's profile carries the version the fixture speaks, as a card would state it.
//
// The /v1 cases hold the connector to the 1.0 wire; the dropped-connection cases and the
// snapshot continuation hold it, on both wires, to resuming broken streams and reading past a
// replayed snapshot.

var fixtureWires = []struct {
	name  string
	start func(testing.TB) *fixtureagent.Server
}{
	{name: "v0", start: fixtureagent.New},
	{name: "v1", start: fixtureagent.NewV1},
	{name: "v1-http-json", start: fixtureagent.NewREST},
	{name: "v1-grpc", start: fixtureagent.NewGRPC},
	{name: "v03-http-json", start: fixtureagent.NewRESTV03},
}

func fixtureAgentFor(srv *fixtureagent.Server, streaming bool) connector.Agent {
	a := agentAt(srv.URL, streaming)
	a.ProtocolVersion = srv.ProtocolVersion()
	a.EndpointBinding = srv.Binding()
	return a
}

// checkWire asserts what every request to a 1.0 fixture must look like: A2A-Version 1.0, a 1.0
// method, the interface URL itself (never {url}/stream).
func checkWire(t *testing.T, srv *fixtureagent.Server) {
	t.Helper()
	if srv.ProtocolVersion() != fixtureagent.ProtocolV1 && srv.Binding() == fixtureagent.BindingHTTPJSON {
		// 0.3 HTTP+JSON: the /v1 paths under the interface URL, no A2A-Version.
		for _, r := range srv.Requests() {
			if r.Header.Get("A2A-Version") != "" || !strings.HasPrefix(r.Path, "/a2a/v1/") || r.Op == "" {
				t.Errorf("request %s %s (A2A-Version %q), want a 0.3 HTTP+JSON path under /a2a/v1 without A2A-Version", r.HTTPMethod, r.Path, r.Header.Get("A2A-Version"))
			}
		}
		return
	}
	if srv.ProtocolVersion() != fixtureagent.ProtocolV1 {
		return
	}
	rest := srv.Binding() != "" // gRPC reaches the agent's HTTP+JSON face
	for _, r := range srv.Requests() {
		if rest {
			// HTTP+JSON: the spec's paths under the interface URL, never {url}/stream.
			if r.Header.Get("A2A-Version") != "1.0" || !strings.HasPrefix(r.Path, "/a2a/") || r.Path == "/a2a/stream" || r.Op == "" {
				t.Errorf("request %s %s (A2A-Version %q), want an HTTP+JSON path under /a2a with A2A-Version 1.0", r.HTTPMethod, r.Path, r.Header.Get("A2A-Version"))
			}
			continue
		}
		if r.Header.Get("A2A-Version") != "1.0" || r.Path != "/a2a" || r.Op == "" || strings.Contains(r.RPCMethod, "/") {
			t.Errorf("request %s %s (A2A-Version %q), want a 1.0 method on /a2a with A2A-Version 1.0", r.Path, r.RPCMethod, r.Header.Get("A2A-Version"))
		}
	}
}

func TestFixtureBehavioursOnBothWires(t *testing.T) {
	t.Parallel()
	chunks := []string{fixtureagent.ChunkText(0), fixtureagent.ChunkText(1), fixtureagent.ChunkText(2)}
	tests := []struct {
		name        string
		behavior    fixtureagent.Behavior
		streaming   bool
		wantOutcome connector.Outcome
		wantCode    string
		wantText    string
		wantState   string
		wantDeltas  []string // nil: only that they add up to the text
		wantErrText string
		check       func(t *testing.T, srv *fixtureagent.Server, res connector.TurnResult)
	}{
		{name: "stream", behavior: fixtureagent.Stream, streaming: true, wantOutcome: connector.OutcomeCompleted,
			wantText: fixtureagent.StreamText(3), wantState: "completed", wantDeltas: chunks,
			check: func(t *testing.T, srv *fixtureagent.Server, res connector.TurnResult) {
				if diff := cmp.Diff(map[string]any{"command": "flash"}, res.Metadata); diff != "" {
					t.Errorf("metadata (-want +got):\n%s", diff)
				}
			}},
		{name: "send_guide_example", behavior: fixtureagent.Send, wantOutcome: connector.OutcomeCompleted,
			wantText: fixtureagent.GuideText, wantState: "completed"},
		{name: "send_working_is_polled", behavior: fixtureagent.SendWorking, wantOutcome: connector.OutcomeCompleted,
			wantText: fixtureagent.PolledText, wantState: "completed",
			check: func(t *testing.T, srv *fixtureagent.Server, res connector.TurnResult) {
				if gets := srv.RequestsForOp(fixtureagent.OpGet); len(gets) < 2 || gets[0].TaskID != res.TaskID {
					t.Errorf("gets = %+v, want at least 2 for %s", gets, res.TaskID)
				}
			}},
		{name: "message_result", behavior: fixtureagent.MessageResult, streaming: true, wantOutcome: connector.OutcomeCompleted,
			wantText: fixtureagent.MessageText},
		{name: "json_body_instead_of_a_stream", behavior: fixtureagent.JSONResult, streaming: true, wantOutcome: connector.OutcomeCompleted,
			wantText: fixtureagent.GuideText, wantState: "completed"},
		{name: "rejected_stream", behavior: fixtureagent.Rejected, streaming: true, wantOutcome: connector.OutcomeHandback, wantState: "rejected"},
		{name: "rejected_send", behavior: fixtureagent.Rejected, wantOutcome: connector.OutcomeHandback, wantState: "rejected"},
		{name: "failed", behavior: fixtureagent.Failed, streaming: true, wantOutcome: connector.OutcomeFailed, wantCode: connector.CodeTaskFailed,
			wantState: "failed", wantErrText: fixtureagent.FailedText},
		{name: "input_required_stream_open", behavior: fixtureagent.InputRequiredOpen, streaming: true, wantOutcome: connector.OutcomeInputRequired,
			wantText: fixtureagent.InputQuestion, wantState: "input-required"},
		{name: "input_required_send", behavior: fixtureagent.InputRequired, wantOutcome: connector.OutcomeInputRequired,
			wantText: fixtureagent.InputQuestion, wantState: "input-required"},
		{name: "rpc_error_event", behavior: fixtureagent.RPCErrorEvent, streaming: true, wantOutcome: connector.OutcomeFailed,
			wantCode: connector.CodeAgentRPCError, wantState: "submitted", wantErrText: "internal boom"},
		{name: "cumulative_replace", behavior: fixtureagent.Cumulative, streaming: true, wantOutcome: connector.OutcomeCompleted,
			wantText: fixtureagent.CumulativeText, wantState: "completed", wantDeltas: []string{"Hel", "lo", " world"}},
		{name: "status_text", behavior: fixtureagent.StatusText, streaming: true, wantOutcome: connector.OutcomeCompleted,
			wantText: fixtureagent.StatusReply, wantState: "completed"},
		{name: "auth_required", behavior: fixtureagent.AuthRequired, streaming: true, wantOutcome: connector.OutcomeFailed,
			wantCode: connector.CodeAuthRequired, wantState: "auth-required"},
	}
	for _, tt := range tests {
		for _, w := range fixtureWires {
			t.Run(tt.name+"/"+w.name, func(t *testing.T) {
				t.Parallel()
				srv := w.start(t)
				h := newHarness(t, nil)
				a := fixtureAgentFor(srv, tt.streaming)
				res, rec := h.turn(t, t.Context(), connector.TurnRequest{Agent: &a, Credential: h.seal(t, a.ID), MessageID: "turn-1",
					Text: "behave:" + string(tt.behavior) + " " + userWords, ContextID: "ctx-session"})
				if err := h.inv.Close(t.Context()); err != nil {
					t.Fatal(err)
				}
				if res.Outcome != tt.wantOutcome || res.Text != tt.wantText || res.State != tt.wantState {
					t.Errorf("result = %+v, want %s %q state %q", res, tt.wantOutcome, tt.wantText, tt.wantState)
				}
				switch {
				case tt.wantCode == "" && res.Err != nil:
					t.Errorf("err = %+v, want none", res.Err)
				case tt.wantCode != "" && (res.Err == nil || res.Err.Code != tt.wantCode):
					t.Errorf("err = %+v, want code %s", res.Err, tt.wantCode)
				case tt.wantErrText != "" && !strings.Contains(res.Err.Message, tt.wantErrText):
					t.Errorf("err message %q, want it to contain %q", res.Err.Message, tt.wantErrText)
				}
				if got := strings.Join(rec.texts(), ""); got != res.Text {
					t.Errorf("deltas add up to %q, final text %q", got, res.Text)
				}
				if tt.wantDeltas != nil {
					if diff := cmp.Diff(tt.wantDeltas, rec.texts()); diff != "" {
						t.Errorf("deltas (-want +got):\n%s", diff)
					}
				}
				if reqs := srv.Requests(); len(reqs) == 0 || reqs[0].Header.Get("X-API-KEY") != testAPIKey {
					t.Errorf("the first request did not carry the key")
				}
				checkWire(t, srv)
				if tt.check != nil {
					tt.check(t, srv, res)
				}
			})
		}
	}
}

// input-required, then the answer continues the held task. With InputRequiredSnapshot the
// continuation stream opens with the stored task, still input-required with the old question
// (what @a2a-js/sdk 1.x servers send): the turn must read past it, and speak only the answer.
func TestFixtureContinuationOnBothWires(t *testing.T) {
	t.Parallel()
	for _, b := range []fixtureagent.Behavior{fixtureagent.InputRequired, fixtureagent.InputRequiredSnapshot} {
		for _, streaming := range []bool{true, false} {
			for _, w := range fixtureWires {
				t.Run(string(b)+"/"+streamName(streaming)+"/"+w.name, func(t *testing.T) {
					t.Parallel()
					srv := w.start(t)
					h := newHarness(t, nil)
					a := fixtureAgentFor(srv, streaming)
					first, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: &a, MessageID: "turn-1", Text: "behave:" + string(b) + " " + userWords})
					if first.Outcome != connector.OutcomeInputRequired || first.Text != fixtureagent.InputQuestion || first.TaskID == "" || first.ContextID == "" {
						t.Fatalf("first = %+v, want INPUT_REQUIRED %q", first, fixtureagent.InputQuestion)
					}
					second, rec := h.turn(t, t.Context(), connector.TurnRequest{Agent: &a, MessageID: "turn-2", Text: "Berlin " + userWords,
						TaskID: first.TaskID, ContextID: first.ContextID})
					if second.Outcome != connector.OutcomeCompleted || second.Text != fixtureagent.ContinuedText || second.TaskID != first.TaskID ||
						second.State != "completed" {
						t.Fatalf("second = %+v, want COMPLETED %q on task %s", second, fixtureagent.ContinuedText, first.TaskID)
					}
					if got := strings.Join(rec.texts(), ""); got != fixtureagent.ContinuedText {
						t.Errorf("second deltas = %q, want only the answer", got)
					}
					reqs := srv.Requests()
					if last := reqs[len(reqs)-1]; last.TaskID != first.TaskID || last.ContextID != first.ContextID || last.MessageID != "turn-2" {
						t.Errorf("continuation sent %+v", last)
					}
					checkWire(t, srv)
				})
			}
		}
	}
}

// A stream that breaks after the agent named a task: resumed once with a
// resubscribe (1.0: SubscribeToTask), then a get, and only then FAILED. What was spoken is not
// spoken again when the resubscription replays it in a Task snapshot, and a connection the agent
// lost is no reason to cancel its task.
func TestFixtureDroppedConnectionsOnBothWires(t *testing.T) {
	t.Parallel()
	resumed := []string{fixtureagent.ChunkText(0), fixtureagent.ChunkText(1)}
	tests := []struct {
		name        string
		behavior    fixtureagent.Behavior
		wantOutcome connector.Outcome
		wantDeltas  []string
		wantGet     bool // a get after the refused resubscribe
	}{
		{name: "socket_destroyed_mid_body", behavior: fixtureagent.StreamDrop, wantOutcome: connector.OutcomeCompleted, wantDeltas: resumed},
		{name: "tcp_reset", behavior: fixtureagent.StreamReset, wantOutcome: connector.OutcomeCompleted, wantDeltas: resumed},
		{name: "resubscribe_refused_then_get_completed", behavior: fixtureagent.StreamDropGet, wantOutcome: connector.OutcomeCompleted,
			wantDeltas: resumed, wantGet: true},
		{name: "resubscribe_answers_an_error_event_then_get_completed", behavior: fixtureagent.StreamDropGetErrorEvent,
			wantOutcome: connector.OutcomeCompleted, wantDeltas: resumed, wantGet: true},
		{name: "everything_refused", behavior: fixtureagent.StreamDropRefused, wantOutcome: connector.OutcomeFailed,
			wantDeltas: []string{fixtureagent.ChunkText(0)}, wantGet: true},
	}
	for _, tt := range tests {
		for _, w := range fixtureWires {
			t.Run(tt.name+"/"+w.name, func(t *testing.T) {
				t.Parallel()
				srv := w.start(t)
				h := newHarness(t, nil)
				a := fixtureAgentFor(srv, true)
				res, rec := h.turn(t, t.Context(), connector.TurnRequest{Agent: &a, Credential: h.seal(t, a.ID), MessageID: "turn-1",
					Text: "behave:" + string(tt.behavior) + " " + userWords})
				if err := h.inv.Close(t.Context()); err != nil {
					t.Fatal(err)
				}
				if res.Outcome != tt.wantOutcome || res.TaskID == "" {
					t.Errorf("result = %+v, want %s with the task", res, tt.wantOutcome)
				}
				if diff := cmp.Diff(tt.wantDeltas, rec.texts()); diff != "" {
					t.Errorf("deltas (-want +got):\n%s", diff)
				}
				if want := strings.Join(tt.wantDeltas, ""); res.Text != want {
					t.Errorf("text = %q, want %q", res.Text, want)
				}
				if rs := srv.RequestsForOp(fixtureagent.OpResubscribe); len(rs) != 1 || rs[0].TaskID != res.TaskID {
					t.Errorf("resubscribes = %+v, want one for %s", rs, res.TaskID)
				}
				if gets := srv.RequestsForOp(fixtureagent.OpGet); tt.wantGet != (len(gets) > 0) || slices.ContainsFunc(gets, func(r fixtureagent.Request) bool { return r.TaskID != res.TaskID }) {
					t.Errorf("gets = %+v, want some: %t", gets, tt.wantGet)
				}
				if got := srv.Cancels(); len(got) != 0 {
					t.Errorf("cancels = %q: a connection the agent lost is no reason to cancel its task", got)
				}
				checkWire(t, srv)
			})
		}
	}
}

// Misbehaviours whose outcome names the binding's own framing: a page instead of A2A, and an
// HTTP error whose body holds the A2A error (on HTTP+JSON a google.rpc.Status with ErrorInfo,
// which is how that binding says every A2A error, so it reads as the agent's error; on JSON-RPC
// a non-2xx status stays an HTTP failure quoting the error), and a stream that ends without a
// final state, which is resumed and then fails the same way on every wire.
func TestFixtureFramingOnEveryWire(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		behavior  fixtureagent.Behavior
		streaming bool
		wantCode  map[string]string // by wire name; "" key: every wire; "-": a fault this wire cannot carry
		wantText  string            // in the error message
	}{
		// gRPC checks the content type itself (grpc-go): no page reaches the connector there.
		{name: "wrong_content_type_stream", behavior: fixtureagent.WrongContentType, streaming: true,
			wantCode: map[string]string{"": connector.CodeProtocolError, "v1-grpc": "-"}, wantText: "text/html"},
		{name: "wrong_content_type_send", behavior: fixtureagent.WrongContentType,
			wantCode: map[string]string{"": connector.CodeProtocolError, "v1-grpc": "-"}, wantText: "text/html"},
		{name: "http_error_with_details_stream", behavior: fixtureagent.HTTPErrorDetails, streaming: true,
			wantCode: map[string]string{"": connector.CodeAgentHTTPStatus, "v1-http-json": connector.CodeAgentRPCError, "v1-grpc": connector.CodeAgentRPCError,
				"v03-http-json": connector.CodeAgentRPCError},
			wantText: "-32008"},
		{name: "http_error_with_details_send", behavior: fixtureagent.HTTPErrorDetails,
			wantCode: map[string]string{"": connector.CodeAgentHTTPStatus, "v1-http-json": connector.CodeAgentRPCError, "v1-grpc": connector.CodeAgentRPCError,
				"v03-http-json": connector.CodeAgentRPCError},
			wantText: "extension required"},
		{name: "stream_ends_without_a_final_state", behavior: fixtureagent.StreamCut, streaming: true,
			wantCode: map[string]string{"": connector.CodeStreamEnded}, wantText: "still working"},
	}
	for _, tt := range tests {
		for _, w := range fixtureWires {
			if tt.wantCode[w.name] == "-" {
				continue
			}
			t.Run(tt.name+"/"+w.name, func(t *testing.T) {
				t.Parallel()
				srv := w.start(t)
				h := newHarness(t, func(o *invoke.Options) { o.IdleTimeout = 2 * time.Second })
				a := fixtureAgentFor(srv, tt.streaming)
				res, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: &a, Credential: h.seal(t, a.ID), MessageID: "turn-1",
					Text: "behave:" + string(tt.behavior) + " " + userWords})
				want, ok := tt.wantCode[w.name]
				if !ok {
					want = tt.wantCode[""]
				}
				if res.Outcome != connector.OutcomeFailed || res.Err == nil || res.Err.Code != want || !strings.Contains(res.Err.Message, tt.wantText) {
					t.Errorf("result = %+v (err %+v), want FAILED %s mentioning %q", res, res.Err, want, tt.wantText)
				}
				checkWire(t, srv)
			})
		}
	}
}

// An agent that refuses the first attempt for load (HTTP 429, gRPC RESOURCE_EXHAUSTED) is called
// again with the same messageId, within the retry budget, on every wire.
func TestFixtureRetryOnEveryWire(t *testing.T) {
	t.Parallel()
	for _, w := range fixtureWires {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			srv := w.start(t)
			h := newHarness(t, nil)
			a := fixtureAgentFor(srv, true)
			res, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: &a, Credential: h.seal(t, a.ID), MessageID: "turn-retried",
				Text: "behave:" + string(fixtureagent.TooManyOnce) + " " + userWords})
			if res.Outcome != connector.OutcomeCompleted || res.Text != fixtureagent.StreamText(3) {
				t.Fatalf("result = %+v (err %+v), want COMPLETED", res, res.Err)
			}
			var ids []string
			for _, r := range srv.Requests() {
				if r.Op == fixtureagent.OpStream {
					ids = append(ids, r.MessageID)
				}
			}
			if diff := cmp.Diff([]string{"turn-retried", "turn-retried"}, ids); diff != "" {
				t.Errorf("stream requests' messageIds (-want +got):\n%s", diff)
			}
		})
	}
}
