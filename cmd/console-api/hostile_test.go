package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/a2a-connector/a2a-connector/examples/demo-agent/agent"
	"github.com/a2a-connector/a2a-connector/internal/hostile"
)

// Hostile requests against the live console: the real program (run, as main calls it) on a
// loopback port, real Postgres behind it, the real demo agent as the only card host. Two
// drivers share one oracle (consoleStack.exercise):
//
//   - TestHostileRequestsToTheLiveConsole sends hostileRequests seeded requests in every `make
//     test`: random routes and methods, bodies built member by member from hostile strings,
//     wrong types, unknown members and userinfo URLs, a third of them mutated byte by byte;
//   - FuzzConsoleAPI lets the fuzzer mutate method, path, Content-Type, credentials and body
//     (`make fuzz`; CI runs its seeds).
//
// The oracle: no transport error (a handler panic closes the connection), no 5xx except a 502
// card_unreachable for a card host that failed, every error a problem+json document of its own
// status, no internals (hostile.Leaks), no echoed credential; and afterwards the process is
// live, ready and still serves the tenant.

// hostileRequests is how many requests the seeded test sends: enough to cover every route with
// every kind of value many times, little enough for `make test` (a few seconds).
const hostileRequests = 1000

// consoleStack is a running console-api with a tenant, a second tenant, and the demo agent
// registered through the API.
type consoleStack struct {
	base       string // http://127.0.0.1:port
	admin      string
	demoURL    string // the demo agent's origin
	closedAddr string // 127.0.0.1:port where nothing listens
	logs       *syncBuffer
	client     *http.Client

	mu                     sync.Mutex
	tenantID, token, other string
	agentID                string
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// closedAddr is a loopback address nothing listens on (its port was the kernel's choice, and is
// closed again).
func closedAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func startConsole(tb testing.TB) *consoleStack {
	tb.Helper()
	return startConsoleWith(tb, nil)
}

// startConsoleWith is startConsole with more settings (they win over the defaults).
func startConsoleWith(tb testing.TB, settings map[string]string) *consoleStack {
	tb.Helper()
	demo := httptest.NewServer(agent.New(agent.Options{}).Handler())
	tb.Cleanup(demo.Close)
	s := &consoleStack{
		admin: "admin-token-hostile-0123456789", demoURL: demo.URL,
		closedAddr: closedAddr(tb), logs: &syncBuffer{},
		client: &http.Client{
			Timeout: time.Minute, // a failing run only; a test turn is bounded by 10 s
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse // a 301 is an answer to judge, not to follow
			},
		},
	}
	vars := map[string]string{
		"DATABASE_URL":             testDB.URL,
		"A2AC_SECRET_KEY":          base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, 32)),
		"A2AC_ADMIN_TOKEN":         s.admin,
		"A2AC_LOG_LEVEL":           "info",
		"A2AC_ALLOW_INSECURE_HTTP": "true",
		"A2AC_ALLOWED_CIDRS":       "127.0.0.0/8",
		"A2AC_TURN_TIMEOUT":        "10s",
	}
	maps.Copy(vars, settings)
	s.base = "http://" + openConsole(tb, vars, s.logs).Addr()
	for i := 0; ; i++ {
		if resp, err := http.Get(s.base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if i > 500 {
			tb.Fatalf("console-api never became ready; log:\n%s", s.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.tenantID, s.token = s.newTenant(tb, "hostile")
	_, s.other = s.newTenant(tb, "hostile-other")
	s.agentID = s.registerDemo(tb)
	return s
}

// call sends one well-formed request and decodes its JSON answer.
func (s *consoleStack) call(tb testing.TB, method, path, token string, body any, want int) map[string]any {
	tb.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(method, s.base+path, bytes.NewReader(b))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.client.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		tb.Fatalf("%s %s = %d, want %d: %s", method, path, resp.StatusCode, want, raw)
	}
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m
}

func (s *consoleStack) newTenant(tb testing.TB, name string) (id, token string) {
	m := s.call(tb, "POST", "/v1/tenants", s.admin, map[string]string{"name": name}, http.StatusCreated)
	return m["id"].(string), m["token"].(string)
}

func (s *consoleStack) registerDemo(tb testing.TB) string {
	// A fragment makes each registration's URL its own (canonicalization drops it, but the
	// query stays): the tenant may hold several registrations of the one demo agent.
	u := s.demoURL + agent.CardPath + "?n=" + uuid.NewString()
	return s.call(tb, "POST", "/v1/agents", s.token, map[string]string{"cardUrl": u}, http.StatusCreated)["id"].(string)
}

// consoleInput is one request as the fuzzer sees it. Path placeholders {tenant}, {agent} and
// {other-agent} become real ids ({other-agent} a fresh UUID, which names nothing).
type consoleInput struct {
	method, ctype, auth uint8
	path                string
	body                []byte
}

var (
	fuzzMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "PROPFIND", "get"}
	fuzzCtypes  = []string{"application/json", "", "text/plain", "application/x-www-form-urlencoded",
		"application/json; charset=latin1", "multipart/form-data; boundary=x", "application/problem+json", "*/*"}
)

// upstreamReasons are the card_unreachable reasons that mean the card host (or the way to it)
// failed: the only 5xx the console may answer.
var upstreamReasons = []string{"dns", "refused", "timeout", "blocked_address", "tls", "http_status",
	"not_json", "too_large", "redirects", "network"}

// exercise sends in, judges the answer and returns its status.
func (s *consoleStack) exercise(t testing.TB, in consoleInput) int {
	t.Helper()
	s.mu.Lock()
	tenantID, token, other, agentID := s.tenantID, s.token, s.other, s.agentID
	s.mu.Unlock()
	method := fuzzMethods[int(in.method)%len(fuzzMethods)]
	path := strings.NewReplacer("{tenant}", tenantID, "{agent}", agentID, "{other-agent}", uuid.NewString()).Replace(in.path)
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	body := s.keepCardHostsLocal(in.body)
	req, err := http.NewRequest(method, s.base, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.URL.Path = path
	if ct := fuzzCtypes[int(in.ctype)%len(fuzzCtypes)]; ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	switch in.auth % 6 {
	case 1:
		req.Header.Set("Authorization", "Bearer "+s.admin)
	case 2, 5:
		req.Header.Set("Authorization", "Bearer "+token)
	case 3:
		req.Header.Set("Authorization", "Bearer "+other)
	case 4:
		req.Header.Set("Authorization", "Bearer a2ac_not-a-token")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		// A handler that panics gets its connection closed: the client sees it here.
		t.Fatalf("%s %q: no answer: %v\nlog:\n%s", method, path, err, tail(s.logs.String()))
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%s %q: answer cut: %v", method, path, err)
	}
	what := fmt.Sprintf("%s %q (body %q) = %d", method, path, clip(body), resp.StatusCode)

	var doc struct {
		Status       int
		Code, Reason string
	}
	if resp.StatusCode >= 400 && method != "HEAD" {
		if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
			t.Fatalf("%s: Content-Type %q, want application/problem+json: %s", what, ct, answer)
		}
		if err := json.Unmarshal(answer, &doc); err != nil || doc.Status != resp.StatusCode || doc.Code == "" {
			t.Fatalf("%s: not a problem document of its status (%v): %s", what, err, answer)
		}
	}
	if resp.StatusCode >= 500 && !(resp.StatusCode == http.StatusBadGateway && doc.Code == "card_unreachable" &&
		slices.Contains(upstreamReasons, doc.Reason)) && method != "HEAD" {
		t.Fatalf("%s: a 5xx that is not a card host's failure: %s", what, answer)
	}
	if resp.StatusCode >= 500 && method == "HEAD" && resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("%s: a 5xx", what)
	}
	if resp.StatusCode == http.StatusMethodNotAllowed && resp.Header.Get("Allow") == "" {
		t.Fatalf("%s: 405 without Allow", what)
	}
	seen := string(answer) + " " + fmt.Sprint(resp.Header)
	// The web console's files and the OpenAPI document are fixed texts of the binary (and talk
	// about TLS and JSON); everything else the API writes is judged.
	static := resp.StatusCode < 300 && (!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/") ||
		req.URL.Path == "/openapi.json")
	for _, leak := range hostile.Leaks(seen) {
		if static {
			break
		}
		// What the request itself said may come back (the demo agent repeats the user, an
		// unknown member is named): only what the server added is a leak.
		if _, match, _ := strings.Cut(leak, ": "); !bytes.Contains(body, []byte(match)) && !strings.Contains(path, match) {
			t.Fatalf("%s: the answer shows internals (%s): %s", what, leak, answer)
		}
	}
	for _, secret := range secretsOf(body) {
		if bytes.Count(body, []byte(secret)) == 1 && !strings.Contains(path, secret) && strings.Contains(seen, secret) {
			t.Fatalf("%s: the answer repeats a credential of the request (%q): %s", what, secret, answer)
		}
	}
	for _, tok := range []string{s.admin, token, other} {
		// A token is shown once, by the route that mints it; never again.
		if strings.Contains(seen, tok) {
			t.Fatalf("%s: the answer shows a bearer token", what)
		}
	}
	if method == "DELETE" && resp.StatusCode == http.StatusNoContent && strings.TrimSuffix(path, "/") == "/v1/tenants/"+tenantID {
		// The fuzzer deleted the tenant, its token and agent with it: start a new one.
		s.mu.Lock()
		if s.tenantID == tenantID {
			s.tenantID, s.token = s.newTenant(t, "hostile")
			s.agentID = s.registerDemo(t)
		}
		s.mu.Unlock()
		return resp.StatusCode
	}
	if method == "DELETE" && resp.StatusCode == http.StatusNoContent && strings.Contains(path, agentID) {
		// The fuzzer deleted the agent the other routes use: register another.
		s.mu.Lock()
		if s.agentID == agentID {
			s.agentID = s.registerDemo(t)
		}
		s.mu.Unlock()
	}
	return resp.StatusCode
}

