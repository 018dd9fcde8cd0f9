package invoke_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/a2a"
	"github.com/a2a-connector/a2a-connector/internal/a2a/a2av0"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/secret"
)

const (
	// testAPIKey and userWords must never show up in errors or logs.
	testAPIKey = "sk-test-SECRET-4711"
	userWords  = "my-private-utterance"
	// slack is what a turn may overrun its deadline by (scheduling, closing connections), with
	// a wide margin: a busy 2-core machine running the suite under -race must never trip it.
	slack = 5 * time.Second
	// shortLimit is the first-event or idle limit of tests whose agent never sends what is
	// waited for: the verdict (a timeout) does not depend on how fast the machine is, only the
	// test's duration does.
	shortLimit = 200 * time.Millisecond
)

// lockedBuffer collects log output from the turn and from background cancels.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type harness struct {
	inv  *invoke.Invoker
	box  *secret.Box
	opts invoke.Options
	logs *lockedBuffer
}

// loopbackClient is the agent client of local dev: netguard allowing 127.0.0.0/8 over http,
// with the connector's transport (internal/h1).
func loopbackClient(t testing.TB) *http.Client {
	hc := netguard.NewClient(netguard.Policy{AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, AllowInsecureHTTP: true},
		netguard.ClientOptions{MaxRedirects: 0, InlineHTTP1: true})
	t.Cleanup(hc.CloseIdleConnections)
	return hc
}

