package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/a2a-connector/a2a-connector/internal/voiceagent"
)

// runChat runs `connector chat` against the stack's connector with lines as its input and
// returns what it printed.
func runChat(t *testing.T, s *stack, agentID string, lines []string, flags ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args := append([]string{"-addr", s.server.GRPCAddr(), "-tenant", s.tenant, "-agent", agentID, "-timeout", "20s"}, flags...)
	stdin := strings.NewReader(strings.Join(lines, "\n") + "\n")
	if err := chat(t.Context(), args, func(string) string { return "" }, stdin, &stdout, &stderr); err != nil {
		t.Fatalf("chat: %v\nstderr: %s\nstdout: %s", err, stderr.String(), stdout.String())
	}
	return stdout.String()
}

// TestChatVoiceCommands plays a call with `connector chat` against the real connector and an
// agent on the A2A Go SDK v2 that declares the voice extension: /dtmf (a trailing # is the end
// key), /silence, /interrupt and -channel/-locale reach the agent as the extension's metadata,
// and the agent's finish, expect and barge-in are printed.
func TestChatVoiceCommands(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil)
	voice := voiceagent.New(t, voiceagent.Options{})
	a := s.register(t, voice.CardURL, "")

	out := runChat(t, s, a.ID, []string{
		"/dtmf 1234#",
		"/dtmf 42",
		"my pin",
		"/silence",
		"/interrupt 5",
		"what",
		"read the disclosure",
		"a human please",
		"/silence 250",
		"/quit",
	}, "-channel", "voice", "-locale", "zh-CN")
	for _, want := range []string{
		"/dtmf 1234# (keypad digits", "/silence [ms]", "/interrupt N", // the header says how
		voiceagent.Pressed("1234", "endKey") + "\n[COMPLETED]\n[finish: complete]\n",
		voiceagent.Pressed("42", "timeout"),
		voiceagent.AskPIN + "\n[INPUT_REQUIRED; session held until ",
		"[expect: dtmf (at most 4 digits, end key #, timeout 8s); no input after 6s]\n",
		voiceagent.StillThere,
		"[expect: speech or dtmf (at most 1 digit); no input after 5s]\n",
		`[the next turn cut off the last reply after "Are y"]`,
		voiceagent.Heard("Are y") + voiceagent.Echo("what"),
		"[barge-in off: do not interrupt] " + voiceagent.Disclosure,
		"[finish: escalate (give the caller to a human); reason: " + voiceagent.EscalateReason + "; summary: " + voiceagent.EscalateSummary + "]\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("chat output lacks %q:\n%s", want, out)
		}
	}

	got := voice.Received()
	if len(got) != 8 {
		t.Fatalf("the agent received %d messages, want 8:\n%s", len(got), out)
	}
	for i, r := range got {
		if !r.Activated || r.Channel["kind"] != "voice" || r.Channel["locale"] != "zh-CN" {
			t.Errorf("message %d: activated %v, channel %v; want the extension and -channel/-locale on every turn", i, r.Activated, r.Channel)
		}
	}
	if in := got[0].Input; in["kind"] != "dtmf" || in["dtmf"].(map[string]any)["digits"] != "1234" || in["dtmf"].(map[string]any)["termination"] != "endKey" {
		t.Errorf("/dtmf 1234# reached the agent as %v", in)
	}
	if in := got[1].Input; in["dtmf"].(map[string]any)["termination"] != "timeout" {
		t.Errorf("/dtmf 42 reached the agent as %v", in)
	}
	if in := got[3].Input; in["kind"] != "noInput" || in["silenceMs"] != 5000.0 {
		t.Errorf("/silence reached the agent as %v", in)
	}
	if cut := got[4].Interruption; cut["heardText"] != "Are y" || cut["messageId"] != got[3].MessageID {
		t.Errorf("/interrupt 5 reached the agent as %v, want the first 5 characters of the reply to message %s", cut, got[3].MessageID)
	}
	if got[5].Interruption != nil || got[2].Input["kind"] != "speech" {
		t.Errorf("the interruption is for one turn only, and text on a voice channel is speech: %+v, %+v", got[5], got[2])
	}
	if in := got[7].Input; in["silenceMs"] != 250.0 {
		t.Errorf("/silence 250 reached the agent as %v", in)
	}
}

// TestChatHandbackAndNoInput: a declined turn prints the agent's reason, never an empty speaker
// line; a /silence to an agent without the voice extension is refused in words and sends nothing.
func TestChatHandbackAndNoInput(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil)
	out := runChat(t, s, s.agent, []string{"tell me a joke", "/silence", "/interrupt x", "/quit"})
	for _, want := range []string{
		"] declined: Sorry, I can't help with that.",
		"\n[HANDBACK; the platform handles this turn itself]\n",
		"[not sent: the agent does not declare the voice extension",
		"usage: /interrupt N",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("chat output lacks %q:\n%s", want, out)
		}
	}
	for line := range strings.Lines(out) {
		if strings.HasSuffix(line, "] \n") {
			t.Errorf("an empty speaker line %q:\n%s", line, out)
		}
	}
	if n := len(s.demo.Requests()); n != 1 {
		t.Errorf("the demo agent received %d requests, want only the declined turn's", n)
	}
}
