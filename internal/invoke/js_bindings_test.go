//go:build unix

package invoke_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	a2apbv0 "github.com/a2aproject/a2a-go/a2apb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
)

// The interop tests below run the connector against the A2A 0.3 agent of js_interop_test.go
// (@a2a-js/sdk 0.3.14, the same executor) served over one binding at a time by the SDK's own
// servers: its restHandler (0.3 HTTP+JSON, the form Google's hosted agents serve) and its
// grpcService (0.3 gRPC on @grpc/grpc-js). testdata/js-agent/bindings.mjs describes them.

// jsBindings is a running testdata/js-agent/bindings.mjs process.
type jsBindings struct {
	// REST is the origin of the HTTP+JSON agent (its interface is REST + "/rest"); GRPC the
	// origin of the gRPC agent's card and records.
	REST, GRPC string
	client     *http.Client
}

// bindingPortsWriter collects the program's stdout and hands over its two ports once.
type bindingPortsWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	ports chan [2]int // buffered, receives once
	sent  bool
}

var jsBindingPortsLine = regexp.MustCompile(`(?m)^A2A_BINDING_PORTS=(\d+) (\d+)\r?\n`)

func (w *bindingPortsWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.sent {
		if m := jsBindingPortsLine.FindSubmatch(w.buf.Bytes()); m != nil {
			a, errA := strconv.Atoi(string(m[1]))
			b, errB := strconv.Atoi(string(m[2]))
			if errA == nil && errB == nil {
				w.sent = true
				w.ports <- [2]int{a, b}
			}
		}
	}
	return len(p), nil
}