func newHarness(t testing.TB, mod func(*invoke.Options)) *harness {
	t.Helper()
	box, err := secret.New(bytes.Repeat([]byte{7}, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	o := invoke.Options{
		Secrets: box,
		// Limits far above what any behaviour needs, so that no verdict depends on the speed of
		// the machine; the tests of the limits themselves lower them (shortLimit) against
		// agents that never send what is waited for.
		TurnTimeout:       30 * time.Second,
		FirstEventTimeout: 20 * time.Second,
		IdleTimeout:       20 * time.Second,
		PollInterval:      10 * time.Millisecond,
		CancelTimeout:     10 * time.Second,
		Logger:            slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if mod != nil {
		mod(&o)
	}
	if o.Client == nil {
		o.Client = loopbackClient(t)
	}
	if o.GRPCPolicy == nil {
		// gRPC agents dial through the same policy as the loopback client.
		o.GRPCPolicy = &netguard.Policy{AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, AllowInsecureHTTP: true}
	}
	inv := invoke.New(o)
	t.Cleanup(func() {
		if err := inv.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return &harness{inv: inv, box: box, opts: o, logs: logs}
}

func (h *harness) seal(t testing.TB, agentID string) *connector.Sealed {
	t.Helper()
	s, err := h.box.Seal(agentID, []byte(testAPIKey))
	if err != nil {
		t.Fatal(err)
	}
	return &s
}

func agentAt(url string, streaming bool) connector.Agent {
	return connector.Agent{ID: "agent-1", Enabled: true, CredentialsSet: true,
		CardProfile: connector.CardProfile{Name: "fixture", EndpointURL: url, Streaming: streaming}}
}

// recorder collects the events of a turn.
type recorder struct{ events []connector.TurnEvent }

func (r *recorder) emit(e connector.TurnEvent) { r.events = append(r.events, e) }

func (r *recorder) texts() []string {
	var out []string
	for _, e := range r.events {
		if e.Kind == connector.TextEvent {
			out = append(out, e.Text)
		}
	}
	return out
}

func (r *recorder) states() []string {
	var out []string
	for _, e := range r.events {
		if e.Kind == connector.StatusEvent {
			out = append(out, e.State)
		}
	}
	return out
}

// turn runs one turn and checks what every turn must satisfy: it ends before its deadline plus
// slack, and neither the key nor the user's words leak into the error or the logs.
func (h *harness) turn(t *testing.T, ctx context.Context, req connector.TurnRequest) (connector.TurnResult, *recorder) {
	t.Helper()
	rec := &recorder{}
	start := time.Now()
	res := *h.inv.Turn(ctx, req, rec.emit)
	if elapsed := time.Since(start); elapsed > h.opts.TurnTimeout+slack {
		t.Errorf("turn took %s, deadline %s", elapsed, h.opts.TurnTimeout)
	}
	if res.Err != nil {
		for _, secretText := range []string{testAPIKey, userWords} {
			if strings.Contains(res.Err.Message, secretText) {
				t.Errorf("error message %q contains %q", res.Err.Message, secretText)
			}
		}
	}
	logs := h.logs.String()
	if strings.Contains(logs, testAPIKey) || strings.Contains(logs, userWords) {
		t.Errorf("logs contain the API key or user text:\n%s", logs)
	}
	// The harness logs at debug: the turn's own debug lines are there (Turn skips building them
	// only when debug is off).
	if !strings.Contains(logs, `msg="turn start"`) || !strings.Contains(logs, `msg="turn end"`) {
		t.Errorf("debug log has no turn start and end lines:\n%s", logs)
	}
	return res, rec
}

func TestTurnBehaviours(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		behavior        fixtureagent.Behavior
		streaming       bool
		wantOutcome     connector.Outcome
		wantCode        string
		wantText        string
		wantState       string
		wantInterrupted bool
		// limits lowers the harness's limits for a behaviour that waits them out.
		limits func(*invoke.Options)
		// wantCancel: the agent must receive tasks/cancel for the turn's task.
		wantCancel bool
		check      func(t *testing.T, srv *fixtureagent.Server, res connector.TurnResult, rec *recorder)
	}{
		{
			name: "stream_sends_chunks_then_completed", behavior: fixtureagent.Stream, streaming: true,
			wantOutcome: connector.OutcomeCompleted, wantText: fixtureagent.StreamText(3), wantState: "completed",
			check: func(t *testing.T, srv *fixtureagent.Server, res connector.TurnResult, rec *recorder) {
				if diff := cmp.Diff([]string{fixtureagent.ChunkText(0), fixtureagent.ChunkText(1), fixtureagent.ChunkText(2)}, rec.texts()); diff != "" {
					t.Errorf("deltas (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]string{"submitted", "working", "completed"}, rec.states()); diff != "" {
					t.Errorf("states (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(map[string]any{"command": "flash"}, res.Metadata); diff != "" {
					t.Errorf("metadata (-want +got):\n%s", diff)
				}
				reqs := srv.Requests()
				if len(reqs) != 1 || reqs[0].Path != "/a2a/stream" || reqs[0].RPCMethod != a2av0.MethodMessageStream {
					t.Fatalf("requests = %+v, want one message/stream on /a2a/stream", reqs)
				}
				if got := reqs[0].Header.Get("Accept"); got != "text/event-stream" {
					t.Errorf("Accept = %q", got)
				}
				if res.TaskID == "" || res.ContextID != "ctx-session" {
					t.Errorf("task %q context %q, want a task id and the session's context", res.TaskID, res.ContextID)
				}
			},
		},
		{
			name: "send_answers_the_guide_example", behavior: fixtureagent.Send,
			wantOutcome: connector.OutcomeCompleted, wantText: fixtureagent.GuideText, wantState: "completed",
			check: func(t *testing.T, srv *fixtureagent.Server, res connector.TurnResult, rec *recorder) {
				reqs := srv.Requests()
				if len(reqs) != 1 || reqs[0].Path != "/a2a" || reqs[0].RPCMethod != a2av0.MethodMessageSend {
					t.Fatalf("requests = %+v, want one message/send on /a2a", reqs)
				}
				var p struct {
					Configuration struct {
						Blocking            *bool    `json:"blocking"`
						AcceptedOutputModes []string `json:"acceptedOutputModes"`
					} `json:"configuration"`
				}
				if err := json.Unmarshal(reqs[0].Params, &p); err != nil {
					t.Fatal(err)
				}
				if p.Configuration.Blocking == nil || !*p.Configuration.Blocking || !slices.Equal(p.Configuration.AcceptedOutputModes, []string{"text/plain"}) {
					t.Errorf("configuration = %+v, want blocking and text/plain", p.Configuration)
				}
				if diff := cmp.Diff(map[string]any{"command": "none"}, res.Metadata); diff != "" {
					t.Errorf("metadata (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "send_working_is_polled_until_completed", behavior: fixtureagent.SendWorking,
			wantOutcome: connector.OutcomeCompleted, wantText: fixtureagent.PolledText, wantState: "completed",
			check: func(t *testing.T, srv *fixtureagent.Server, res connector.TurnResult, rec *recorder) {
				gets := srv.RequestsFor(a2av0.MethodTasksGet)
				if len(gets) < 2 {
					t.Fatalf("%d tasks/get, want at least 2", len(gets))
				}
				for _, g := range gets {
					if g.TaskID != res.TaskID {
						t.Errorf("tasks/get for %q, want %q", g.TaskID, res.TaskID)
					}
				}
			},
		},
		{name: "stream_message_result_is_completed", behavior: fixtureagent.MessageResult, streaming: true,
			wantOutcome: connector.OutcomeCompleted, wantText: fixtureagent.MessageText},
		{name: "send_message_result_is_completed", behavior: fixtureagent.MessageResult,
			wantOutcome: connector.OutcomeCompleted, wantText: fixtureagent.MessageText},
		{name: "http_401_is_an_unauthorized_key", behavior: fixtureagent.HTTP401, streaming: true,
			wantOutcome: connector.OutcomeFailed, wantCode: connector.CodeAgentUnauthorized},
		{
			name: "http_500_fails", behavior: fixtureagent.HTTP500, streaming: true,
			wantOutcome: connector.OutcomeFailed, wantCode: connector.CodeAgentHTTPStatus,
			check: func(t *testing.T, srv *fixtureagent.Server, res connector.TurnResult, rec *recorder) {
				if n := len(srv.Requests()); n != 1 {
					t.Errorf("%d requests, want 1 (500 is not retried)", n)
				}
			},
		},
		{
			name: "429_is_retried_with_the_same_message_id", behavior: fixtureagent.TooManyOnce, streaming: true,
			wantOutcome: connector.OutcomeCompleted, wantText: fixtureagent.StreamText(3), wantState: "completed",
			check: func(t *testing.T, srv *fixtureagent.Server, res connector.TurnResult, rec *recorder) {
				reqs := srv.RequestsFor(a2av0.MethodMessageStream)
				if len(reqs) != 2 {
					t.Fatalf("%d message/stream requests, want 2", len(reqs))
				}
				if reqs[0].MessageID != "turn-1" || reqs[1].MessageID != reqs[0].MessageID || reqs[1].RPCID != reqs[0].RPCID {
					t.Errorf("retry changed ids: %q/%s then %q/%s", reqs[0].MessageID, reqs[0].RPCID, reqs[1].MessageID, reqs[1].RPCID)
				}
			},
		},
		{
			name: "503_with_retry_after_beyond_the_deadline_fails_at_once", behavior: fixtureagent.Unavailable, streaming: true,
			wantOutcome: connector.OutcomeFailed, wantCode: connector.CodeAgentHTTPStatus,
			check: func(t *testing.T, srv *fixtureagent.Server, res connector.TurnResult, rec *recorder) {
				if n := len(srv.Requests()); n != 1 {
					t.Errorf("%d requests, want 1", n)
				}
				if !strings.Contains(res.Err.Message, "503") {
					t.Errorf("message %q does not name the status", res.Err.Message)
				}
			},
		},
		{name: "headers_never_sent_times_out", behavior: fixtureagent.HangHeaders, streaming: true,
			limits:      func(o *invoke.Options) { o.FirstEventTimeout = shortLimit },
			wantOutcome: connector.OutcomeFailed, wantCode: connector.CodeTimeout, wantInterrupted: true},
		{
			// Resubscribe answers an empty stream and tasks/get says working until the idle limit
			// ends the turn. The agent lost the stream: its task is not canceled.
			name: "stream_cut_resubscribes_then_asks_then_fails", behavior: fixtureagent.StreamCut, streaming: true,
			limits:      func(o *invoke.Options) { o.IdleTimeout = 2 * time.Second },
			wantOutcome: connector.OutcomeFailed, wantCode: connector.CodeStreamEnded, wantText: fixtureagent.ChunkText(0), wantState: "working",
			check: func(t *testing.T, srv *fixtureagent.Server, res connector.TurnResult, rec *recorder) {
				rs := srv.RequestsFor(a2av0.MethodTasksResubscribe)
				if len(rs) != 1 || rs[0].TaskID != res.TaskID {
					t.Errorf("resubscribes = %+v, want one for %q", rs, res.TaskID)
				}
				if gets := srv.RequestsFor(a2av0.MethodTasksGet); len(gets) == 0 || gets[0].TaskID != res.TaskID {
					t.Errorf("tasks/get = %+v, want some for %q", gets, res.TaskID)
				}
			},
		},
		{name: "stream_cut_resumed_by_resubscribe", behavior: fixtureagent.StreamCutResumable, streaming: true,
			wantOutcome: connector.OutcomeCompleted, wantText: fixtureagent.ChunkText(0) + fixtureagent.ChunkText(1), wantState: "completed"},
		{name: "malformed_json_event", behavior: fixtureagent.BadJSON, streaming: true,
			wantOutcome: connector.OutcomeFailed, wantCode: connector.CodeProtocolError, wantState: "submitted", wantCancel: true},
		{
			name: "json_rpc_error_event", behavior: fixtureagent.RPCErrorEvent, streaming: true,
			wantOutcome: connector.OutcomeFailed, wantCode: connector.CodeAgentRPCError, wantState: "submitted", wantCancel: true,
			check: func(t *testing.T, srv *fixtureagent.Server, res connector.TurnResult, rec *recorder) {
				if !strings.Contains(res.Err.Message, "-32603") || !strings.Contains(res.Err.Message, "internal boom") {
					t.Errorf("message %q lacks the agent's code and message", res.Err.Message)
				}
			},
		},
		{name: "json_body_result_instead_of_sse", behavior: fixtureagent.JSONResult, streaming: true,
			wantOutcome: connector.OutcomeCompleted, wantText: fixtureagent.GuideText, wantState: "completed"},
		{
			name: "json_body_error_instead_of_sse", behavior: fixtureagent.JSONError, streaming: true,
			wantOutcome: connector.OutcomeFailed, wantCode: connector.CodeAgentRPCError,
			check: func(t *testing.T, srv *fixtureagent.Server, res connector.TurnResult, rec *recorder) {
				if !strings.Contains(res.Err.Message, "-32004") {
					t.Errorf("message %q lacks the agent's code", res.Err.Message)
				}
			},
		},
		{
			name: "wrong_json_rpc_id", behavior: fixtureagent.WrongID, streaming: true,
			wantOutcome: connector.OutcomeFailed, wantCode: connector.CodeProtocolError,
			check: func(t *testing.T, srv *fixtureagent.Server, res connector.TurnResult, rec *recorder) {
				if !strings.Contains(res.Err.Message, a2a.ProtocolWrongID) {
					t.Errorf("message %q does not say wrong_id", res.Err.Message)
				}
			},
		},
		{name: "send_wrong_json_rpc_id", behavior: fixtureagent.WrongID,
			wantOutcome: connector.OutcomeFailed, wantCode: connector.CodeProtocolError},
		{name: "event_over_1_MiB", behavior: fixtureagent.HugeEvent, streaming: true,
			wantOutcome: connector.OutcomeFailed, wantCode: connector.CodeTooLarge, wantState: "submitted", wantCancel: true},
		{
			name: "reply_over_256_KiB_keeps_what_was_sent", behavior: fixtureagent.HugeReply, streaming: true,
			wantOutcome: connector.OutcomeFailed, wantCode: connector.CodeTooLarge, wantText: strings.Repeat("y", 256<<10), wantState: "submitted",
			wantCancel: true,
		},
		{name: "unknown_state", behavior: fixtureagent.UnknownState, streaming: true,
			wantOutcome: connector.OutcomeFailed, wantCode: connector.CodeUnknownState, wantState: "unknown"},
		{
			name: "state_a2a_does_not_define", behavior: fixtureagent.GarbageState, streaming: true,
			wantOutcome: connector.OutcomeFailed, wantCode: connector.CodeUnknownState, wantState: "sleeping",
			check: func(t *testing.T, srv *fixtureagent.Server, res connector.TurnResult, rec *recorder) {
				if !strings.Contains(res.Err.Message, "sleeping") {
					t.Errorf("message %q does not name the state", res.Err.Message)
				}
			},
		},
		{name: "keep_alives_then_silence_past_the_idle_limit", behavior: fixtureagent.KeepAliveSilence, streaming: true,
			limits:      func(o *invoke.Options) { o.IdleTimeout = shortLimit },
			wantOutcome: connector.OutcomeFailed, wantCode: connector.CodeTimeout, wantState: "submitted", wantInterrupted: true, wantCancel: true},
		{
			name: "input_required_ends_the_turn_while_the_stream_stays_open", behavior: fixtureagent.InputRequiredOpen, streaming: true,
			wantOutcome: connector.OutcomeInputRequired, wantText: fixtureagent.InputQuestion, wantState: "input-required",
			check: func(t *testing.T, srv *fixtureagent.Server, res connector.TurnResult, rec *recorder) {
				if diff := cmp.Diff([]string{fixtureagent.InputQuestion}, rec.texts()); diff != "" {
					t.Errorf("deltas (-want +got):\n%s", diff)
				}
			},
		},
		{name: "send_input_required", behavior: fixtureagent.InputRequired,
			wantOutcome: connector.OutcomeInputRequired, wantText: fixtureagent.InputQuestion, wantState: "input-required"},
		{name: "auth_required_fails", behavior: fixtureagent.AuthRequired, streaming: true,
			wantOutcome: connector.OutcomeFailed, wantCode: connector.CodeAuthRequired, wantState: "auth-required"},
		{name: "rejected_hands_back", behavior: fixtureagent.Rejected, streaming: true,
			wantOutcome: connector.OutcomeHandback, wantState: "rejected"},
		{name: "send_rejected_hands_back", behavior: fixtureagent.Rejected,
			wantOutcome: connector.OutcomeHandback, wantState: "rejected"},
		{
			name: "failed_carries_the_status_message", behavior: fixtureagent.Failed, streaming: true,
			wantOutcome: connector.OutcomeFailed, wantCode: connector.CodeTaskFailed, wantState: "failed",
			check: func(t *testing.T, srv *fixtureagent.Server, res connector.TurnResult, rec *recorder) {
				if res.Err.Message != fixtureagent.FailedText {
					t.Errorf("message = %q, want %q", res.Err.Message, fixtureagent.FailedText)
				}
			},
		},
		{name: "canceled_by_the_agent", behavior: fixtureagent.Canceled, streaming: true,
			wantOutcome: connector.OutcomeCanceled, wantState: "canceled"},
		{
			name: "cumulative_replace_speaks_only_new_text", behavior: fixtureagent.Cumulative, streaming: true,
			wantOutcome: connector.OutcomeCompleted, wantText: fixtureagent.CumulativeText, wantState: "completed",
			check: func(t *testing.T, srv *fixtureagent.Server, res connector.TurnResult, rec *recorder) {
				if diff := cmp.Diff([]string{"Hel", "lo", " world"}, rec.texts()); diff != "" {
					t.Errorf("deltas (-want +got):\n%s", diff)
				}
			},
		},
		{name: "status_message_is_the_reply_without_artifacts", behavior: fixtureagent.StatusText, streaming: true,
			wantOutcome: connector.OutcomeCompleted, wantText: fixtureagent.StatusReply, wantState: "completed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := fixtureagent.New(t)
			h := newHarness(t, tt.limits)
			agent := agentAt(srv.URL, tt.streaming)
			res, rec := h.turn(t, t.Context(), connector.TurnRequest{
				Agent:      &agent,
				Credential: h.seal(t, agent.ID),
				MessageID:  "turn-1",
				Text:       "behave:" + string(tt.behavior) + " " + userWords,
				Metadata:   map[string]any{"device": "speaker-1"},
				ContextID:  "ctx-session",
			})
			// Close waits for background cancels, so the agent has seen them (or never will).
			if err := h.inv.Close(t.Context()); err != nil {
				t.Fatal(err)
			}

			if res.Outcome != tt.wantOutcome {
				t.Errorf("outcome = %s (err %+v), want %s", res.Outcome, res.Err, tt.wantOutcome)
			}
			switch {
			case tt.wantCode == "" && res.Err != nil:
				t.Errorf("err = %+v, want none", res.Err)
			case tt.wantCode != "" && (res.Err == nil || res.Err.Code != tt.wantCode):
				t.Errorf("err = %+v, want code %s", res.Err, tt.wantCode)
			}
			if res.Text != tt.wantText {
				t.Errorf("text = %.80q (%d bytes), want %.80q (%d bytes)", res.Text, len(res.Text), tt.wantText, len(tt.wantText))
			}
			if spoken := strings.Join(rec.texts(), ""); spoken != res.Text {
				t.Errorf("deltas add up to %.80q, final text is %.80q", spoken, res.Text)
			}
			if res.State != tt.wantState {
				t.Errorf("state = %q, want %q", res.State, tt.wantState)
			}
			if res.Interrupted != tt.wantInterrupted {
				t.Errorf("interrupted = %v, want %v", res.Interrupted, tt.wantInterrupted)
			}
			cancels := srv.Cancels()
			if tt.wantCancel && (res.TaskID == "" || !slices.Equal(cancels, []string{res.TaskID})) {
				t.Errorf("cancels = %q, want [%q]", cancels, res.TaskID)
			}
			if !tt.wantCancel && len(cancels) > 0 {
				t.Errorf("cancels = %q, want none", cancels)
			}
			// The message itself (docs/architecture.md §4, step 3), on the first request.
			if reqs := srv.Requests(); len(reqs) > 0 && reqs[0].RPCMethod != "" {
				checkMessage(t, reqs[0], "turn-1", "ctx-session", "")
			}
			if tt.check != nil {
				tt.check(t, srv, res, rec)
			}
		})
	}
}

// checkMessage asserts the A2A message (docs/architecture.md §4, step 3) on a recorded request.
func checkMessage(t *testing.T, r fixtureagent.Request, messageID, contextID, taskID string) {
	t.Helper()
	var p struct {
		Message map[string]any `json:"message"`
	}
	if err := json.Unmarshal(r.Params, &p); err != nil {
		t.Fatalf("params: %v", err)
	}
	m := p.Message
	if m["kind"] != "message" || m["role"] != "user" || m["messageId"] != messageID {
		t.Errorf("message kind/role/messageId = %v/%v/%v", m["kind"], m["role"], m["messageId"])
	}
	parts, _ := m["parts"].([]any)
	if len(parts) != 1 || parts[0].(map[string]any)["kind"] != "text" || !strings.Contains(parts[0].(map[string]any)["text"].(string), userWords) {
		t.Errorf("parts = %v, want one text part with the user's text", parts)
	}
	if got, _ := m["contextId"].(string); got != contextID {
		t.Errorf("contextId = %q, want %q", got, contextID)
	}
	gotTask, hasTask := m["taskId"]
	if taskID == "" && hasTask {
		t.Errorf("taskId = %v sent on a turn that continues no task", gotTask)
	}
	if taskID != "" && gotTask != taskID {
		t.Errorf("taskId = %v, want %q", gotTask, taskID)
	}
	if md, _ := m["metadata"].(map[string]any); md["device"] != "speaker-1" {
		t.Errorf("metadata = %v", m["metadata"])
	}
}

func TestTurnContinuesHeldTask(t *testing.T) {
	t.Parallel()
	for _, streaming := range []bool{true, false} {
		t.Run(map[bool]string{true: "stream", false: "send"}[streaming], func(t *testing.T) {
			t.Parallel()
			srv := fixtureagent.New(t)
			h := newHarness(t, nil)
			agent := agentAt(srv.URL, streaming)
			first, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: &agent, MessageID: "turn-1", Text: "behave:input-required " + userWords})
			if first.Outcome != connector.OutcomeInputRequired || first.TaskID == "" || first.ContextID == "" {
				t.Fatalf("first turn = %+v, want INPUT_REQUIRED with ids", first)
			}
			second, rec := h.turn(t, t.Context(), connector.TurnRequest{Agent: &agent, MessageID: "turn-2", Text: "Berlin " + userWords,
				Metadata: map[string]any{"device": "speaker-1"}, TaskID: first.TaskID, ContextID: first.ContextID})
			if second.Outcome != connector.OutcomeCompleted || second.Text != fixtureagent.ContinuedText || second.TaskID != first.TaskID {
				t.Errorf("second turn = %+v, want COMPLETED %q on task %s", second, fixtureagent.ContinuedText, first.TaskID)
			}
			if got := strings.Join(rec.texts(), ""); got != fixtureagent.ContinuedText {
				t.Errorf("deltas = %q", got)
			}
			reqs := srv.Requests()
			checkMessage(t, reqs[len(reqs)-1], "turn-2", first.ContextID, first.TaskID)
		})
	}
}

func TestTurnFallsBackToBaseURLAndRemembers(t *testing.T) {
	t.Parallel()
	for _, b := range []fixtureagent.Behavior{fixtureagent.NoStreamPath, fixtureagent.NoStreamPath405, fixtureagent.NoStreamPathHTML} {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			srv := fixtureagent.New(t)
			srv.SetBehavior(b)
			h := newHarness(t, nil)
			agent := agentAt(srv.URL, true)
			var paths []string
			for i, turnID := range []string{"turn-1", "turn-2"} {
				res, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: &agent, MessageID: turnID, Text: userWords})
				if res.Outcome != connector.OutcomeCompleted || res.Text != fixtureagent.StreamText(3) {
					t.Fatalf("turn %d = %+v, want COMPLETED", i+1, res)
				}
				reqs := srv.Requests()
				paths = nil
				for _, r := range reqs {
					if r.MessageID == turnID {
						paths = append(paths, r.Path)
					}
				}
				want := []string{"/a2a/stream", "/a2a"}
				if i == 1 {
					want = []string{"/a2a"} // remembered: straight to the base url
				}
				if diff := cmp.Diff(want, paths); diff != "" {
					t.Errorf("turn %d paths (-want +got):\n%s", i+1, diff)
				}
			}
			// Another agent id on the same invoker still tries /stream first.
			other := agent
			other.ID = "agent-2"
			if res, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: &other, MessageID: "turn-3", Text: userWords}); res.Outcome != connector.OutcomeCompleted {
				t.Fatalf("other agent = %+v", res)
			}
			if reqs := srv.Requests(); reqs[len(reqs)-2].Path != "/a2a/stream" {
				t.Errorf("other agent's first request went to %s, want /a2a/stream", reqs[len(reqs)-2].Path)
			}
		})
	}
}

