package probe_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2a-connector/a2a-connector/examples/demo-agent/agent"
	"github.com/a2a-connector/a2a-connector/internal/probe"
)

// An agent that asks for the caller's identity, checked on a deployment that cannot sign
// (no issuer): the check fails in words and says what to do; without the setting there is no
// such check.
func TestCallerIdentity_without_issuer_fails_in_words(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	demo := agent.New(agent.Options{APIKey: apiKey})
	srv := httptest.NewServer(demo.Handler())
	t.Cleanup(srv.Close)
	tg := h.target(t, srv.URL, apiKey)
	rep := probe.New(probe.Config{Cards: h.cards, Invoke: h.opts}).Run(t.Context(), tg)
	for _, c := range rep.Checks {
		if c.Check == probe.CheckIdentity {
			t.Fatalf("an agent without callerIdentity got the check: %+v", c)
		}
	}
	tg.Agent.CallerIdentity = true
	rep = probe.New(probe.Config{Cards: h.cards, Invoke: h.opts}).Run(t.Context(), tg)
	c := find(t, rep, probe.CheckIdentity)
	if c.Status != probe.Fail || !strings.Contains(c.Message, "no identity issuer") || !strings.Contains(c.Fix, "A2AC_IDENTITY_ISSUER") {
		t.Errorf("caller_identity = %+v, want a fail naming the missing issuer and the setting", c)
	}
}