func (w *bindingPortsWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func startJSBindings(t *testing.T) *jsBindings {
	t.Helper()
	stdout := &bindingPortsWriter{ports: make(chan [2]int, 1)}
	ports := awaitReady(t, startNode(t, jsAgentDir, stdout, "bindings.mjs"), stdout.ports)
	return &jsBindings{REST: "http://127.0.0.1:" + strconv.Itoa(ports[0]), GRPC: "http://127.0.0.1:" + strconv.Itoa(ports[1]), client: loopbackClient(t)}
}

// bindingRequest is a call as bindings.mjs records it: peerRequest plus what the 0.3 bindings
// add.
type bindingRequest struct {
	peerRequest
	HTTPMethod string `json:"httpMethod"`
	Parts      int    `json:"parts"`
	Blocking   *bool  `json:"blocking"`
}

func (a *jsBindings) records(t *testing.T, origin string) []bindingRequest {
	t.Helper()
	var all []bindingRequest
	a.getJSON(t, origin+"/debug/requests", &all)
	return all
}

func (a *jsBindings) getJSON(t *testing.T, url string, v any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// profileOf registers the agent at origin as a tenant does: its card fetched and validated.
func profileOf(t *testing.T, origin string) connector.CardProfile {
	t.Helper()
	hc := netguard.NewClient(netguard.Policy{AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, AllowInsecureHTTP: true},
		netguard.ClientOptions{MaxRedirects: cardfetch.DefaultMaxRedirects})
	t.Cleanup(hc.CloseIdleConnections)
	_, rep, err := cardfetch.New(cardfetch.Options{Client: hc, AllowInsecureHTTP: true}).FetchAndValidate(t.Context(), origin)
	if err != nil || !rep.Valid {
		t.Fatalf("card of %s: %v %+v", origin, err, rep.Problems)
	}
	return rep.Profile
}

// probeRESTV0 proves the 0.3 HTTP+JSON agent works without the connector: a message:send as
// curl would send it, in the 0.3 proto's JSON, answered 201 with the completed task.
func probeRESTV0(t *testing.T, hc *http.Client, url string) {
	t.Helper()
	body := `{"message":{"messageId":"probe-rest-v0","role":"ROLE_USER","content":[{"text":"stream probe"}]},"configuration":{"blocking":true}}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/v1/message:send", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("probe %s: %v", url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var got struct {
		Task struct {
			Status struct {
				State string `json:"state"`
			} `json:"status"`
		} `json:"task"`
	}
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &got) != nil || got.Task.Status.State != "TASK_STATE_COMPLETED" {
		t.Fatalf("probe %s: %s %s", url, resp.Status, raw)
	}
}

// probeGRPCV0 proves the 0.3 gRPC agent works with the stubs generated from the 0.3 proto
// (a2a-go's, not the connector's client).
func probeGRPCV0(t *testing.T, target string) {
	t.Helper()
	cc, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	resp, err := a2apbv0.NewA2AServiceClient(cc).SendMessage(t.Context(), &a2apbv0.SendMessageRequest{
		Request: &a2apbv0.Message{MessageId: "probe-grpc-v0", Role: a2apbv0.Role_ROLE_USER,
			Parts: []*a2apbv0.Part{{Part: &a2apbv0.Part_Text{Text: "stream probe"}}}},
		Configuration: &a2apbv0.SendMessageConfiguration{Blocking: true},
	})
	if err != nil || resp.GetTask().GetStatus().GetState() != a2apbv0.TaskState_TASK_STATE_COMPLETED {
		t.Fatalf("probe %s: %v %v", target, err, resp)
	}
}

func TestJSBindingsInterop(t *testing.T) {
	t.Parallel()
	agents := startJSBindings(t)
	restProfile, grpcProfile := profileOf(t, agents.REST), profileOf(t, agents.GRPC)

	// Registration by card URL: each card lists one interface, which is the one the turns use.
	t.Run("cards", func(t *testing.T) {
		if p := restProfile; p.EndpointURL != agents.REST+"/rest" || p.EndpointBinding != "HTTP+JSON" || p.ProtocolVersion != "0.3.0" || !p.Streaming || p.Fallback != nil {
			t.Errorf("profile of the HTTP+JSON agent = %+v", p)
		}
		if p := grpcProfile; !strings.HasPrefix(p.EndpointURL, "http://127.0.0.1:") || p.EndpointBinding != "GRPC" || p.ProtocolVersion != "0.3.0" || p.Fallback != nil {
			t.Errorf("profile of the gRPC agent = %+v", p)
		}
	})

	bindings := []struct {
		p       peer
		origin  string
		cancel  string // the recorded method of a cancel
		resub   string // ... and of a resubscribe
		probe   func(t *testing.T)
		profile connector.CardProfile
	}{
		{
			p:      peer{Name: "js-0.3-http-json", URL: restProfile.EndpointURL, Protocol: restProfile.ProtocolVersion, Binding: "HTTP+JSON", Streaming: true},
			origin: agents.REST, cancel: "tasks/cancel", resub: "tasks/resubscribe", profile: restProfile,
			probe: func(t *testing.T) { probeRESTV0(t, agents.client, restProfile.EndpointURL) },
		},
		{
			p:      peer{Name: "js-0.3-grpc", URL: grpcProfile.EndpointURL, Protocol: grpcProfile.ProtocolVersion, Binding: "GRPC", Streaming: true},
			origin: agents.GRPC, cancel: "CancelTask", resub: "TaskSubscription", profile: grpcProfile,
			probe: func(t *testing.T) { probeGRPCV0(t, strings.TrimPrefix(grpcProfile.EndpointURL, "http://")) },
		},
	}
	for _, b := range bindings {
		origin := b.origin
		b.p.Requests = func(t *testing.T) []peerRequest {
			var out []peerRequest
			for _, r := range agents.records(t, origin) {
				out = append(out, r.peerRequest)
			}
			return out
		}
		t.Run(b.p.Name, func(t *testing.T) {
			t.Parallel()
			b.probe(t)
			testPeer(t, b.p, jsHarness)
			testV0Binding(t, agents, b.p, b.origin, b.cancel, b.resub, b.profile)
		})
	}
}

// testV0Binding runs what testPeer leaves to 1.0 peers and what only the 0.3 agent's executor
// does (fail, crash, slow, hangup), on one binding of the 0.3 agent.
func testV0Binding(t *testing.T, agents *jsBindings, p peer, origin, cancelMethod, resubMethod string, profile connector.CardProfile) {
	id := func(t *testing.T) string { return strings.ReplaceAll(t.Name(), "/", "-") }

	// The profile exactly as registration stored it; the key and the message reach the agent
	// as the binding carries them: the text as the 0.3 proto's content, blocking on a send.
	t.Run("registered_profile", func(t *testing.T) {
		t.Parallel()
		h := jsHarness(t)
		for _, stream := range []bool{true, false} {
			a := connector.Agent{ID: "js-card-" + p.Name, Enabled: true, CardProfile: profile}
			a.Streaming = stream
			mid := id(t) + "-" + streamName(stream)
			res, rec := h.turn(t, t.Context(), connector.TurnRequest{Agent: &a, Credential: h.seal(t, a.ID), MessageID: mid, Text: "stream " + userWords})
			if res.Outcome != connector.OutcomeCompleted || res.Text != strings.Join(peerChunks, "") {
				t.Fatalf("%s: result = %+v", streamName(stream), res)
			}
			if stream && !slices.Equal(rec.texts(), peerChunks) {
				t.Errorf("deltas = %q, want %q", rec.texts(), peerChunks)
			}
			for _, r := range agents.records(t, origin) {
				if r.MessageID != mid {
					continue
				}
				if r.Parts != 1 || r.APIKey != testAPIKey || r.A2AVersion != "" {
					t.Errorf("%s call %s: %d parts, key sent %t, A2A-Version %q; want 1 part, the key, no version", streamName(stream), r.RPCMethod, r.Parts, r.APIKey == testAPIKey, r.A2AVersion)
				}
				if !stream && (r.Blocking == nil || !*r.Blocking) {
					t.Errorf("send: configuration.blocking = %v, want true", r.Blocking)
				}
			}
		}
	})

	endings := []struct {
		name     string
		text     string
		taskID   string
		outcome  connector.Outcome
		code     string
		contains string
	}{
		{name: "failed_with_the_agents_message", text: "fail " + userWords, outcome: connector.OutcomeFailed, code: connector.CodeTaskFailed, contains: jsFailText},
		{name: "executor_crash", text: "crash " + userWords, outcome: connector.OutcomeFailed, contains: "weather backend crashed"},
		{name: "message_result", text: "hello " + userWords, outcome: connector.OutcomeCompleted},
		// A hold on a task the agent no longer knows: -32001, as an HTTP 404 with the error
		// object (HTTP+JSON) or NOT_FOUND (gRPC).
		{name: "unknown_task_is_rpc_error", text: "Berlin", taskID: "no-such-task", outcome: connector.OutcomeFailed, code: connector.CodeAgentRPCError, contains: "-32001"},
	}
	for _, tt := range endings {
		for _, stream := range []bool{true, false} {
			t.Run(tt.name+"/"+streamName(stream), func(t *testing.T) {
				t.Parallel()
				h := jsHarness(t)
				a := p.agent(stream)
				res, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: &a, Credential: h.seal(t, a.ID), MessageID: id(t), Text: tt.text, TaskID: tt.taskID})
				if res.Outcome != tt.outcome {
					t.Fatalf("result = %+v, want %s", res, tt.outcome)
				}
				if tt.outcome == connector.OutcomeCompleted {
					if res.Text != jsMessageText || res.Err != nil {
						t.Errorf("result = %+v, want %q", res, jsMessageText)
					}
					return
				}
				contains := tt.contains
				if tt.taskID != "" && stream && p.Binding == "HTTP+JSON" {
					// @a2a-js/sdk 0.3.14's restHandler fails to write the 404 of a stream whose
					// first event is an error (sendResponse without its serializer) and answers
					// 500 {"code": -32603, "message": "Bug: toJson serializer ..."} instead: the
					// connector reports what it was told.
					contains = "-32603"
				}
				if res.Err == nil || (tt.code != "" && res.Err.Code != tt.code) || !strings.Contains(res.Err.Message, contains) {
					t.Errorf("error = %+v, want code %q containing %q", res.Err, tt.code, contains)
				}
			})
		}
	}

	// Barge-in during a slow stream: the connector closes the stream and cancels the task on
	// the same binding; the SDK hands the cancel to the executor.
	t.Run("caller_cancel_cancels_the_task", func(t *testing.T) {
		t.Parallel()
		h := jsHarness(t)
		a := p.agent(true)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var texts int
		res := h.inv.Turn(ctx, connector.TurnRequest{Agent: &a, Credential: h.seal(t, a.ID), MessageID: id(t), Text: "slow " + userWords}, func(e connector.TurnEvent) {
			if e.Kind == connector.TextEvent {
				if texts++; texts == 2 {
					cancel()
				}
			}
		})
		if res.Outcome != connector.OutcomeCanceled || !res.Interrupted || res.TaskID == "" || res.Text != "tick 0 tick 1 " {
			t.Fatalf("result = %+v, want CANCELED interrupted with a task and two chunks", res)
		}
		if err := h.inv.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		var cancels []string
		agents.getJSON(t, origin+"/debug/cancels", &cancels)
		if !slices.Contains(cancels, res.TaskID) {
			t.Errorf("executor cancels = %q, want %q among them", cancels, res.TaskID)
		}
		n := 0
		for _, r := range agents.records(t, origin) {
			if r.RPCMethod == cancelMethod && r.TaskID == res.TaskID {
				n++
				if r.APIKey != testAPIKey {
					t.Errorf("cancel without the key")
				}
			}
		}
		if n != 1 {
			t.Errorf("%d %s calls for %s, want 1", n, cancelMethod, res.TaskID)
		}
		if logs := h.logs.String(); !strings.Contains(logs, "tasks/cancel sent") {
			t.Errorf("no successful cancel in the logs:\n%s", logs)
		}
	})

	// The stream ends without a final state: one resubscribe on the same binding, which the SDK
	// answers with the task snapshot, then tasks/get while it says working, then FAILED. No
	// cancel: the agent lost the stream, not us.
	t.Run("stream_without_final_state_resubscribes_then_fails", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, func(o *invoke.Options) { o.IdleTimeout = 2 * time.Second })
		a := p.agent(true)
		res, rec := h.turn(t, t.Context(), connector.TurnRequest{Agent: &a, Credential: h.seal(t, a.ID), MessageID: id(t), Text: "hangup " + userWords})
		if res.Outcome != connector.OutcomeFailed || res.Err == nil || res.Err.Code != connector.CodeStreamEnded || res.TaskID == "" {
			t.Fatalf("result = %+v, want FAILED stream_ended with a task", res)
		}
		if strings.Join(rec.texts(), "") != "partial " {
			t.Errorf("deltas %q, want the one chunk", rec.texts())
		}
		if err := h.inv.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		var later []string
		for _, r := range agents.records(t, origin) {
			if r.MessageID == "" && r.TaskID == res.TaskID {
				later = append(later, r.RPCMethod)
			}
		}
		if len(later) == 0 || later[0] != resubMethod || slices.Contains(later, cancelMethod) {
			t.Errorf("calls after the stream = %q, want %s first and no %s", later, resubMethod, cancelMethod)
		}
	})
}