func TestTurnHeaders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		keyHeaders    []string
		extensions    []string
		withKey       bool
		wantKeyHeader []string
		wantExt       string
	}{
		{name: "default_key_header", withKey: true, wantKeyHeader: []string{"X-API-KEY"}},
		{name: "key_under_both_names", withKey: true, keyHeaders: []string{"X-API-KEY", "X-Custom-Key"}, wantKeyHeader: []string{"X-API-KEY", "X-Custom-Key"}},
		{name: "extensions_activated", extensions: []string{"https://ext.example/intent/v1", "https://ext.example/device/v1"},
			// One line per URI: a2a-go compares each line with a required extension's URI.
			wantExt: "https://ext.example/intent/v1|https://ext.example/device/v1"},
		{name: "no_key_no_extensions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := fixtureagent.New(t)
			h := newHarness(t, nil)
			agent := agentAt(srv.URL, true)
			agent.APIKeyHeaders = tt.keyHeaders
			agent.Extensions = tt.extensions
			req := connector.TurnRequest{Agent: &agent, MessageID: "turn-1", Text: userWords}
			if tt.withKey {
				req.Credential = h.seal(t, agent.ID)
			}
			if res, _ := h.turn(t, t.Context(), req); res.Outcome != connector.OutcomeCompleted {
				t.Fatalf("turn = %+v", res)
			}
			hdr := srv.Requests()[0].Header
			for _, name := range []string{"X-API-KEY", "X-Custom-Key"} {
				want := ""
				if slices.Contains(tt.wantKeyHeader, name) {
					want = testAPIKey
				}
				if got := hdr.Get(name); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
			if got := strings.Join(hdr.Values("X-A2A-Extensions"), "|"); got != tt.wantExt {
				t.Errorf("X-A2A-Extensions = %q, want %q", got, tt.wantExt)
			}
			if _, ok := hdr["X-A2a-Extensions"]; ok && tt.wantExt == "" {
				t.Error("X-A2A-Extensions sent although the card declares none")
			}
		})
	}
}

