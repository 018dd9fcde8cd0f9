package telemetry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func TestRedactValue(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"https://agent.example.com/a2a/stream", "https://agent.example.com/a2a/stream"},
		{"https://agent.example.com/a2a?key=s3cret&x=1", "https://agent.example.com/a2a?REDACTED"},
		{"https://user:pw@agent.example.com/a2a#frag", "https://agent.example.com/a2a"},
	} {
		got, _ := redactValue(attribute.String("url.full", c.in))
		if got.Value.AsString() != c.want {
			t.Errorf("redact(%q) = %q, want %q", c.in, got.Value.AsString(), c.want)
		}
	}
	if kv, changed := redactValue(attribute.String("url.query", "key=s3cret")); !changed || kv.Valid() {
		t.Error("url.query is not dropped")
	}
	if _, changed := redactValue(attribute.String("server.address", "agent.example.com")); changed {
		t.Error("an unrelated attribute was rewritten")
	}
}

// A real agent call through the real instrumentation: the exported client span carries no
// query-string credential.
func TestAgentSpanURLsAreRedacted(t *testing.T) {
	t.Parallel()
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer agent.Close()
	spans := tracetest.NewInMemoryExporter()
	p, err := Setup(t.Context(), Options{ServiceName: "t", SpanExporter: spans})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	client := &http.Client{Transport: p.AgentTransport(http.DefaultTransport)}
	resp, err := client.Get(agent.URL + "/a2a?key=s3cret-in-the-card")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := spans.GetSpans()
	if len(got) == 0 {
		t.Fatal("no span exported")
	}
	var sawURL bool
	for _, s := range got {
		for _, kv := range s.Attributes {
			if strings.Contains(kv.Value.String(), "s3cret") {
				t.Errorf("span %s attribute %s = %q", s.Name, kv.Key, kv.Value.String())
			}
			if kv.Key == "url.full" {
				sawURL = true
			}
		}
	}
	if !sawURL {
		t.Error("no url.full attribute: the check above proves nothing")
	}
}
