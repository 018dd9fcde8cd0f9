//go:build unix

package invoke_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
)

// The interop tests below run the connector against an A2A agent built on the official
// JavaScript SDK (@a2a-js/sdk, pinned in testdata/js-agent/package.json), under the machine's
// Node.js, over real HTTP on loopback: server code written by other people, in another language.
// What the agent does for each user text is described in testdata/js-agent/agent.mjs.

// What testdata/js-agent/agent.mjs answers.
var jsChunks = []string{"The weather ", "is sunny ", "all day."}

const (
	jsAgentDir    = "testdata/js-agent"
	jsQuestion    = "Which city?"
	jsFailText    = "The weather service is down."
	jsCrashText   = "Agent execution error: weather backend crashed"
	jsMessageText = "Hello from the JS agent."
	// jsStartTimeout bounds the wait for the agent's port line (node starts in well under a
	// second; the machine is shared).
	jsStartTimeout = 20 * time.Second
	// jsInstallTimeout bounds npm ci.
	jsInstallTimeout = 5 * time.Minute
	// jsStampName is written into node_modules after a successful npm ci: the hash of the
	// package-lock.json it installed.
	jsStampName = ".a2ac-npm-ci.stamp"
)

// jsAgent is a running testdata/js-agent process.
type jsAgent struct {
	// Origin is http://127.0.0.1:port; URL is the JSON-RPC endpoint (Origin + "/a2a").
	Origin, URL string
	client      *http.Client
}

// jsRequest is one JSON-RPC POST as the agent recorded it (GET /debug/requests).
type jsRequest struct {
	Path        string `json:"path"`
	RPCMethod   string `json:"rpcMethod"`
	MessageID   string `json:"messageId"`
	TaskID      string `json:"taskId"`
	ContextID   string `json:"contextId"`
	APIKey      string `json:"apiKey"`
	Accept      string `json:"accept"`
	ContentType string `json:"contentType"`
}

// pathMethod is what most assertions compare: where a call went and what it was.
type pathMethod struct{ Path, Method string }

// lookTool finds a tool the JS tests need. Missing tools skip the tests on a developer machine,
// but fail them in CI (CI=true), where the runner installs Node.js: a silently skipped interop
// test proves nothing.
func lookTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not found (%v): CI must install Node.js and npm (Debian: apt-get install -y nodejs npm) for the @a2a-js/sdk interop tests", name, err)
	}
	t.Skipf("%s not found (%v): install Node.js >= 18 and npm to run the @a2a-js/sdk interop tests (they fail instead of skipping when CI=true)", name, err)
	return ""
}

// ensureNodeModules runs `npm ci` in dir unless node_modules was installed from the current
// package-lock.json (a stamp file in node_modules records its hash). A lock file keeps two test
// processes from installing at the same time.
func ensureNodeModules(t *testing.T, npm, dir string) {
	t.Helper()
	lockJSON, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatalf("read package-lock.json: %v", err)
	}
	sum := sha256.Sum256(lockJSON)
	want := hex.EncodeToString(sum[:]) + "\n"
	stamp := filepath.Join(dir, "node_modules", jsStampName)

	lock, err := os.OpenFile(filepath.Join(dir, ".npm-ci.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatalf("open npm lock file: %v", err)
	}
	defer lock.Close() // closing releases the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatalf("lock %s: %v", lock.Name(), err)
	}

	if got, err := os.ReadFile(stamp); err == nil && string(got) == want {
		return
	}
	ctx, cancel := context.WithTimeout(t.Context(), jsInstallTimeout)
	defer cancel()
	// --ignore-scripts: none of the pinned packages needs an install script, and a test run has
	// no business executing one.
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	cmd.Dir = dir
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
	t.Logf("npm ci in %s took %s", dir, time.Since(start).Round(time.Millisecond))
	if err := os.WriteFile(stamp, []byte(want), 0o644); err != nil {
		t.Fatalf("write %s: %v", stamp, err)
	}
}