func TestTurnCallerCancelsMidStream(t *testing.T) {
	t.Parallel()
	srv := fixtureagent.New(t)
	h := newHarness(t, nil)
	agent := agentAt(srv.URL, true)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var texts int
	start := time.Now()
	res := h.inv.Turn(ctx, connector.TurnRequest{Agent: &agent, Credential: h.seal(t, agent.ID), MessageID: "turn-1", Text: "behave:slow-stream " + userWords},
		func(e connector.TurnEvent) {
			if e.Kind == connector.TextEvent {
				texts++
				if texts == 2 {
					cancel() // barge-in
				}
			}
		})
	if elapsed := time.Since(start); elapsed > h.opts.TurnTimeout+slack {
		t.Errorf("turn took %s", elapsed)
	}
	if res.Outcome != connector.OutcomeCanceled || res.Err == nil || res.Err.Code != connector.CodeCanceled || !res.Interrupted {
		t.Fatalf("result = %+v, want CANCELED canceled interrupted", res)
	}
	if res.Text != fixtureagent.ChunkText(0)+fixtureagent.ChunkText(1) {
		t.Errorf("text = %q, want the two chunks spoken", res.Text)
	}
	if err := h.inv.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := srv.Cancels(); !slices.Equal(got, []string{res.TaskID}) {
		t.Errorf("cancels = %q, want [%q]", got, res.TaskID)
	}
	// The cancel carries the key too.
	if cs := srv.RequestsFor(a2av0.MethodTasksCancel); len(cs) != 1 || cs[0].Header.Get("X-API-KEY") != testAPIKey {
		t.Errorf("tasks/cancel requests = %+v", cs)
	}
}

