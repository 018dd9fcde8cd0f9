//go:build e2eotel

package e2eotel

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	connectorService = "a2a-connector"
	agentService     = "a2a-demo-agent"
	consoleService   = "a2a-connector-console-api"
	grpcMethod       = "a2aconnector.v1.Connector/HandleTurn"
)

// onlyOnFailure are the documented metrics a completed turn records nothing in: errors,
// refusals and breakers (a2ac.breaker.open is an up-down counter first moved when a breaker
// opens). Every other documented metric must arrive.
var onlyOnFailure = []string{"a2ac.agent.errors", "a2ac.admission.refused",
	"a2ac.breaker.transitions", "a2ac.breaker.refused", "a2ac.breaker.open"}

// output is what the collector wrote.
type output struct {
	spans   []span
	metrics []metric
	mres    []attrs
}

// complete reports whether the output holds what the turn must leave: the engine's span and the
// connector's spans down to the agent call in the trace, and the turn metrics. Exporters batch,
// so the check waits for it rather than for a fixed time.
func (o output) complete(traceID string) bool {
	var engine, server, agentCall, agentServer bool
	for _, s := range o.spans {
		if s.TraceID != traceID {
			continue
		}
		engine = engine || s.Name == engineSpan
		server = server || (s.Name == grpcMethod && s.Kind == kindServer)
		agentServer = agentServer || (s.service == agentService && s.Kind == kindServer)
		_, isHTTP := s.Attributes.get("http.request.method")
		agentCall = agentCall || (s.service == connectorService && s.Kind == kindClient && isHTTP)
	}
	var turns, fetches bool
	for _, m := range o.metrics {
		turns = turns || m.Name == "a2ac.turns"
		fetches = fetches || m.Name == "a2ac.card.fetches"
	}
	return engine && server && agentCall && agentServer && turns && fetches
}

func readOutput(dir string) (output, error) {
	var o output
	var err error
	if o.spans, err = readSpans(filepath.Join(dir, "traces.jsonl")); err != nil {
		return o, err
	}
	o.metrics, o.mres, err = readMetrics(filepath.Join(dir, "metrics.jsonl"))
	return o, err
}

// TestCollectorOutput checks the collector's files after the turn of TestEngineTurn.
func TestCollectorOutput(t *testing.T) {
	dir := env(t, "E2E_OUT")
	st, err := os.ReadFile(env(t, "E2E_STATE"))
	if err != nil {
		t.Fatal(err)
	}
	state := map[string]string{}
	for _, l := range strings.Split(string(st), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			state[k] = v
		}
	}
	traceID := state["E2E_TRACE_ID"]
	d, err := readDocs(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}

	// Generous: the verdict must not depend on the machine's speed.
	var o output
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		if o, err = readOutput(dir); err != nil {
			t.Fatal(err)
		}
		if o.complete(traceID) || time.Now().After(deadline) {
			break
		}
	}

	t.Run("trace", func(t *testing.T) { checkTrace(t, o, traceID) })
	t.Run("resource", func(t *testing.T) { checkResource(t, o) })
	t.Run("console routes", func(t *testing.T) { checkConsole(t, o) })
	t.Run("documented span attributes", func(t *testing.T) { checkSpanDocs(t, o, d) })
	t.Run("documented metrics", func(t *testing.T) { checkMetrics(t, o, d) })
	t.Run("no secrets", func(t *testing.T) {
		checkSecrets(t, []string{dir, os.Getenv("E2E_LOGS")}, map[string]string{
			"API key":      os.Getenv("E2E_API_KEY"),
			"user's text":  os.Getenv("E2E_USER_MARKER"),
			"admin token":  os.Getenv("E2E_ADMIN_TOKEN"),
			"tenant token": state["E2E_TENANT_TOKEN"],
		})
	})
}

// one returns the single span of the trace that match, failing the test otherwise.
func one(t *testing.T, spans []span, what string, match func(span) bool) span {
	t.Helper()
	var got []span
	for _, s := range spans {
		if match(s) {
			got = append(got, s)
		}
	}
	if len(got) != 1 {
		var all []string
		for _, s := range spans {
			all = append(all, s.service+":"+s.Name)
		}
		t.Fatalf("%d spans are %s, want 1; the trace has %s", len(got), what, strings.Join(all, ", "))
	}
	return got[0]
}

