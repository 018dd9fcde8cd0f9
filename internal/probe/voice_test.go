package probe_test

import (
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/probe"
	"github.com/a2a-connector/a2a-connector/internal/voiceagent"
)

// TestVoiceExtension: an agent whose card declares the voice extension gets one more check, a
// voice turn (activation header, the extension's input and channel metadata) that it must take;
// agents on the A2A Go SDK v2 that read it through the SDK pass on both wire generations, and
// the check says in words what failed for one that refuses it. An agent without the extension
// gets the same eight checks as before and never a voice turn.
func TestVoiceExtension(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	run := func(o voiceagent.Options) (probe.Report, *voiceagent.Server) {
		t.Helper()
		ag := voiceagent.New(t, o)
		return probe.New(probe.Config{Cards: h.cards, Invoke: h.opts}).Run(t.Context(), h.target(t, ag.CardURL, "")), ag
	}
	withVoice := func(s probe.Status) map[string]probe.Status {
		return allPass(map[string]probe.Status{probe.CheckVoice: s})
	}
	last := func(t *testing.T, rep probe.Report) probe.Result {
		t.Helper()
		c := rep.Checks[len(rep.Checks)-1]
		if c.Check != probe.CheckVoice {
			t.Fatalf("the last check is %s, want %s:\n%s", c.Check, probe.CheckVoice, dump(rep))
		}
		return c
	}

	for _, gen := range []struct {
		name string
		v03  bool
	}{{"A2A_1.0", false}, {"A2A_0.3", true}} {
		t.Run(gen.name+"_passes", func(t *testing.T) {
			t.Parallel()
			rep, ag := run(voiceagent.Options{V03: gen.v03})
			checkReport(t, rep, withVoice(probe.Pass))
			if m := last(t, rep).Message; !strings.Contains(m, "was accepted") || !strings.Contains(m, "finish complete") {
				t.Errorf("voice check says %q, want it accepted and the agent's finish named", m)
			}
			got := ag.Received()
			if len(got) != 2 {
				t.Fatalf("the agent received %d messages, want the plain one and the voice one", len(got))
			}
			plain, voiced := got[0], got[1]
			if plain.Input != nil || !voiced.Activated || voiced.Input["kind"] != "speech" || voiced.Channel["kind"] != "voice" || voiced.Text != "hello" {
				t.Errorf("plain %+v, voice turn %+v: want the skill example, then the same activated as speech on a voice channel", plain, voiced)
			}
		})
	}

	t.Run("refused_metadata_fails", func(t *testing.T) {
		t.Parallel()
		rep, _ := run(voiceagent.Options{Refuse: a2a.ErrInvalidParams})
		checkReport(t, rep, withVoice(probe.Fail))
		c := last(t, rep)
		if !strings.Contains(c.Message, "failed (agent_rpc_error)") || !strings.Contains(c.Message, "-32602") ||
			!strings.Contains(c.Fix, connector.VoiceExtensionURI+"/input") {
			t.Errorf("voice check = %+v, want the agent's refusal in words and the keys to accept", c)
		}
	})

	t.Run("extension_not_found_fails", func(t *testing.T) {
		t.Parallel()
		rep, _ := run(voiceagent.Options{Refuse: a2a.ErrExtensionSupportRequired})
		checkReport(t, rep, withVoice(probe.Fail))
		if c := last(t, rep); !strings.Contains(c.Message, "-32008") || !strings.Contains(c.Fix, "A2A-Extensions header") {
			t.Errorf("voice check = %+v, want -32008 and where the activation is read", c)
		}
	})

	t.Run("without_the_extension_no_check", func(t *testing.T) {
		t.Parallel()
		rep, ag := run(voiceagent.Options{Undeclared: true})
		checkReport(t, rep, allPass(nil))
		for _, r := range ag.Received() {
			if r.Activated || r.Input != nil {
				t.Errorf("an agent without the extension received a voice turn: %+v", r)
			}
		}
	})
}