// A held task that times out while being continued is not canceled: the session keeps its hold
// (docs/architecture.md §4), so the user's next turn must still find the task alive.
func TestTurnTimeoutWhileContinuingKeepsTheHeldTask(t *testing.T) {
	t.Parallel()
	srv := fixtureagent.New(t)
	// The first turn runs with the generous limits; only the one that waits out a hanging agent
	// gets a short turn timeout.
	agent := agentAt(srv.URL, true)
	first, _ := newHarness(t, nil).turn(t, t.Context(), connector.TurnRequest{Agent: &agent, MessageID: "turn-1", Text: "behave:input-required"})
	if first.Outcome != connector.OutcomeInputRequired {
		t.Fatalf("first = %+v", first)
	}
	h := newHarness(t, func(o *invoke.Options) { o.TurnTimeout = shortLimit })
	res, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: &agent, MessageID: "turn-2", Text: "behave:hang-headers " + userWords,
		TaskID: first.TaskID, ContextID: first.ContextID})
	if res.Outcome != connector.OutcomeFailed || res.Err.Code != connector.CodeTimeout || !res.Interrupted || res.TaskID != first.TaskID {
		t.Fatalf("result = %+v, want FAILED timeout interrupted on the held task", res)
	}
	if !strings.Contains(res.Err.Message, "turn timeout") {
		t.Errorf("message %q does not name the turn timeout", res.Err.Message)
	}
	if err := h.inv.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := srv.Cancels(); len(got) != 0 {
		t.Errorf("cancels = %q, want none: the hold keeps the task", got)
	}
}

