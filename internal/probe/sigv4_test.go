package probe_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/credential"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
	"github.com/a2a-connector/a2a-connector/internal/probe"
	"github.com/a2a-connector/a2a-connector/internal/sigv4/sigv4test"
)

// TestSigV4Checked: "Check my agent" calls an agent behind a SigV4 verifier (botocore) with the
// AWS key set for it: a good key passes the endpoint check; a wrong secret fails it, with the
// agent's words and what to check, and neither the secret nor the token in the report.
func TestSigV4Checked(t *testing.T) {
	t.Parallel()
	key := credential.AWSKey{AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretAccessKey: "probe-aws-SECRET-DO-NOT-LEAK",
		SessionToken: "probe-aws-TOKEN-DO-NOT-LEAK", Region: "eu-central-1"}
	v := sigv4test.Start(t, key, 5*time.Minute)
	h := newHarness(t)
	srv := httptest.NewServer(v.Handler(fixtureagent.New(t)))
	t.Cleanup(srv.Close)
	cardURL := serveCard(t, v0Card(srv.URL+"/a2a", true, false))
	run := func(k credential.AWSKey) probe.Report {
		tg := h.target(t, cardURL, "")
		tg.Agent.CredentialsSet, tg.Agent.CredentialSetKind = true, connector.CredentialKindAWSSigV4
		plain, err := credential.Credential{Kind: connector.CredentialKindAWSSigV4, AWS: &k}.Plaintext()
		if err != nil {
			t.Fatal(err)
		}
		sealed, err := h.box.Seal(tg.Agent.ID, plain)
		if err != nil {
			t.Fatal(err)
		}
		tg.Credential = &sealed
		return probe.New(probe.Config{Cards: h.cards, Invoke: h.opts}).Run(t.Context(), tg)
	}
	if r := find(t, run(key), probe.CheckEndpoint); r.Status != probe.Pass {
		t.Fatalf("endpoint with the right AWS key: %s %s (%s)", r.Status, r.Message, r.Fix)
	}
	bad := key
	bad.SecretAccessKey = "wrong-" + key.SecretAccessKey
	rep := run(bad)
	r := find(t, rep, probe.CheckEndpoint)
	if r.Status != probe.Fail || !strings.Contains(r.Message, "the agent refused the SigV4 signature: HTTP 403") ||
		!strings.Contains(r.Message, "the signature does not match") || !strings.Contains(r.Fix, "region") {
		t.Errorf("endpoint with a wrong secret: %s %q, fix %q", r.Status, r.Message, r.Fix)
	}
	if d := dump(rep); strings.Contains(d, key.SecretAccessKey) || strings.Contains(d, key.SessionToken) {
		t.Error("the report holds the AWS secret or session token")
	}
}