// portWriter collects the agent's stdout and hands over the port of its ready line once.
type portWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	port chan int // buffered, receives once
	sent bool
}

var jsPortLine = regexp.MustCompile(`(?m)^A2A_AGENT_PORT=(\d+)\r?\n`)

func (w *portWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.sent {
		if m := jsPortLine.FindSubmatch(w.buf.Bytes()); m != nil {
			if port, err := strconv.Atoi(string(m[1])); err == nil {
				w.sent = true
				w.port <- port
			}
		}
	}
	return len(p), nil
}

func (w *portWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// outputBuffer is a node process's stdout as a test reads it.
type outputBuffer interface {
	io.Writer
	String() string
}

// nodeProcess is a node program of testdata/ running for a test.
type nodeProcess struct {
	name    string
	stdout  outputBuffer
	stderr  *lockedBuffer
	start   time.Time
	exited  chan struct{}
	waitErr error // valid once exited is closed
	// stdin is the program's standard input (programs that take commands read it).
	stdin io.WriteCloser
}

// startNode installs the packages of dir if needed and starts `node args...` there in its own
// process group, its stdout written to stdout. The process ends, and is waited for, at t's
// cleanup (its output is logged if the test failed); it also exits on its own when its stdin,
// held by this process, closes.
func startNode(t *testing.T, dir string, stdout outputBuffer, args ...string) *nodeProcess {
	t.Helper()
	node := lookTool(t, "node")
	npm := lookTool(t, "npm")
	dir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	ensureNodeModules(t, npm, dir)
	p := &nodeProcess{name: "node " + strings.Join(args, " "), stdout: stdout, stderr: &lockedBuffer{}, exited: make(chan struct{})}
	// t.Context() ends just before cleanup: that kills the process group (Cancel below).
	cmd := exec.CommandContext(t.Context(), node, args...)
	cmd.Dir = dir
	cmd.Stdout = stdout
	cmd.Stderr = p.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// Wait stops copying output this long after the process died, even if a grandchild still
	// holds the pipes.
	cmd.WaitDelay = 2 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdin = stdin
	p.start = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		stdin.Close()
		// Cancel killed the group when t.Context() ended, unless node had exited by then; the
		// group may still hold something node started, so kill it again (harmless otherwise).
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
		if t.Failed() {
			t.Logf("%s stdout:\n%s\n%s stderr:\n%s", p.name, stdout.String(), p.name, p.stderr.String())
		}
	})
	return p
}

// awaitReady returns what the program announces on ready (its ports), or fails the test when it
// exits first or says nothing within jsStartTimeout.
func awaitReady[T any](t *testing.T, p *nodeProcess, ready <-chan T) T {
	t.Helper()
	var v T
	select {
	case v = <-ready:
	case <-p.exited:
		t.Fatalf("%s exited before it was ready: %v\nstdout:\n%s\nstderr:\n%s", p.name, p.waitErr, p.stdout.String(), p.stderr.String())
	case <-time.After(jsStartTimeout):
		t.Fatalf("%s announced nothing within %s\nstdout:\n%s\nstderr:\n%s", p.name, jsStartTimeout, p.stdout.String(), p.stderr.String())
	}
	t.Logf("%s ready (%v) after %s", p.name, v, time.Since(p.start).Round(time.Millisecond))
	return v
}

// startJSAgent starts the 0.3 agent, `node agent.mjs 0`.
func startJSAgent(t *testing.T) *jsAgent {
	t.Helper()
	stdout := &portWriter{port: make(chan int, 1)}
	port := awaitReady(t, startNode(t, jsAgentDir, stdout, "agent.mjs", "0"), stdout.port)
	origin := "http://127.0.0.1:" + strconv.Itoa(port)
	return &jsAgent{Origin: origin, URL: origin + "/a2a", client: loopbackClient(t)}
}

func (a *jsAgent) getJSON(t *testing.T, path string, v any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, a.Origin+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: decode: %v", path, err)
	}
}