// keepCardHostsLocal points every card URL of a JSON body whose host is not loopback (or the
// blocked metadata address, which netguard refuses before connecting) at a closed loopback
// port: the fuzzer's URLs must not reach DNS or the internet. Everything else of the URL, and of
// the body, is kept; bodies that are not UTF-8 JSON are sent as they are (the server refuses
// them before looking at any URL).
func (s *consoleStack) keepCardHostsLocal(body []byte) []byte {
	if !utf8.Valid(body) {
		return body
	}
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		return body
	}
	changed := false
	for k, v := range m {
		str, ok := v.(string)
		if !ok || !strings.EqualFold(k, "cardUrl") {
			continue
		}
		u, err := url.Parse(strings.TrimSpace(str))
		if err != nil || u.Host == "" || localHost(u.Hostname()) {
			continue
		}
		u.Host = s.closedAddr
		m[k], changed = u.String(), true
	}
	if !changed {
		return body
	}
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}

func localHost(h string) bool {
	if h == "localhost" || h == "169.254.169.254" {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.IsLoopback()
}

// secretsOf are the credentials a request body carries: a card URL's userinfo and an apiKey,
// when long enough to be told apart from ordinary text.
func secretsOf(body []byte) []string {
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		return nil
	}
	var out []string
	for k, v := range m {
		str, ok := v.(string)
		if !ok {
			continue
		}
		switch {
		case strings.EqualFold(k, "apiKey") && len(str) >= 8:
			out = append(out, str)
		case strings.EqualFold(k, "cardUrl"):
			if u, err := url.Parse(strings.TrimSpace(str)); err == nil && u.User != nil {
				if pw, ok := u.User.Password(); ok && len(pw) >= 6 {
					out = append(out, pw)
				}
				if name := u.User.Username(); len(name) >= 8 {
					out = append(out, name)
				}
			}
		}
	}
	return out
}

