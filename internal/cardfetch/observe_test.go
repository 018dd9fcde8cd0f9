package cardfetch

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/a2a-connector/a2a-connector/internal/cardcheck/cardchecktest"
)

// Card fetches are traced with the card URL's host only (a pasted URL may carry a token in its
// path or query) and counted by result.
func TestFetchAndValidateIsTracedAndCounted(t *testing.T) {
	t.Parallel()
	const token = "tok-5ecret-in-the-url"
	mux := http.NewServeMux()
	mux.HandleFunc("GET /cards/"+token+"/agent.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(cardchecktest.Card(nil))
	})
	mux.HandleFunc("GET /cards/broken.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(cardchecktest.Card(func(c map[string]any) { delete(c, "skills") }))
	})
	srv, client := tlsServer(t, mux)
	host := strings.TrimPrefix(srv.URL, "https://")

	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()); _ = mp.Shutdown(t.Context()) })
	f := New(Options{Client: client, TracerProvider: tp, MeterProvider: mp})

	for _, c := range []struct {
		name        string
		path        string
		wantValid   bool
		wantFetched string // a2ac.card.result of the fetch span
		wantErr     bool
	}{
		{name: "valid", path: "/cards/" + token + "/agent.json?key=" + token, wantValid: true, wantFetched: "ok"},
		{name: "invalid", path: "/cards/broken.json", wantFetched: "ok"},
		{name: "missing", path: "/cards/none.json", wantFetched: "http_status", wantErr: true},
	} {
		spans.Reset()
		_, rep, err := f.FetchAndValidate(t.Context(), srv.URL+c.path)
		if (err != nil) != c.wantErr || (err == nil && rep.Valid != c.wantValid) {
			t.Fatalf("%s: valid %v, err %v", c.name, rep.Valid, err)
		}
		got := map[string]tracetest.SpanStub{}
		for _, s := range spans.GetSpans() {
			got[s.Name] = s
			for _, kv := range s.Attributes {
				if v := kv.Value.String(); strings.Contains(v, token) || strings.Contains(v, "/cards") {
					t.Errorf("%s: span %s records %s=%q", c.name, s.Name, kv.Key, v)
				}
			}
			if strings.Contains(s.Status.Description, "/cards") {
				t.Errorf("%s: span %s status quotes the URL: %q", c.name, s.Name, s.Status.Description)
			}
		}
		fetch, ok := got["cardfetch.Fetch"]
		if !ok {
			t.Fatalf("%s: no fetch span in %v", c.name, got)
		}
		if h := attrValue(fetch, "a2ac.card.host"); h != host {
			t.Errorf("%s: a2ac.card.host = %v, want %s", c.name, h, host)
		}
		if r := attrValue(fetch, "a2ac.card.result"); r != c.wantFetched {
			t.Errorf("%s: a2ac.card.result = %v, want %s", c.name, r, c.wantFetched)
		}
		validate, ok := got["cardfetch.Validate"]
		if c.wantErr {
			if ok {
				t.Errorf("%s: a failed fetch was validated", c.name)
			}
			if s := attrValue(fetch, "http.response.status_code"); s != int64(404) {
				t.Errorf("%s: status code = %v", c.name, s)
			}
			continue
		}
		if !ok {
			t.Fatalf("%s: no validate span", c.name)
		}
		if v := attrValue(validate, "a2ac.card.valid"); v != c.wantValid {
			t.Errorf("%s: a2ac.card.valid = %v", c.name, v)
		}
		if n, _ := attrValue(validate, "a2ac.card.problems").(int64); (n == 0) == !c.wantValid {
			t.Errorf("%s: a2ac.card.problems = %d", c.name, n)
		}
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != MetricFetches {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				v, _ := dp.Attributes.Value(attribute.Key("a2ac.card.result"))
				counts[v.AsString()] = dp.Value
			}
		}
	}
	if diff := cmp.Diff(map[string]int64{"valid": 1, "invalid": 1, "http_status": 1}, counts); diff != "" {
		t.Errorf("%s by result (-want +got):\n%s", MetricFetches, diff)
	}
}

func TestHostOf(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://user:pw@cards.example.com:8443/x?token=1": "cards.example.com:8443",
		" https://cards.example.com ":                      "cards.example.com",
		"not a url at all":                                 "",
		"%zz":                                              "",
	} {
		if got := hostOf(in); got != want {
			t.Errorf("hostOf(%q) = %q, want %q", in, got, want)
		}
	}
	// The userinfo never reaches the host.
	if u, _ := url.Parse("https://user:pw@h/"); hostOf(u.String()) != "h" {
		t.Error("userinfo leaked into the host")
	}
}

func attrValue(s tracetest.SpanStub, key string) any {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.AsInterface()
		}
	}
	return nil
}
