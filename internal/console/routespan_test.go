package console

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/a2a-connector/a2a-connector/internal/store"
	"github.com/a2a-connector/a2a-connector/internal/telemetry"
)

// The server span of a console request carries the route it matched as http.route, also when
// the request is refused (here: no token). otelhttp wraps the whole mux, so it never sets it
// itself; a real collector showed the spans without it (make e2e-otel checks it there too).
func TestServerSpanHasRoute(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	p, err := telemetry.Setup(t.Context(), telemetry.Options{ServiceName: "console-test", SpanExporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown(t.Context()) })
	srv := New(Config{Store: store.New(testDB.Pool), AdminToken: adminToken, Logger: slog.New(slog.DiscardHandler)})
	api := httptest.NewServer(p.HTTPHandler(srv.Handler(), "console-api"))
	t.Cleanup(api.Close)

	res, err := http.Get(api.URL + "/v1/agents/42/health")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	var route string
	for _, kv := range spans[0].Attributes {
		if kv.Key == "http.route" {
			route = kv.Value.AsString()
		}
	}
	if route != "/v1/agents/{id}/health" || spans[0].Name != "GET /v1/agents/{id}/health" {
		t.Errorf("span %q has http.route %q, want GET /v1/agents/{id}/health", spans[0].Name, route)
	}
}