// requests returns the JSON-RPC calls the agent saw that match keep.
func (a *jsAgent) requests(t *testing.T, keep func(jsRequest) bool) []jsRequest {
	t.Helper()
	var all []jsRequest
	a.getJSON(t, "/debug/requests", &all)
	return slices.DeleteFunc(all, func(r jsRequest) bool { return !keep(r) })
}

// calls returns where the calls carrying messageID went.
func (a *jsAgent) calls(t *testing.T, messageID string) []pathMethod {
	t.Helper()
	var out []pathMethod
	for _, r := range a.requests(t, func(r jsRequest) bool { return r.MessageID == messageID }) {
		out = append(out, pathMethod{r.Path, r.RPCMethod})
	}
	return out
}

func (a *jsAgent) cancels(t *testing.T) []string {
	t.Helper()
	var ids []string
	a.getJSON(t, "/debug/cancels", &ids)
	return ids
}

// jsHarness is the package's harness with limits roomy enough for a node process on a shared
// machine; the tests still finish in well under a second each.
func jsHarness(t *testing.T) *harness {
	t.Helper()
	return newHarness(t, func(o *invoke.Options) {
		o.TurnTimeout = 30 * time.Second
		o.FirstEventTimeout = 20 * time.Second
		o.IdleTimeout = 20 * time.Second
	})
}

func jsAgentFor(url string, streaming bool) connector.Agent {
	a := agentAt(url, streaming)
	a.ID = "js-agent"
	return a
}

