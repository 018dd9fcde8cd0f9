package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/session"
)

// TurnRouter is what the console's "try it" needs of session.Router: the very routing, holds,
// continuation and release the connector runs for the dialog engine, so that a test
// conversation behaves exactly as a production one.
type TurnRouter interface {
	HandleTurn(ctx context.Context, t connector.Turn, sink connector.TurnSink) error
	Release(ctx context.Context, tenantID, sessionID string) (released bool, agentID string, err error)
}

var _ TurnRouter = (*session.Router)(nil)

// testSessionPrefix starts the stored id of every console test session. The separator is U+001F
// (unit separator), a control character the gRPC edge refuses in the engine's session ids
// (internal/grpcapi/validate.go), so a test session can never be, nor be found as, a dialog
// engine's session: no other namespace column is needed. The agent id is part of the key, so
// one console conversation id used with two agents is two sessions, and a test hold never routes
// a turn meant for one agent to another.
const testSessionPrefix = "console-test\x1f"

// testSessionID is the stored session id of the console test conversation sessionID with agentID.
func testSessionID(agentID, sessionID string) string {
	return testSessionPrefix + agentID + "\x1f" + sessionID
}

// ruleSessionID is the rule of a test conversation's id: one line of printable text, as short
// as an engine's ids.
var ruleSessionID = fieldRule{required: true, maxBytes: 128}

// ruleUserID is HandleTurnRequest.caller.user_id's rule.
var ruleUserID = fieldRule{required: true, maxBytes: 256}

