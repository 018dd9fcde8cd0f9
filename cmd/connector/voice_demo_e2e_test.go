package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
)

func withVoiceDemo() stackOption { return func(c *stackConfig) { c.voice = true } }

// The demo agent of `make run` speaks the voice extension, and a call with it goes as a dialog
// engine would hold it: a balance question answered on the keypad, a silence reprompted, terms
// that must not be interrupted, an interrupted reply acknowledged, and a hand-off to a human.
func TestVoiceCallWithTheDemoAgent(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil, withVoiceDemo())
	const session = "call-1"
	voice := &pb.Channel{Kind: "voice", Locale: "en-US"}
	turn := func(id string, req *pb.HandleTurnRequest) turnResult {
		t.Helper()
		req.TenantId, req.SessionId, req.TurnId, req.AgentId, req.Channel = s.tenant, session, id, s.agent, voice
		return s.request(t, req)
	}

	ask := turn("t1", &pb.HandleTurnRequest{Text: "check my balance"})
	wantOutcome(t, ask, pb.Outcome_OUTCOME_INPUT_REQUIRED)
	wantExpect := &pb.Expect{Input: []pb.InputMode{pb.InputMode_INPUT_MODE_DTMF},
		Dtmf: &pb.DtmfCollection{MaxDigits: 6, EndKey: "#", TimeoutMs: 8000}, NoInputTimeoutMs: 6000}
	if diff := cmp.Diff(wantExpect, ask.final.GetExpect(), protocmp.Transform()); diff != "" {
		t.Errorf("expect of the PIN question (-want +got):\n%s", diff)
	}

	silence := turn("t2", &pb.HandleTurnRequest{NoInput: &pb.NoInput{SilenceMs: 6000}})
	wantOutcome(t, silence, pb.Outcome_OUTCOME_INPUT_REQUIRED)
	if !strings.Contains(silence.final.GetText(), "still there") || silence.final.GetTaskId() != ask.final.GetTaskId() {
		t.Errorf("silence: %q on task %s, want a reprompt of task %s", silence.final.GetText(), silence.final.GetTaskId(), ask.final.GetTaskId())
	}
	if diff := cmp.Diff(wantExpect, silence.final.GetExpect(), protocmp.Transform()); diff != "" {
		t.Errorf("expect of the reprompt (-want +got):\n%s", diff)
	}

	pin := turn("t3", &pb.HandleTurnRequest{Dtmf: &pb.DtmfInput{Digits: "204816", Termination: pb.DtmfTermination_DTMF_TERMINATION_END_KEY}})
	wantOutcome(t, pin, pb.Outcome_OUTCOME_COMPLETED)
	if !strings.Contains(pin.final.GetText(), "1,024.00") || strings.Contains(pin.final.GetText(), "204816") {
		t.Errorf("balance = %q, want the balance and never the PIN", pin.final.GetText())
	}
	if got := pin.final.GetFinish().GetType(); got != pb.FinishType_FINISH_TYPE_COMPLETE {
		t.Errorf("finish = %v, want COMPLETE", got)
	}

	terms := turn("t4", &pb.HandleTurnRequest{Text: "read me the terms"})
	wantOutcome(t, terms, pb.Outcome_OUTCOME_COMPLETED)
	speech, delta := slices.Index(terms.order, "speech"), slices.Index(terms.order, "delta")
	if len(terms.speech) != 1 || terms.speech[0].GetBargeIn() || speech < 0 || delta < 0 || speech > delta {
		t.Errorf("terms: speech %v, events %v; want one barge_in=false before the first text", terms.speech, terms.order)
	}

	// The caller cut the terms off after their first words, and asks something else.
	heard := terms.deltas[0][:len(terms.deltas[0])/2]
	next := turn("t5", &pb.HandleTurnRequest{Text: "what is 3 plus 5", Interruption: &pb.Interruption{TurnId: "t4", HeardText: heard}})
	if !strings.Contains(next.final.GetText(), "You stopped me after") {
		t.Errorf("after an interruption: %q, want the cut acknowledged", next.final.GetText())
	}

	human := turn("t6", &pb.HandleTurnRequest{Text: "I want to talk to a human"})
	wantOutcome(t, human, pb.Outcome_OUTCOME_COMPLETED)
	if f := human.final.GetFinish(); f.GetType() != pb.FinishType_FINISH_TYPE_ESCALATE || f.GetReason() == "" || f.GetSummary() == "" {
		t.Errorf("hand-off finish = %v, want ESCALATE with reason and summary", f)
	}
}
