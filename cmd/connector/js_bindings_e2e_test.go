//go:build unix

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
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

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
)

// A tenant pastes the card URL of an A2A 0.3 agent that serves one binding only — built with
// @a2a-js/sdk 0.3.14's restHandler (0.3 HTTP+JSON, the form of Google's hosted agents) or its
// grpcService (0.3 gRPC) — and the dialog engine converses with it through HandleTurn. The
// agent is internal/invoke/testdata/js-agent/bindings.mjs under the machine's Node.js (the
// packages its package-lock.json pins, installed with npm ci as internal/invoke's tests do).
func TestConversationWithA2A03JSAgentsOfOneBinding(t *testing.T) {
	t.Parallel()
	rest, grpcOrigin := startJSBindingAgents(t)
	tests := []struct {
		name, origin, binding string
	}{
		{name: "http_json_only", origin: rest, binding: "HTTP+JSON"},
		{name: "grpc_only", origin: grpcOrigin, binding: "GRPC"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := startStack(t, nil)
			a := s.register(t, tt.origin+"/.well-known/agent-card.json", "sk-js-binding")
			if a.ProtocolVersion != "0.3.0" || a.EndpointBinding != tt.binding {
				t.Fatalf("registered %s %q at %s, want A2A 0.3.0 over %s", a.ProtocolVersion, a.EndpointBinding, a.EndpointURL, tt.binding)
			}
			list, err := s.client.ListAgents(t.Context(), &pb.ListAgentsRequest{TenantId: s.tenant})
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(list.GetAgents(), func(g *pb.Agent) bool { return g.GetAgentId() == a.ID })
			if i < 0 || list.GetAgents()[i].GetEndpointBinding() != tt.binding || list.GetAgents()[i].GetEndpointUrl() != a.EndpointURL {
				t.Errorf("ListAgents = %v, want the agent with its %s interface", list.GetAgents(), tt.binding)
			}

			chunks := []string{"The weather ", "is sunny ", "all day."}
			r := s.turn(t, "js-stream", a.ID, "stream please")
			wantOutcome(t, r, pb.Outcome_OUTCOME_COMPLETED)
			if diff := cmp.Diff(chunks, r.deltas); diff != "" {
				t.Errorf("deltas (-want +got):\n%s", diff)
			}
			for _, st := range r.states {
				if strings.HasPrefix(st, "TASK_STATE_") {
					t.Errorf("status %q in the proto spelling reached the engine", st)
				}
			}

			ask := s.turn(t, "js-hold", a.ID, "ask me")
			wantOutcome(t, ask, pb.Outcome_OUTCOME_INPUT_REQUIRED)
			if ask.final.GetText() != "Which city?" || ask.final.GetHold() == nil {
				t.Errorf("question turn: text %q hold %v", ask.final.GetText(), ask.final.GetHold())
			}
			answer := s.turn(t, "js-hold", "", "Berlin")
			wantOutcome(t, answer, pb.Outcome_OUTCOME_COMPLETED)
			if answer.final.GetTaskId() != ask.final.GetTaskId() || answer.final.GetText() != "Weather in Berlin: sunny." {
				t.Errorf("continuation: task %s text %q, want task %s and the answer", answer.final.GetTaskId(), answer.final.GetText(), ask.final.GetTaskId())
			}

			wantOutcome(t, s.turn(t, "js-reject", a.ID, "reject this"), pb.Outcome_OUTCOME_HANDBACK)
		})
	}
}

// jsAgentDir is the 0.3 JS agent's folder in internal/invoke's testdata.
const jsAgentDir = "../../internal/invoke/testdata/js-agent"

// startJSBindingAgents runs `node bindings.mjs` for the test and returns the origins of its
// HTTP+JSON agent and of its gRPC agent's card. It skips without Node.js, except under CI.
func startJSBindingAgents(t *testing.T) (rest, grpcOrigin string) {
	t.Helper()
	ports := runJSAgents(t, "bindings.mjs", regexp.MustCompile(`(?m)^A2A_BINDING_PORTS=(\d+) (\d+)\r?\n`))
	return "http://127.0.0.1:" + ports[0], "http://127.0.0.1:" + ports[1]
}

// runJSAgents runs `node script` in jsAgentDir (its packages installed first) until the test
// ends and returns the ports its first stdout line matching re announces (re's submatches). It
// skips without Node.js, except under CI.
func runJSAgents(t *testing.T, script string, re *regexp.Regexp) []string {
	t.Helper()
	return runNodeAgents(t, jsAgentDir, re, script)
}

// runNodeAgents is runJSAgents for the program `node args...` in agentDir, a folder of
// internal/invoke's testdata with its own package-lock.json.
func runNodeAgents(t *testing.T, agentDir string, re *regexp.Regexp, args ...string) []string {
	t.Helper()
	tool := func(name string) string {
		p, err := exec.LookPath(name)
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s not found: CI must install Node.js and npm", name)
			}
			t.Skipf("%s not found: install Node.js and npm to run the @a2a-js/sdk tests", name)
		}
		return p
	}
	node, npm := tool("node"), tool("npm")
	dir, err := filepath.Abs(agentDir)
	if err != nil {
		t.Fatal(err)
	}
	npmCI(t, npm, dir)

	out := &portsLine{re: re, ready: make(chan []string, 1)}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), node, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, out, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	stdin, err := cmd.StdinPipe() // the program exits when its stdin closes
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		stdin.Close()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	select {
	case ports := <-out.ready:
		return ports
	case err := <-exited:
		t.Fatalf("node %s exited: %v\n%s", strings.Join(args, " "), err, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("node %s announced no ports", strings.Join(args, " "))
	}
	return nil
}

// npmCI installs dir's pinned packages unless they are installed from the same lock file,
// the way internal/invoke's tests do (same stamp, same lock), so either may install them.
func npmCI(t *testing.T, npm, dir string) {
	t.Helper()
	lockJSON, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lockJSON)
	want := hex.EncodeToString(sum[:]) + "\n"
	stamp := filepath.Join(dir, "node_modules", ".a2ac-npm-ci.stamp")
	lock, err := os.OpenFile(filepath.Join(dir, ".npm-ci.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(stamp); err == nil && string(got) == want {
		return
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
	if err := os.WriteFile(stamp, []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
}

// portsLine hands over the submatches of the first line of a program's stdout that matches re.
type portsLine struct {
	re    *regexp.Regexp
	mu    sync.Mutex
	buf   bytes.Buffer
	ready chan []string
	sent  bool
}

func (w *portsLine) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.sent {
		if m := w.re.FindSubmatch(w.buf.Bytes()); m != nil {
			w.sent = true
			ports := make([]string, 0, len(m)-1)
			for _, g := range m[1:] {
				if _, err := strconv.Atoi(string(g)); err == nil {
					ports = append(ports, string(g))
				}
			}
			w.ready <- ports
		}
	}
	return len(p), nil
}