// wantAttrs fails for each key the span lacks, or whose value differs from a non-empty want.
func wantAttrs(t *testing.T, s span, want map[string]string) {
	t.Helper()
	for k, v := range want {
		got, ok := s.Attributes.get(k)
		switch {
		case !ok:
			var keys []string
			for _, kv := range s.Attributes {
				keys = append(keys, kv.Key)
			}
			t.Errorf("%s span %s has no %s (it has %s)", s.service, s.Name, k, strings.Join(keys, ", "))
		case v != "" && got != v:
			t.Errorf("%s span %s: %s = %q, want %q", s.service, s.Name, k, got, v)
		}
	}
}

func wantParent(t *testing.T, child, parent span) {
	t.Helper()
	if child.ParentSpanID != parent.SpanID {
		t.Errorf("%s span %s has parent %s, want %s's %s (%s)", child.service, child.Name,
			child.ParentSpanID, parent.service, parent.Name, parent.SpanID)
	}
}

// checkTrace follows the turn's trace from the engine to the agent call.
func checkTrace(t *testing.T, o output, traceID string) {
	if traceID == "" {
		t.Fatal("no trace id from TestEngineTurn")
	}
	var tr []span
	for _, s := range o.spans {
		if s.TraceID == traceID {
			tr = append(tr, s)
		}
	}
	root := one(t, tr, "the engine's own span", func(s span) bool { return s.Name == engineSpan })
	if root.ParentSpanID != "" || root.service != engineService {
		t.Errorf("engine span: parent %q service %q, want a root span of %s", root.ParentSpanID, root.service, engineService)
	}
	client := one(t, tr, "the engine's gRPC client span", func(s span) bool {
		return s.service == engineService && s.Kind == kindClient
	})
	wantParent(t, client, root)
	server := one(t, tr, "the connector's gRPC server span", func(s span) bool {
		return s.service == connectorService && s.Kind == kindServer
	})
	wantParent(t, server, client)
	for _, s := range []span{client, server} {
		if s.Name != grpcMethod {
			t.Errorf("%s gRPC span is %q, want %q", s.service, s.Name, grpcMethod)
		}
		wantAttrs(t, s, map[string]string{"rpc.system.name": "grpc", "rpc.method": grpcMethod,
			"server.address": "", "rpc.response.status_code": "OK"})
	}
	sess := one(t, tr, "session.HandleTurn", func(s span) bool { return s.Name == "session.HandleTurn" })
	wantParent(t, sess, server)
	wantAttrs(t, sess, map[string]string{"a2ac.outcome": "COMPLETED", "a2ac.tenant.id": "", "a2ac.agent.id": ""})
	inv := one(t, tr, "invoke.Turn", func(s span) bool { return s.Name == "invoke.Turn" })
	wantParent(t, inv, sess)
	wantAttrs(t, inv, map[string]string{"a2ac.outcome": "COMPLETED", "a2a.method": "", "a2a.streaming": "true"})
	if !slices.ContainsFunc(inv.Events, func(e struct {
		Name       string `json:"name"`
		Attributes attrs  `json:"attributes"`
	}) bool {
		return e.Name == "first_text"
	}) {
		t.Errorf("invoke.Turn has no first_text event")
	}
	call := one(t, tr, "the connector's HTTP call to the agent", func(s span) bool {
		_, isHTTP := s.Attributes.get("http.request.method") // the Postgres spans are clients too
		return s.service == connectorService && s.Kind == kindClient && isHTTP
	})
	wantParent(t, call, inv)
	wantAttrs(t, call, map[string]string{"http.request.method": "POST", "http.response.status_code": "200",
		"server.address": "", "server.port": "", "url.full": ""})
	// The demo agent's own server span, from the traceparent the connector sent it.
	agent := one(t, tr, "the demo agent's server span", func(s span) bool {
		return s.service == agentService && s.Kind == kindServer
	})
	wantParent(t, agent, call)
	wantAttrs(t, agent, map[string]string{"http.request.method": "POST", "http.response.status_code": "200",
		"url.path": ""})
}