// checkHealthy: after the barrage the process is live and ready and still serves the tenant.
func (s *consoleStack) checkHealthy(t testing.TB) {
	t.Helper()
	for _, p := range []string{"/healthz", "/readyz"} {
		resp, err := s.client.Get(s.base + p)
		if err != nil {
			t.Fatalf("GET %s: %v", p, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d after the hostile requests", p, resp.StatusCode)
		}
	}
	s.mu.Lock()
	token := s.token
	s.mu.Unlock()
	s.call(t, "GET", "/v1/agents", token, nil, http.StatusOK)
	for _, bad := range []string{"panic", "SQLSTATE", hostile.Password} {
		if strings.Contains(s.logs.String(), bad) {
			t.Errorf("the log holds %q:\n%s", bad, tail(s.logs.String()))
		}
	}
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}

// routeTemplate is a route of the API and the members its body may have.
type routeTemplate struct {
	method, path string
	members      []string
	weight       int
}

var consoleRoutes = []routeTemplate{
	{"POST", "/v1/tenants", []string{"name"}, 6},
	{"POST", "/v1/tenants/{tenant}/tokens", nil, 2},
	{"GET", "/v1/tenants", nil, 1},
	{"GET", "/v1/tenants/{tenant}/tokens", nil, 1},
	{"DELETE", "/v1/tenants/{tenant}/tokens/{other-agent}", nil, 1},
	{"GET", "/v1/tokens", nil, 1},
	{"DELETE", "/v1/tokens/{other-agent}", nil, 1},
	{"POST", "/v1/agents/validate", []string{"cardUrl"}, 8},
	{"POST", "/v1/agents", []string{"cardUrl", "apiKey"}, 8},
	{"GET", "/v1/agents", nil, 2},
	{"GET", "/v1/agents/{agent}", nil, 2},
	{"PATCH", "/v1/agents/{agent}", []string{"apiKey", "enabled"}, 6},
	{"DELETE", "/v1/agents/{other-agent}", nil, 1},
	{"DELETE", "/v1/agents/{agent}", nil, 1},
	{"POST", "/v1/agents/{agent}/refresh", nil, 2},
	{"POST", "/v1/agents/{agent}/test", []string{"text", "sessionId"}, 6},
	{"DELETE", "/v1/agents/{agent}/test/s1", nil, 1},
	{"GET", "/healthz", nil, 1},
	{"GET", "/openapi.json", nil, 1},
	{"GET", "/", nil, 1},
	{"GET", "/ui/app.js", nil, 1},
	{"PUT", "/v1/agents", []string{"cardUrl"}, 2},
	{"GET", "/v1/nope", nil, 1},
}

// hostileRequest generates one request: mostly a real route with its method, members of the
// right name with hostile or good values, sometimes a wrong method, a hostile path, an unknown
// member or a wrong type; a third of the bodies mutated byte by byte.
func (s *consoleStack) hostileRequest(r *rand.Rand) consoleInput {
	total := 0
	for _, rt := range consoleRoutes {
		total += rt.weight
	}
	pick := r.IntN(total)
	var rt routeTemplate
	for _, c := range consoleRoutes {
		if pick -= c.weight; pick < 0 {
			rt = c
			break
		}
	}
	in := consoleInput{path: rt.path, ctype: uint8(r.IntN(len(fuzzCtypes))), auth: 2}
	in.method = uint8(slices.Index(fuzzMethods, rt.method))
	if r.IntN(10) == 0 {
		in.method = uint8(r.IntN(len(fuzzMethods)))
	}
	switch {
	case strings.HasPrefix(rt.path, "/v1/tenants"):
		in.auth = 1
	case r.IntN(15) == 0:
		in.auth = uint8(r.IntN(6))
	}
	if r.IntN(12) == 0 {
		in.path = strings.Replace(rt.path, "{agent}", url.PathEscape(hostile.String(r)), 1)
		if r.IntN(2) == 0 {
			in.path = "/v1/agents/" + hostile.String(r) // unescaped: NUL, spaces, ..
		}
	}
	var members []hostile.Member
	for _, name := range rt.members {
		if r.IntN(6) == 0 {
			continue // a member left out
		}
		members = append(members, hostile.Member{Key: name, Value: s.memberValue(r, name)})
	}
	if r.IntN(10) == 0 {
		members = append(members, hostile.Member{Key: hostile.String(r), Value: hostile.String(r)})
	}
	switch {
	case len(rt.members) == 0 && r.IntN(3) > 0:
		// no body
	case r.IntN(30) == 0:
		in.body = hostile.JSON([]any{hostile.String(r)})
	default:
		in.body = hostile.JSON(members)
	}
	if r.IntN(3) == 0 {
		in.body = hostile.Mutate(r, in.body)
	}
	return in
}

// memberValue is a value for member name: good, hostile, or of a wrong type.
func (s *consoleStack) memberValue(r *rand.Rand, name string) any {
	if r.IntN(8) == 0 {
		return []any{nil, 42.0, true, []any{}, []hostile.Member{}, hostile.RawJSON("1e309"),
			hostile.RawJSON(strings.Repeat("[", 300) + strings.Repeat("]", 300)),
			hostile.RawJSON(`{"a":` + strings.Repeat(`{"a":`, 100) + `1` + strings.Repeat("}", 101))}[r.IntN(8)]
	}
	host := strings.TrimPrefix(s.demoURL, "http://")
	card := s.demoURL + agent.CardPath
	switch name {
	case "cardUrl":
		return []string{
			card, s.demoURL, s.demoURL + "/", card + "?v=" + uuid.NewString(),
			"http://user:" + hostile.Password + "@" + host + agent.CardPath,
			"http://" + hostile.Password + "@" + host + "/",
			"https://user:" + hostile.Password + "@agent.example.com/card.json",
			card[:r.IntN(len(card)+1)] + hostile.String(r) + card[r.IntN(len(card)+1):],
			"http://" + s.closedAddr + "/card.json", s.demoURL + "/nope.json", "http://169.254.169.254/latest/meta-data",
			"https://example.com/card.json", "http://" + hostile.String(r) + "/card.json", hostile.String(r),
		}[r.IntN(14)]
	case "apiKey":
		return []string{"", "sk-hostile-" + uuid.NewString(), hostile.String(r), "k\r\nX-Injected: 1", " padded "}[r.IntN(5)]
	case "enabled":
		return r.IntN(2) == 0
	case "text":
		return []string{"重复我说的话：你好", "hi", "帮我算加法", "line\nbreak\ttab", hostile.String(r)}[r.IntN(5)]
	case "sessionId":
		return []string{"s1", uuid.NewString(), hostile.String(r)}[r.IntN(3)]
	}
	return hostile.String(r) // name
}

func TestHostileRequestsToTheLiveConsole(t *testing.T) {
	t.Parallel()
	s := startConsole(t)
	const seed = 12
	r := rand.New(rand.NewPCG(seed, seed))
	statuses := map[int]int{}
	for range hostileRequests {
		statuses[s.exercise(t, s.hostileRequest(r))]++
	}
	s.checkHealthy(t)
	t.Logf("%d hostile requests (seed %d), answers by status: %v", hostileRequests, seed, statuses)
}

// FuzzConsoleAPI mutates whole requests to the live console. Seeds are hostile requests that
// once reached Postgres or leaked internals, and their kin; `make fuzz` runs it (FUZZTIME), CI
// runs the seeds.
func FuzzConsoleAPI(f *testing.F) {
	s := startConsole(f)
	host := strings.TrimPrefix(s.demoURL, "http://")
	card := s.demoURL + agent.CardPath
	seeds := []consoleInput{
		{method: 2, path: "/v1/tenants", auth: 1, body: []byte(`{"name":"a\u0000b"}`)},
		{method: 2, path: "/v1/tenants", auth: 1, body: []byte("{\"name\":\"a\xffb\"}")},
		{method: 2, path: "/v1/tenants", auth: 1, body: []byte(`{"name":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`)},
		{method: 2, path: "/v1/tenants/{tenant}/tokens", auth: 1},
		{method: 2, path: "/v1/tenants/a%00b/tokens", auth: 1},
		{method: 2, path: "/v1/agents", auth: 2, body: []byte(`{"cardUrl":"http://user:` + hostile.Password + `@` + host + agent.CardPath + `"}`)},
		{method: 2, path: "/v1/agents/validate", auth: 2, body: []byte(`{"cardUrl":"http://` + host + `/a\u0000b"}`)},
		{method: 2, path: "/v1/agents/validate", auth: 2, body: []byte("{\"cardUrl\":\"http://\xff\xfe/card.json\"}")},
		{method: 2, path: "/v1/agents/validate", auth: 2, body: []byte(`{"cardUrl":"` + card + `"}`)},
		{method: 2, path: "/v1/agents", auth: 2, body: []byte(`{"cardUrl":"` + card + `?x=1","apiKey":"k\r\nX: 1"}`)},
		{method: 2, path: "/v1/agents", auth: 2, body: []byte(`{"cardUrl":"` + card + `","color":"red"}`), ctype: 3},
		{method: 2, path: "/v1/agents", auth: 2, body: []byte(`{"cardUrl":42}`)},
		{method: 3, path: "/v1/agents", auth: 2, body: []byte(`{}`)},
		{method: 4, path: "/v1/agents/{agent}", auth: 2, body: []byte(`{"apiKey":"clé","enabled":"yes"}`)},
		{method: 4, path: "/v1/agents/{agent}", auth: 3, body: []byte(`{"enabled":false}`)},
		{method: 2, path: "/v1/agents/{agent}/test", auth: 2, body: []byte(`{"text":"重复我说的话：hi\u0000"}`)},
		{method: 2, path: "/v1/agents/{agent}/test", auth: 2, body: []byte(`{"text":"重复我说的话：你好"}`)},
		{method: 2, path: "/v1/agents/{agent}/refresh", auth: 2},
		{method: 0, path: "/v1/agents/%00", auth: 2},
		{method: 5, path: "/v1/agents/{other-agent}", auth: 2},
		{method: 6, path: "/", auth: 0},
		{method: 7, path: "/v1/agents", auth: 2},
		{method: 0, path: "//v1/agents/../tenants", auth: 2},
	}
	for _, in := range seeds {
		f.Add(in.method, in.path, in.ctype, in.auth, in.body)
	}
	f.Cleanup(func() { s.checkHealthy(f) })
	f.Fuzz(func(t *testing.T, method uint8, path string, ctype, auth uint8, body []byte) {
		_ = s.exercise(t, consoleInput{method: method, path: path, ctype: ctype, auth: auth, body: body})
	})
}
