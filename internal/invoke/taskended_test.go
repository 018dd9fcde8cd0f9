package invoke_test

import (
	"testing"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
)

// TaskEnded asks the agent, on each wire generation: a task waiting for input is not over, one
// that completed is, and so is one the agent does not know. An agent that cannot be reached
// says nothing either way.
func TestTaskEnded(t *testing.T) {
	t.Parallel()
	for _, gen := range []struct {
		name string
		srv  func(t *testing.T) *fixtureagent.Server
		mod  func(*connector.Agent)
	}{
		{name: "0.3", srv: func(t *testing.T) *fixtureagent.Server { return fixtureagent.New(t) }},
		{name: "1.0", srv: func(t *testing.T) *fixtureagent.Server { return fixtureagent.NewV1(t) },
			mod: func(a *connector.Agent) { a.ProtocolVersion = "1.0" }},
	} {
		t.Run(gen.name, func(t *testing.T) {
			t.Parallel()
			srv := gen.srv(t)
			h := newHarness(t, nil)
			agent := agentAt(srv.URL, true)
			if gen.mod != nil {
				gen.mod(&agent)
			}
			key := h.seal(t, agent.ID)
			waiting, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: &agent, Credential: key, MessageID: "m-1", Text: "behave:input-required"})
			done, _ := h.turn(t, t.Context(), connector.TurnRequest{Agent: &agent, Credential: key, MessageID: "m-2", Text: "behave:stream"})
			if waiting.Outcome != connector.OutcomeInputRequired || done.Outcome != connector.OutcomeCompleted {
				t.Fatalf("setup: outcomes %s, %s", waiting.Outcome, done.Outcome)
			}
			for _, c := range []struct {
				task string
				want bool
			}{
				{task: waiting.TaskID, want: false},
				{task: done.TaskID, want: true},
				{task: "never-heard-of", want: true},
			} {
				got, err := h.inv.TaskEnded(t.Context(), agent, key, c.task)
				if err != nil || got != c.want {
					t.Errorf("TaskEnded(%s) = %v, %v; want %v", c.task, got, err, c.want)
				}
			}
			gone := agentAt(fixtureagent.RefusedURL(t), true)
			if ended, err := h.inv.TaskEnded(t.Context(), gone, nil, done.TaskID); err == nil || ended {
				t.Errorf("TaskEnded at an agent nobody serves = %v, %v; want an error", ended, err)
			}
		})
	}
}