// checkResource: every process names itself, and carries OTEL_RESOURCE_ATTRIBUTES.
func checkResource(t *testing.T, o output) {
	want := map[string]string{}
	for _, kv := range strings.Split(os.Getenv("OTEL_RESOURCE_ATTRIBUTES"), ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			want[k] = v
		}
	}
	if len(want) == 0 {
		t.Fatal("OTEL_RESOURCE_ATTRIBUTES is empty: nothing to check")
	}
	services := map[string]bool{}
	check := func(what string, res attrs) {
		svc, _ := res.get("service.name")
		services[svc] = true
		for k, v := range want {
			if got, _ := res.get(k); got != v {
				t.Errorf("%s of %q: resource %s = %q, want %q", what, svc, k, got, v)
			}
		}
		for _, k := range []string{"service.version", "service.instance.id"} {
			if _, ok := res.get(k); !ok && svc != engineService {
				t.Errorf("%s of %q: no resource attribute %s", what, svc, k)
			}
		}
	}
	for _, s := range o.spans {
		check("spans", s.res)
	}
	for _, r := range o.mres {
		check("metrics", r)
	}
	for _, svc := range []string{engineService, connectorService, consoleService, agentService} {
		if !services[svc] {
			t.Errorf("nothing arrived from service.name %q (got %v)", svc, services)
		}
	}
}

// checkConsole: console-api's server spans are named after their route and carry http.route,
// and registering the agent traced the card fetch and validation below its request.
func checkConsole(t *testing.T, o output) {
	var register span
	n := 0
	for _, s := range o.spans {
		if s.service != consoleService || s.Kind != kindServer {
			continue
		}
		n++
		route, ok := s.Attributes.get("http.route")
		method, _ := s.Attributes.get("http.request.method")
		if !ok || s.Name != method+" "+route {
			t.Errorf("console-api server span %q: http.route %q (set: %v), want the span named \"METHOD route\"", s.Name, route, ok)
		}
		if s.Name == "POST /v1/agents" {
			register = s
		}
	}
	if n == 0 || register.SpanID == "" {
		t.Fatalf("no console-api span POST /v1/agents among %d server spans", n)
	}
	failed := one(t, o.spans, "the failed card fetch", func(s span) bool {
		r, _ := s.Attributes.get("a2ac.card.result")
		return s.Name == "cardfetch.Fetch" && r != "ok"
	})
	wantAttrs(t, failed, map[string]string{"a2ac.card.result": "http_status", "a2ac.card.attempts": "",
		"http.response.status_code": "404"})
	for _, name := range []string{"cardfetch.Fetch", "cardfetch.Validate"} {
		s := one(t, o.spans, name+" of the registration", func(s span) bool {
			return s.Name == name && s.TraceID == register.TraceID
		})
		wantParent(t, s, register)
	}
}

// checkSpanDocs compares the attribute names of the spans the docs' table lists with the table:
// every exported name is documented, every name the table says a span always has is exported,
// and the documented values of a2a.method include the exported one.
func checkSpanDocs(t *testing.T, o output, d docs) {
	seen := map[string]bool{}
	for _, s := range o.spans {
		doc, ok := d.spans[s.Name]
		if !ok {
			continue
		}
		seen[s.Name] = true
		have := map[string]bool{}
		for _, kv := range s.Attributes {
			have[kv.Key] = true
			if !doc.attrs[kv.Key] {
				t.Errorf("span %s exports %s, which docs/operations.md does not list for it", s.Name, kv.Key)
			}
			if kv.Key == "a2a.method" && !strings.Contains(doc.cell, "`"+kv.Value.String()+"`") {
				t.Errorf("span %s exports a2a.method %q, which docs/operations.md does not list", s.Name, kv.Value.String())
			}
		}
		if s.Status.Code == 2 { // an error: the "always" names are those of a success
			continue
		}
		for k := range doc.always {
			if !have[k] {
				t.Errorf("span %s lacks %s, which docs/operations.md says it always carries", s.Name, k)
			}
		}
	}
	for _, name := range []string{"session.HandleTurn", "invoke.Turn", "cardfetch.Fetch", "cardfetch.Validate"} {
		if !seen[name] {
			t.Errorf("no span %s arrived", name)
		}
	}
}