func TestTurnCallerDeadlineBounds(t *testing.T) {
	t.Parallel()
	srv := fixtureagent.New(t)
	h := newHarness(t, func(o *invoke.Options) { o.FirstEventTimeout = time.Minute; o.TurnTimeout = time.Minute })
	ctx, cancel := context.WithTimeout(t.Context(), shortLimit)
	defer cancel()
	start := time.Now()
	res := h.inv.Turn(ctx, connector.TurnRequest{Agent: new(agentAt(srv.URL, false)), MessageID: "turn-1", Text: "behave:hang-headers"}, nil)
	// The bound is far below the minute the invoker would wait on its own, far above the
	// caller's deadline.
	if elapsed := time.Since(start); elapsed > shortLimit+slack {
		t.Errorf("turn took %s, caller deadline %s", elapsed, shortLimit)
	}
	if res.Outcome != connector.OutcomeFailed || res.Err.Code != connector.CodeTimeout || !res.Interrupted {
		t.Errorf("result = %+v, want FAILED timeout interrupted", res)
	}
}

func TestTurnRedirectIsNotFollowed(t *testing.T) {
	t.Parallel()
	target := fixtureagent.New(t)
	srv := fixtureagent.New(t)
	srv.SetRedirectTarget(strings.TrimSuffix(target.URL, "/a2a"))
	// A client that would follow redirects: the invoker must still refuse.
	following := netguard.NewClient(netguard.Policy{AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, AllowInsecureHTTP: true},
		netguard.ClientOptions{MaxRedirects: 5})
	t.Cleanup(following.CloseIdleConnections)
	for _, streaming := range []bool{true, false} {
		h := newHarness(t, func(o *invoke.Options) { o.Client = following })
		agent := agentAt(srv.URL, streaming)
		res, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: &agent, Credential: h.seal(t, agent.ID), MessageID: "turn-1", Text: "behave:redirect " + userWords})
		if res.Outcome != connector.OutcomeFailed || res.Err.Code != connector.CodeRedirect {
			t.Errorf("streaming=%v: result = %+v, want FAILED redirect", streaming, res)
		}
		if got := srv.Requests()[0].Header.Get("X-API-KEY"); got != testAPIKey {
			t.Errorf("the redirecting agent itself got key %q", got)
		}
	}
	if reqs := target.Requests(); len(reqs) != 0 {
		t.Errorf("the redirect target received %d requests (key leaked to another host?)", len(reqs))
	}
}

func TestTurnConnectionRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	for _, streaming := range []bool{true, false} {
		res, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: new(agentAt(fixtureagent.RefusedURL(t), streaming)), MessageID: "turn-1", Text: userWords})
		if res.Outcome != connector.OutcomeFailed || res.Err.Code != connector.CodeAgentUnreachable || res.Interrupted {
			t.Errorf("streaming=%v: result = %+v, want FAILED agent_unreachable", streaming, res)
		}
	}
}

func TestTurnBlockedAddress(t *testing.T) {
	t.Parallel()
	srv := fixtureagent.New(t)
	strict := netguard.NewClient(netguard.Policy{AllowInsecureHTTP: true}, netguard.ClientOptions{})
	t.Cleanup(strict.CloseIdleConnections)
	h := newHarness(t, func(o *invoke.Options) { o.Client = strict })
	res, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: new(agentAt(srv.URL, true)), MessageID: "turn-1", Text: userWords})
	if res.Outcome != connector.OutcomeFailed || res.Err.Code != connector.CodeBlockedAddress {
		t.Errorf("result = %+v, want FAILED blocked_address", res)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("the agent received %d requests", n)
	}
}

func TestTurnAPIKeyCannotBeOpened(t *testing.T) {
	t.Parallel()
	srv := fixtureagent.New(t)
	h := newHarness(t, nil)
	agent := agentAt(srv.URL, true)
	res, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: &agent, Credential: h.seal(t, "another-agent"), MessageID: "turn-1", Text: userWords})
	if res.Outcome != connector.OutcomeFailed || res.Err.Code != connector.CodeCredentials {
		t.Errorf("result = %+v, want FAILED api_key", res)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("the agent received %d requests", n)
	}
	noBox := invoke.New(invoke.Options{Client: loopbackClient(t)})
	defer noBox.Close(t.Context())
	res = *noBox.Turn(t.Context(), connector.TurnRequest{Agent: &agent, Credential: h.seal(t, agent.ID), MessageID: "turn-1", Text: userWords}, nil)
	if res.Err == nil || res.Err.Code != connector.CodeCredentials {
		t.Errorf("without a secret box: %+v, want api_key", res)
	}
}

func TestCancelTaskAndClose(t *testing.T) {
	t.Parallel()
	srv := fixtureagent.New(t)
	h := newHarness(t, nil)
	agent := agentAt(srv.URL, true)
	agent.APIKeyHeaders = []string{"X-API-KEY", "X-Other-Key"}
	first, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: &agent, MessageID: "turn-1", Text: "behave:input-required"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // ReleaseSession's caller may be gone already: the cancel must still be sent
	h.inv.CancelTask(ctx, agent, h.seal(t, agent.ID), first.TaskID)
	if err := h.inv.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	cs := srv.RequestsFor(a2av0.MethodTasksCancel)
	if len(cs) != 1 || cs[0].TaskID != first.TaskID || cs[0].Header.Get("X-Other-Key") != testAPIKey || cs[0].Path != "/a2a" {
		t.Fatalf("tasks/cancel requests = %+v", cs)
	}
	// After Close, nothing more runs in the background.
	h.inv.CancelTask(t.Context(), agent, nil, first.TaskID)
	if err := h.inv.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.RequestsFor(a2av0.MethodTasksCancel)); n != 1 {
		t.Errorf("%d cancels after Close, want still 1", n)
	}
}