// testResult is what the console shows after a test turn.
type testResult struct {
	// SessionID is the test conversation: send it with the next turn to continue.
	SessionID string `json:"sessionId"`
	// TurnID names the turn, for the next turn's interruption.
	TurnID  string            `json:"turnId"`
	Outcome connector.Outcome `json:"outcome"`
	// Text is the reply as the dialog engine would get it (empty for HANDBACK).
	Text string `json:"text"`
	// StatusText is the last status message the agent sent: its question for INPUT_REQUIRED,
	// its reason for declining (HANDBACK) or failing.
	StatusText string `json:"statusText"`
	// Continued: the turn went to the task this conversation held, as a dialog session's would.
	Continued bool           `json:"continued"`
	TaskID    string         `json:"taskId,omitempty"`
	ContextID string         `json:"contextId,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
	// HoldExpiresAt is set while the conversation is held by the agent (INPUT_REQUIRED).
	HoldExpiresAt *time.Time `json:"holdExpiresAt,omitempty"`
	Error         *testError `json:"error,omitempty"`
	// Finish, Expect and BargeIn are what a voice-extension agent said: how it ends its part,
	// how to collect the answer to its question, and whether its reply may be interrupted
	// (false when it said so of any part of it). Absent when it did not say.
	Finish  *finishJSON `json:"finish,omitempty"`
	Expect  *expectJSON `json:"expect,omitempty"`
	BargeIn *bool       `json:"bargeIn,omitempty"`
}

type testError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// testSink collects one routed turn for the JSON answer.
type testSink struct {
	held       bool
	statusText string
	bargeIn    *bool
	final      *connector.TurnFinal
}

func (s *testSink) Started(_ *connector.Agent, held bool, _ string) error {
	s.held = held
	return nil
}

func (s *testSink) Event(e connector.TurnEvent) error {
	switch {
	case e.Kind == connector.StatusEvent && strings.TrimSpace(e.Text) != "":
		s.statusText = e.Text
	case e.Kind == connector.SpeechEvent:
		b := e.BargeIn && (s.bargeIn == nil || *s.bargeIn)
		s.bargeIn = &b
	}
	return nil
}

func (s *testSink) Final(f connector.TurnFinal) error {
	s.final = &f
	return nil
}

var errNoTestTurns = &apiError{status: http.StatusNotImplemented, code: "not_implemented", detail: "Test turns are not available on this server."}

// testAgent runs one real turn (the console's "try it") through the session router, in a test
// conversation of its own: an agent that asks a question holds the conversation, and the next
// turn with the same sessionId continues its task, exactly as for the dialog engine.
func (s *Server) testAgent(w http.ResponseWriter, r *http.Request) error {
	var in testTurnRequest
	if err := decode(r, &in); err != nil {
		return err
	}
	var turn connector.Turn
	if err := voiceTurn(&in, &turn); err != nil {
		return err
	}
	turn.TurnID = uuid.NewString()
	if in.TurnID != nil {
		if err := ruleTurnID.check("turnId", *in.TurnID); err != nil {
			return err
		}
		turn.TurnID = *in.TurnID
	}
	if in.UserID != nil {
		if err := ruleUserID.check("userId", *in.UserID); err != nil {
			return err
		}
		turn.UserID = *in.UserID
	}
	sessionID := uuid.NewString()
	if in.SessionID != nil {
		if err := ruleSessionID.check("sessionId", *in.SessionID); err != nil {
			return err
		}
		sessionID = *in.SessionID
	}
	a, err := s.testableAgent(r)
	if err != nil {
		return err
	}
	if s.router == nil {
		return errNoTestTurns
	}
	if err := a.Invocable(); err != nil {
		return notInvocable(err)
	}
	sink := &testSink{}
	turn.TenantID, turn.SessionID, turn.AgentID = a.TenantID, testSessionID(a.ID, sessionID), a.ID
	err = s.router.HandleTurn(r.Context(), turn, sink)
	switch {
	case errors.Is(err, connector.ErrAgentDisabled), errors.Is(err, connector.ErrCredentialsMissing):
		return notInvocable(err) // changed since the check above
	case errors.Is(err, connector.ErrNoInputUnsupported):
		return errNoInputUnsupported(s.voice)
	case err != nil:
		return fmt.Errorf("test agent %s: %w", a.ID, err)
	case sink.final == nil:
		return fmt.Errorf("test agent %s: the turn ended without a result", a.ID)
	}
	f := sink.final
	out := testResult{SessionID: sessionID, TurnID: turn.TurnID, Outcome: f.Outcome, Text: f.Text, StatusText: sink.statusText,
		Continued: sink.held, TaskID: f.TaskID, ContextID: f.ContextID, Metadata: f.Metadata,
		Finish: toFinishJSON(f.Finish), Expect: toExpectJSON(f.Expect), BargeIn: sink.bargeIn}
	if !f.HoldExpiresAt.IsZero() {
		t := f.HoldExpiresAt.UTC()
		out.HoldExpiresAt = &t
	}
	if f.Err != nil {
		out.Error = &testError{Code: f.Err.Code, Message: f.Err.Message}
	}
	return writeJSON(w, http.StatusOK, out)
}

// endTestSession ends a test conversation the way a dialog engine's ReleaseSession does: the hold
// goes, and the agent is asked to cancel the held task (best effort).
func (s *Server) endTestSession(w http.ResponseWriter, r *http.Request) error {
	sessionID := r.PathValue("sessionId")
	if err := ruleSessionID.check("sessionId", sessionID); err != nil {
		return err
	}
	a, err := s.testableAgent(r)
	if err != nil {
		return err
	}
	if s.router == nil {
		return errNoTestTurns
	}
	released, _, err := s.router.Release(r.Context(), a.TenantID, testSessionID(a.ID, sessionID))
	if err != nil {
		return fmt.Errorf("end test session of agent %s: %w", a.ID, err)
	}
	return writeJSON(w, http.StatusOK, map[string]any{"sessionId": sessionID, "released": released})
}

// testableAgent is the agent of the path, if it is the tenant's.
func (s *Server) testableAgent(r *http.Request) (connector.Agent, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return connector.Agent{}, err
	}
	a, err := s.agents.Get(r.Context(), tenantFrom(r.Context()).ID, id)
	if err != nil {
		return connector.Agent{}, fmt.Errorf("test agent: %w", err)
	}
	return a, nil
}

func notInvocable(err error) error {
	return &apiError{status: http.StatusConflict, code: "not_invocable", detail: "The agent cannot be called: " + err.Error() + "."}
}