// checkMetrics: every documented metric a completed turn records arrived with its documented
// type and unit, nothing undocumented arrived under a2ac., the turn was counted once as
// COMPLETED, and the libraries' duration metrics arrived in seconds.
func checkMetrics(t *testing.T, o output, d docs) {
	// Every export of every process is judged, not one of them: the file's order is the order
	// the exports arrived in, which no check may depend on.
	got := map[string]bool{}
	bad := map[string]bool{} // one error per metric and process
	for _, m := range o.metrics {
		got[m.Name] = true
		doc, ok := d.metrics[m.Name]
		switch {
		case !ok && strings.HasPrefix(m.Name, "a2ac.") && !bad[m.Name+m.service]:
			t.Errorf("metric %s (%s) is exported but not in docs/operations.md", m.Name, m.service)
			bad[m.Name+m.service] = true
		case ok && (m.Unit != doc.unit || m.kind() != doc.kind) && !bad[m.Name+m.service]:
			t.Errorf("metric %s (%s) is a %s in %q, documented as a %s in %q",
				m.Name, m.service, m.kind(), m.Unit, doc.kind, doc.unit)
			bad[m.Name+m.service] = true
		}
	}
	for name := range d.metrics {
		if !got[name] && !slices.Contains(onlyOnFailure, name) {
			t.Errorf("documented metric %s did not arrive", name)
		}
	}
	for _, name := range []string{"a2ac.turns", "a2ac.turn.duration", "a2ac.turn.time_to_first_text"} {
		// The connector's exports are cumulative: the largest is the total, whatever order the
		// lines were written in.
		var completed float64
		for _, m := range o.metrics {
			if m.Name != name || m.service != connectorService {
				continue
			}
			var n float64
			for _, p := range m.points() {
				if v, _ := p.Attributes.get("a2ac.outcome"); v == "COMPLETED" {
					n += p.value()
				}
			}
			completed = max(completed, n)
		}
		if completed != 1 {
			t.Errorf("%s{a2ac.outcome=COMPLETED} = %v, want 1 turn", name, completed)
		}
	}
	for _, name := range d.standard {
		if !got[name] {
			t.Errorf("library metric %s (named in docs/operations.md) did not arrive", name)
		}
	}
	for _, m := range o.metrics {
		if !slices.Contains(d.standard, m.Name) || bad[m.Name+m.service] {
			continue
		}
		if m.Unit != "s" || m.kind() != "histogram" {
			t.Errorf("library metric %s (%s) is a %s in %q, want a histogram in s", m.Name, m.service, m.kind(), m.Unit)
			bad[m.Name+m.service] = true
		}
		// The docs promise console-api's request durations by route (the demo agent's own
		// have none: it is not ours).
		if m.Name == "http.server.request.duration" && m.service == consoleService {
			for _, p := range m.points() {
				if _, ok := p.Attributes.get("http.route"); !ok && !bad[m.Name+m.service] {
					t.Errorf("%s of console-api has a point without http.route: %v", m.Name, p.Attributes)
					bad[m.Name+m.service] = true
				}
			}
		}
	}
}

// checkSecrets searches every file under dirs, byte for byte, for each secret.
func checkSecrets(t *testing.T, dirs []string, secrets map[string]string) {
	files := 0
	for _, dir := range dirs {
		if dir == "" {
			continue
		}
		err := filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files++
			for what, s := range secrets {
				if s != "" && bytes.Contains(b, []byte(s)) {
					t.Errorf("%s holds the %s", path, what)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for what, s := range secrets {
		if s == "" {
			t.Errorf("the %s to search for is not set", what)
		}
	}
	t.Logf("searched %d files for %d secrets", files, len(secrets))
}