func TestJSInterop(t *testing.T) {
	t.Parallel()
	agent := startJSAgent(t)
	whole := strings.Join(jsChunks, "")

	// The card the SDK serves passes our validation and yields the profile the turns use.
	t.Run("card", func(t *testing.T) {
		t.Parallel()
		hc := netguard.NewClient(netguard.Policy{AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, AllowInsecureHTTP: true},
			netguard.ClientOptions{MaxRedirects: cardfetch.DefaultMaxRedirects})
		t.Cleanup(hc.CloseIdleConnections)
		f := cardfetch.New(cardfetch.Options{Client: hc, AllowInsecureHTTP: true})
		got, rep, err := f.FetchAndValidate(t.Context(), agent.Origin)
		if err != nil {
			t.Fatalf("fetch card: %v", err)
		}
		if !rep.Valid {
			t.Fatalf("card from %s invalid: %+v", got.ResolvedURL, rep.Problems)
		}
		for _, p := range rep.Problems {
			t.Logf("card problem: %+v", p)
		}
		if rep.Profile.EndpointURL != agent.URL || !rep.Profile.Streaming || rep.Profile.ProtocolVersion != "0.3.0" {
			t.Errorf("profile = %+v, want endpoint %s, streaming, protocol 0.3.0", rep.Profile, agent.URL)
		}
		// A turn with the profile exactly as registration derives it.
		h := jsHarness(t)
		res, rec := h.turn(t, t.Context(), connector.TurnRequest{Agent: &connector.Agent{ID: "js-card", Enabled: true, CardProfile: rep.Profile},
			MessageID: "js-card-1", Text: "stream " + userWords})
		if res.Outcome != connector.OutcomeCompleted || res.Text != whole {
			t.Fatalf("result = %+v, want COMPLETED %q", res, whole)
		}
		if diff := cmp.Diff(jsChunks, rec.texts()); diff != "" {
			t.Errorf("deltas (-want +got):\n%s", diff)
		}
	})

	// Streaming on the standard mount: {url}/stream is Express's 404, the connector falls back
	// to url, remembers that, and the next turn goes straight to url. Each chunk is a delta the
	// moment it arrives; the key reaches the agent.
	t.Run("stream_falls_back_to_url_and_remembers", func(t *testing.T) {
		t.Parallel()
		h := jsHarness(t)
		a := jsAgentFor(agent.URL, true)
		key := h.seal(t, a.ID)
		res, rec := h.turn(t, t.Context(), connector.TurnRequest{Agent: &a, Credential: key, MessageID: "js-stream-1",
			Text: "stream " + userWords, ContextID: "ctx-js-session"})
		if res.Outcome != connector.OutcomeCompleted || res.Err != nil || res.Text != whole || res.State != "completed" {
			t.Fatalf("result = %+v, want COMPLETED %q", res, whole)
		}
		if diff := cmp.Diff(jsChunks, rec.texts()); diff != "" {
			t.Errorf("deltas (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"submitted", "working", "completed"}, rec.states()); diff != "" {
			t.Errorf("states (-want +got):\n%s", diff)
		}
		if res.TaskID == "" || res.ContextID != "ctx-js-session" {
			t.Errorf("task %q context %q, want a task id and the session's context", res.TaskID, res.ContextID)
		}
		want := []pathMethod{{"/a2a/stream", "message/stream"}, {"/a2a", "message/stream"}}
		if diff := cmp.Diff(want, agent.calls(t, "js-stream-1")); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
		for _, r := range agent.requests(t, func(r jsRequest) bool { return r.MessageID == "js-stream-1" }) {
			if r.APIKey != testAPIKey || r.Accept != "text/event-stream" || !strings.HasPrefix(r.ContentType, "application/json") {
				t.Errorf("request %s: key %t, Accept %q, Content-Type %q", r.Path, r.APIKey == testAPIKey, r.Accept, r.ContentType)
			}
		}

		res2, rec2 := h.turn(t, t.Context(), connector.TurnRequest{Agent: &a, Credential: key, MessageID: "js-stream-2", Text: "stream again"})
		if res2.Outcome != connector.OutcomeCompleted || res2.Text != whole {
			t.Fatalf("second result = %+v", res2)
		}
		if diff := cmp.Diff(jsChunks, rec2.texts()); diff != "" {
			t.Errorf("second deltas (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]pathMethod{{"/a2a", "message/stream"}}, agent.calls(t, "js-stream-2")); diff != "" {
			t.Errorf("second calls (-want +got):\n%s", diff)
		}
	})

	// A card without streaming: message/send (blocking) on url, the completed Task's artifact
	// carries the three appended parts.
	t.Run("send", func(t *testing.T) {
		t.Parallel()
		h := jsHarness(t)
		res, rec := h.turn(t, t.Context(), connector.TurnRequest{Agent: new(jsAgentFor(agent.URL, false)), MessageID: "js-send-1", Text: "stream " + userWords})
		if res.Outcome != connector.OutcomeCompleted || res.Err != nil || res.Text != whole || res.State != "completed" || res.TaskID == "" {
			t.Fatalf("result = %+v, want COMPLETED %q", res, whole)
		}
		if got := strings.Join(rec.texts(), ""); got != whole {
			t.Errorf("deltas add up to %q", got)
		}
		if diff := cmp.Diff([]pathMethod{{"/a2a", "message/send"}}, agent.calls(t, "js-send-1")); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
	})

	// Each ending, over both paths.
	endings := []struct {
		name        string
		text        string
		taskID      string // continue this task
		wantOutcome connector.Outcome
		wantState   string
		wantText    string
		wantCode    string
		wantErr     string // the error message, or a part of it for agent_rpc_error
	}{
		{name: "rejected_is_handback", text: "reject " + userWords, wantOutcome: connector.OutcomeHandback, wantState: "rejected"},
		{name: "failed_with_the_agents_message", text: "fail " + userWords, wantOutcome: connector.OutcomeFailed, wantState: "failed",
			wantCode: connector.CodeTaskFailed, wantErr: jsFailText},
		{name: "executor_crash_reported_by_the_sdk", text: "crash " + userWords, wantOutcome: connector.OutcomeFailed, wantState: "failed",
			wantCode: connector.CodeTaskFailed, wantErr: jsCrashText},
		{name: "message_result", text: "hello " + userWords, wantOutcome: connector.OutcomeCompleted, wantText: jsMessageText},
		// A hold on a task the agent no longer knows (it restarted): the SDK answers -32001,
		// in a stream as an `event: error` SSE event after a 200 text/event-stream.
		{name: "unknown_task_is_rpc_error", text: "Berlin", taskID: "no-such-task", wantOutcome: connector.OutcomeFailed,
			wantCode: connector.CodeAgentRPCError, wantErr: "-32001"},
	}
	for _, tt := range endings {
		for _, streaming := range []bool{true, false} {
			t.Run(tt.name+map[bool]string{true: "/stream", false: "/send"}[streaming], func(t *testing.T) {
				t.Parallel()
				h := jsHarness(t)
				res, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: new(jsAgentFor(agent.URL, streaming)),
					MessageID: "js-" + strings.ReplaceAll(t.Name(), "/", "-"), Text: tt.text, TaskID: tt.taskID})
				if res.Outcome != tt.wantOutcome || res.State != tt.wantState || res.Text != tt.wantText {
					t.Fatalf("result = %+v, want %s state %q text %q", res, tt.wantOutcome, tt.wantState, tt.wantText)
				}
				switch {
				case tt.wantCode == "" && res.Err != nil:
					t.Errorf("error = %v, want none", res.Err)
				case tt.wantCode != "" && (res.Err == nil || res.Err.Code != tt.wantCode):
					t.Errorf("error = %v, want code %s", res.Err, tt.wantCode)
				case tt.wantCode == connector.CodeAgentRPCError && !strings.Contains(res.Err.Message, tt.wantErr):
					t.Errorf("error message %q, want it to contain %q", res.Err.Message, tt.wantErr)
				case tt.wantCode == connector.CodeTaskFailed && res.Err.Message != tt.wantErr:
					t.Errorf("error message %q, want %q", res.Err.Message, tt.wantErr)
				}
			})
		}
	}

	// input-required ends the turn with the question as the reply; the user's answer continues
	// the same task (taskId and contextId) and completes it.
	for _, streaming := range []bool{true, false} {
		t.Run("input_required_then_continuation"+map[bool]string{true: "/stream", false: "/send"}[streaming], func(t *testing.T) {
			t.Parallel()
			h := jsHarness(t)
			a := jsAgentFor(agent.URL, streaming)
			prefix := "js-ask-" + strconv.FormatBool(streaming)
			first, rec := h.turn(t, t.Context(), connector.TurnRequest{Agent: &a, MessageID: prefix + "-1", Text: "ask " + userWords})
			if first.Outcome != connector.OutcomeInputRequired || first.Text != jsQuestion || first.TaskID == "" || first.ContextID == "" || first.State != "input-required" {
				t.Fatalf("first = %+v, want INPUT_REQUIRED %q with task and context", first, jsQuestion)
			}
			if got := strings.Join(rec.texts(), ""); got != jsQuestion {
				t.Errorf("first deltas = %q, want the question", got)
			}
			second, rec2 := h.turn(t, t.Context(), connector.TurnRequest{Agent: &a, MessageID: prefix + "-2", Text: "Berlin",
				TaskID: first.TaskID, ContextID: first.ContextID})
			const answer = "Weather in Berlin: sunny."
			if second.Outcome != connector.OutcomeCompleted || second.Text != answer || second.TaskID != first.TaskID || second.ContextID != first.ContextID {
				t.Fatalf("second = %+v, want COMPLETED %q on task %s context %s", second, answer, first.TaskID, first.ContextID)
			}
			if got := strings.Join(rec2.texts(), ""); got != answer {
				t.Errorf("second deltas = %q", got)
			}
			sent := agent.requests(t, func(r jsRequest) bool { return r.MessageID == prefix+"-2" })
			if len(sent) == 0 || sent[len(sent)-1].TaskID != first.TaskID || sent[len(sent)-1].ContextID != first.ContextID {
				t.Errorf("continuation requests = %+v, want taskId %s contextId %s", sent, first.TaskID, first.ContextID)
			}
		})
	}

	// The stream ends without a final state: one tasks/resubscribe on the url that worked, which
	// the SDK answers with the Task snapshot and ends (no live execution), then tasks/get while
	// the task says working, for the idle limit, then FAILED. The agent lost the stream, not us:
	// no tasks/cancel.
	t.Run("stream_without_final_state_resubscribes_then_fails", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, func(o *invoke.Options) {
			// The executor is gone, so the task says working for ever: the idle limit ends the
			// turn. Two seconds are far above the gap between the agent's two writes.
			o.IdleTimeout = 2 * time.Second
		})
		res, rec := h.turn(t, t.Context(), connector.TurnRequest{Agent: new(jsAgentFor(agent.URL, true)), MessageID: "js-hangup-1", Text: "hangup " + userWords})
		if res.Outcome != connector.OutcomeFailed || res.Err == nil || res.Err.Code != connector.CodeStreamEnded || res.TaskID == "" || res.Interrupted {
			t.Fatalf("result = %+v, want FAILED stream_ended with a task", res)
		}
		if res.Text != "partial " || strings.Join(rec.texts(), "") != "partial " {
			t.Errorf("text = %q, deltas %q, want the one chunk", res.Text, rec.texts())
		}
		if err := h.inv.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		var later []pathMethod
		for _, r := range agent.requests(t, func(r jsRequest) bool { return r.MessageID == "" && r.TaskID == res.TaskID }) {
			later = append(later, pathMethod{r.Path, r.RPCMethod})
		}
		if len(later) < 2 || later[0] != (pathMethod{"/a2a", "tasks/resubscribe"}) {
			t.Fatalf("calls after the stream = %v, want tasks/resubscribe then tasks/get", later)
		}
		for _, pm := range later[1:] {
			if pm != (pathMethod{"/a2a", "tasks/get"}) {
				t.Errorf("call %v after the resubscribe, want only tasks/get (no tasks/cancel for a lost stream)", pm)
			}
		}
	})

	// Barge-in during a slow stream: the connector closes the stream and sends tasks/cancel to
	// url; the SDK hands it to the executor, which ends the task as canceled.
	t.Run("caller_cancel_sends_tasks_cancel", func(t *testing.T) {
		t.Parallel()
		h := jsHarness(t)
		a := jsAgentFor(agent.URL, true)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var texts int
		start := time.Now()
		res := h.inv.Turn(ctx, connector.TurnRequest{Agent: &a, MessageID: "js-slow-1", Text: "slow " + userWords}, func(e connector.TurnEvent) {
			if e.Kind == connector.TextEvent {
				if texts++; texts == 2 {
					cancel() // barge-in
				}
			}
		})
		if elapsed := time.Since(start); elapsed > slack {
			t.Errorf("turn took %s after a cancel", elapsed)
		}
		if res.Outcome != connector.OutcomeCanceled || res.Err == nil || res.Err.Code != connector.CodeCanceled || !res.Interrupted || res.TaskID == "" {
			t.Fatalf("result = %+v, want CANCELED canceled interrupted with a task", res)
		}
		if res.Text != "tick 0 tick 1 " {
			t.Errorf("text = %q, want the two chunks spoken", res.Text)
		}
		// Close waits for the background tasks/cancel, which returns once the SDK processed it.
		if err := h.inv.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := agent.cancels(t); !slices.Contains(got, res.TaskID) {
			t.Errorf("executor cancels = %q, want %q among them", got, res.TaskID)
		}
		var cancelCalls []pathMethod
		for _, r := range agent.requests(t, func(r jsRequest) bool { return r.RPCMethod == "tasks/cancel" && r.TaskID == res.TaskID }) {
			cancelCalls = append(cancelCalls, pathMethod{r.Path, r.RPCMethod})
		}
		if diff := cmp.Diff([]pathMethod{{"/a2a", "tasks/cancel"}}, cancelCalls); diff != "" {
			t.Errorf("tasks/cancel calls (-want +got):\n%s", diff)
		}
		// The SDK's answer (the canceled Task) was understood.
		if logs := h.logs.String(); !strings.Contains(logs, "tasks/cancel sent") {
			t.Errorf("no successful tasks/cancel in the logs:\n%s", logs)
		}
	})
}
