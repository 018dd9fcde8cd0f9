package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-connector/a2a-connector/internal/hostile"
)

// rawResponse is an answer with its headers.
type rawResponse struct {
	status int
	header http.Header
	body   []byte
}

// raw sends body as it is, bytes and all, with the given Content-Type.
func (e *env) raw(method, path, token, ctype string, body []byte) rawResponse {
	e.t.Helper()
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.api.URL+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return rawResponse{status: resp.StatusCode, header: resp.Header, body: b}
}

// problem is the part of a problem document these tests compare.
type problem struct {
	Status int    `json:"status"`
	Code   string `json:"code"`
	Field  string `json:"field,omitempty"`
}

// TestHostileRequestsAnswerAtTheEdge replays hostile requests (control characters, card URLs
// with credentials or bad escapes, wrong types, unknown members, bodies that are not one JSON
// object, …) against a real console with a real Postgres: each gets a clean problem naming the
// member at fault, with no internals and no echoed credential, and none reaches the card server.
func TestHostileRequestsAnswerAtTheEdge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tenantID, token := e.newTenant("Hostile")
	cardHost := strings.TrimPrefix(e.cards.URL, "https://")
	goodURL := e.cards.Set("/hostile-good.json", card("Hostile", "text/plain"))
	r := e.do("POST", "/v1/agents", token, map[string]string{"cardUrl": goodURL})
	e.expect(r, http.StatusCreated)
	agentID := r.json(t)["id"].(string)
	fetchesBefore := e.cards.Hits()

	const pw = hostile.Password
	for _, c := range []struct {
		name, method, path string
		admin              bool
		body               string
		want               problem
	}{
		// Tenant names reach Postgres only as text it can store.
		{name: "nul_in_tenant_name", method: "POST", path: "/v1/tenants", admin: true, body: `{"name":"a\u0000b"}`,
			want: problem{400, "invalid_characters", "name"}},
		{name: "control_in_tenant_name", method: "POST", path: "/v1/tenants", admin: true, body: `{"name":"a\u001bb"}`,
			want: problem{400, "invalid_characters", "name"}},
		{name: "newline_in_tenant_name", method: "POST", path: "/v1/tenants", admin: true, body: `{"name":"a\nb"}`,
			want: problem{400, "invalid_characters", "name"}},
		{name: "c1_in_tenant_name", method: "POST", path: "/v1/tenants", admin: true, body: `{"name":"a\u0085b"}`,
			want: problem{400, "invalid_characters", "name"}},
		{name: "raw_invalid_utf8_tenant_name", method: "POST", path: "/v1/tenants", admin: true, body: "{\"name\":\"a\xffb\"}",
			want: problem{400, "invalid_utf8", "name"}},
		{name: "blank_tenant_name", method: "POST", path: "/v1/tenants", admin: true, body: `{"name":"  "}`,
			want: problem{400, "required", "name"}},
		{name: "long_tenant_name", method: "POST", path: "/v1/tenants", admin: true, body: `{"name":"` + strings.Repeat("é", 201) + `"}`,
			want: problem{400, "too_long", "name"}},
		{name: "tenant_name_wrong_type", method: "POST", path: "/v1/tenants", admin: true, body: `{"name":["x"]}`,
			want: problem{400, "invalid_type", "name"}},
		// Card URLs: userinfo, NUL and invalid UTF-8 are the client's mistakes, refused before
		// any fetch, and the password is never repeated.
		{name: "userinfo_card_url", method: "POST", path: "/v1/agents", body: `{"cardUrl":"https://user:` + pw + `@` + cardHost + `/hostile-good.json"}`,
			want: problem{400, "invalid_url", "cardUrl"}},
		{name: "userinfo_card_url_validate", method: "POST", path: "/v1/agents/validate", body: `{"cardUrl":"https://` + pw + `@` + cardHost + `/"}`,
			want: problem{400, "invalid_url", "cardUrl"}},
		{name: "nul_in_card_url", method: "POST", path: "/v1/agents", body: `{"cardUrl":"https://` + cardHost + `/a\u0000b"}`,
			want: problem{400, "invalid_characters", "cardUrl"}},
		{name: "nul_in_card_url_host", method: "POST", path: "/v1/agents/validate", body: `{"cardUrl":"https://a\u0000b.example/"}`,
			want: problem{400, "invalid_characters", "cardUrl"}},
		{name: "raw_invalid_utf8_card_url", method: "POST", path: "/v1/agents", body: "{\"cardUrl\":\"https://\xff\xfe/card.json\"}",
			want: problem{400, "invalid_utf8", "cardUrl"}},
		{name: "replacement_char_host", method: "POST", path: "/v1/agents/validate", body: `{"cardUrl":"https://\ufffd/card.json"}`,
			want: problem{400, "invalid_url", "cardUrl"}},
		{name: "bad_escape_card_url", method: "POST", path: "/v1/agents", body: `{"cardUrl":"https://` + cardHost + `/%zz"}`,
			want: problem{400, "invalid_url", "cardUrl"}},
		{name: "bad_port_card_url", method: "POST", path: "/v1/agents", body: `{"cardUrl":"https://127.0.0.1:99999/x"}`,
			want: problem{400, "invalid_url", "cardUrl"}},
		{name: "relative_card_url", method: "POST", path: "/v1/agents", body: `{"cardUrl":"/card.json"}`,
			want: problem{400, "invalid_url", "cardUrl"}},
		{name: "ftp_card_url", method: "POST", path: "/v1/agents", body: `{"cardUrl":"ftp://a.example/card.json"}`,
			want: problem{400, "invalid_url", "cardUrl"}},
		{name: "http_card_url", method: "POST", path: "/v1/agents", body: `{"cardUrl":"http://a.example/card.json"}`,
			want: problem{400, "insecure_url", "cardUrl"}},
		{name: "long_card_url", method: "POST", path: "/v1/agents", body: `{"cardUrl":"https://a.example/` + strings.Repeat("a", 2048) + `"}`,
			want: problem{400, "too_long", "cardUrl"}},
		// API keys go out as an HTTP header.
		{name: "newline_in_api_key", method: "POST", path: "/v1/agents", body: `{"cardUrl":"` + goodURL + `","apiKey":"k\r\nX-Evil: 1"}`,
			want: problem{400, "invalid_characters", "apiKey"}},
		{name: "non_ascii_api_key", method: "PATCH", path: "/v1/agents/" + agentID, body: `{"apiKey":"clé"}`,
			want: problem{400, "invalid_characters", "apiKey"}},
		{name: "nul_in_api_key", method: "PATCH", path: "/v1/agents/" + agentID, body: `{"apiKey":"k\u0000"}`,
			want: problem{400, "invalid_characters", "apiKey"}},
		{name: "api_key_wrong_type", method: "PATCH", path: "/v1/agents/" + agentID, body: `{"apiKey":42}`,
			want: problem{400, "invalid_type", "apiKey"}},
		{name: "enabled_wrong_type", method: "PATCH", path: "/v1/agents/" + agentID, body: `{"enabled":"yes"}`,
			want: problem{400, "invalid_type", "enabled"}},
		// Test-turn text is free text: line breaks are fine, NUL is not.
		{name: "nul_in_text", method: "POST", path: "/v1/agents/" + agentID + "/test", body: `{"text":"hi\u0000"}`,
			want: problem{400, "invalid_characters", "text"}},
		// Bodies.
		{name: "unknown_field", method: "POST", path: "/v1/agents", body: `{"cardUrl":"` + goodURL + `","color":"red"}`,
			want: problem{400, "unknown_field", "color"}},
		{name: "not_json", method: "POST", path: "/v1/agents", body: `cardUrl=x`,
			want: problem{400, "invalid_json", ""}},
		{name: "empty_body", method: "POST", path: "/v1/tenants", admin: true, body: ``,
			want: problem{400, "invalid_json", ""}},
		{name: "truncated", method: "POST", path: "/v1/tenants", admin: true, body: `{"name":"x`,
			want: problem{400, "invalid_json", ""}},
		{name: "array_body", method: "POST", path: "/v1/tenants", admin: true, body: `[{"name":"x"}]`,
			want: problem{400, "invalid_type", ""}},
		{name: "deep_json", method: "POST", path: "/v1/tenants", admin: true, body: `{"name":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`,
			want: problem{400, "invalid_json", ""}},
		{name: "two_objects", method: "POST", path: "/v1/tenants", admin: true, body: `{"name":"x"}{"name":"y"}`,
			want: problem{400, "invalid_json", ""}},
		// Ids in paths name nothing unless they are UUIDs: 404, as for another tenant's.
		{name: "nul_in_agent_id", method: "GET", path: "/v1/agents/%00", want: problem{404, "not_found", ""}},
		{name: "nul_in_tenant_id", method: "POST", path: "/v1/tenants/a%00b/tokens", admin: true, want: problem{404, "not_found", ""}},
		// Methods: a known path answers 405 with Allow.
		{name: "put_agents", method: "PUT", path: "/v1/agents", body: `{}`, want: problem{405, "method_not_allowed", ""}},
		{name: "delete_tenants", method: "DELETE", path: "/v1/tenants", admin: true, want: problem{405, "method_not_allowed", ""}},
		{name: "put_tokens", method: "PUT", path: "/v1/tenants/" + tenantID + "/tokens", admin: true, want: problem{405, "method_not_allowed", ""}},
		{name: "unknown_path", method: "PUT", path: "/v1/nope", want: problem{404, "not_found", ""}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tok := token
			if c.admin {
				tok = adminToken
			}
			r := e.raw(c.method, c.path, tok, "application/json", []byte(c.body))
			var got problem
			if err := json.Unmarshal(r.body, &got); err != nil {
				t.Fatalf("%d %s: not a problem document: %v", r.status, r.body, err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" || r.status != c.want.Status {
				t.Errorf("%s %s: status %d, problem (-want +got):\n%s\nbody: %s", c.method, c.path, r.status, diff, r.body)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type = %q", ct)
			}
			if leaks := hostile.Leaks(string(r.body)); leaks != nil {
				t.Errorf("answer shows internals %q: %s", leaks, r.body)
			}
			if bytes.Contains(r.body, []byte(pw)) {
				t.Errorf("answer repeats the URL's password: %s", r.body)
			}
		})
	}
	if n := e.cards.Hits() - fetchesBefore; n != 0 {
		t.Errorf("%d requests reached the card server; every URL above must be refused before any fetch", n)
	}
	if strings.Contains(e.logs.String(), pw) {
		t.Error("the log holds the URL's password")
	}

	// The tenants and the agent are as they were: nothing above was stored.
	r = e.do("GET", "/v1/agents/"+agentID, token, nil)
	e.expect(r, http.StatusOK)
	if r.json(t)["apiKeySet"] != false {
		t.Error("a refused apiKey was stored")
	}
}

// TestMethodNotAllowedNamesTheMethods: 405 carries Allow with every method of the path.
func TestMethodNotAllowedNamesTheMethods(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct{ method, path, allow string }{
		{"PUT", "/v1/agents", "GET, HEAD, POST"},
		{"POST", "/v1/agents/0b6a3c63-5c5b-4d4e-9f0a-1f2a3b4c5d6e", "GET, HEAD, PATCH, DELETE"},
		{"PUT", "/v1/tenants", "GET, HEAD, POST"},
		{"POST", "/v1/tenants/0b6a3c63-5c5b-4d4e-9f0a-1f2a3b4c5d6e", "GET, HEAD, PATCH, DELETE"},
		{"POST", "/v1/tokens", "GET, HEAD"},
		{"DELETE", "/healthz", "GET, HEAD"},
		{"POST", "/", "GET, HEAD"},
		// validate is also an {id} to GET, PATCH and DELETE (which answer 404 for it).
		{"OPTIONS", "/v1/agents/validate", "GET, HEAD, POST, PATCH, DELETE"},
	} {
		r := e.raw(c.method, c.path, "", "", nil)
		if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != c.allow {
			t.Errorf("%s %s = %d, Allow %q; want 405, Allow %q", c.method, c.path, r.status, r.header.Get("Allow"), c.allow)
		}
	}
	// A known path with a known method still authenticates first.
	if r := e.raw("GET", "/v1/agents", "", "", nil); r.status != http.StatusUnauthorized {
		t.Errorf("GET /v1/agents without a token = %d", r.status)
	}
	if r := e.raw("HEAD", "/", "", "", nil); r.status != http.StatusOK {
		t.Errorf("HEAD / = %d", r.status)
	}
}

// TestCardFetchFailuresSplitByFault: a URL the tenant got wrong is a 4xx (card_url_unusable,
// 422) and only a failing agent host is a 502 (card_unreachable); either way explained without
// the transport's words or our addresses (the resolver's above all).
func TestCardFetchFailuresSplitByFault(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, token := e.newTenant("Unreachable")
	failing := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/boom.json":
			http.Error(w, "upstream exploded", http.StatusInternalServerError)
		case "/busy.json":
			http.Error(w, "slow down", http.StatusTooManyRequests)
		case "/page.html":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html>not a card</html>")
		case "/private.json":
			http.Error(w, "log in first", http.StatusForbidden)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(failing.Close)

	// card.invalid never resolves (RFC 6761); whether the resolver says so or does not answer
	// at all depends on the machine, and decides whose fault it is.
	dnsStatus, dnsCode := http.StatusUnprocessableEntity, "card_url_unusable"
	var dnsErr *net.DNSError
	if _, err := net.DefaultResolver.LookupHost(t.Context(), "card.invalid"); !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		dnsStatus, dnsCode = http.StatusBadGateway, "card_unreachable"
	}
	for _, c := range []struct {
		url          string
		status       int
		code, reason string
		says         string
	}{
		{e.cards.URL + "/missing.json", http.StatusUnprocessableEntity, "card_url_unusable", "http_status", "answered HTTP 404"},
		{failing.URL + "/private.json", http.StatusUnprocessableEntity, "card_url_unusable", "http_status", "answered HTTP 403"},
		{"https://card.invalid/agent.json", dnsStatus, dnsCode, "dns", `"card.invalid" could not be resolved`},
		{"https://169.254.169.254/latest/meta-data", http.StatusUnprocessableEntity, "card_url_unusable", "blocked_address", "private, loopback"},
		{"https://" + closedPort(t) + "/card.json", http.StatusBadGateway, "card_unreachable", "refused", "refused the connection"},
		{failing.URL + "/boom.json", http.StatusBadGateway, "card_unreachable", "http_status", "answered HTTP 500"},
		{failing.URL + "/busy.json", http.StatusBadGateway, "card_unreachable", "http_status", "answered HTTP 429"},
		{failing.URL + "/page.html", http.StatusBadGateway, "card_unreachable", "not_json", "not with a JSON agent card"},
	} {
		for _, path := range []string{"/v1/agents/validate", "/v1/agents"} {
			r := e.raw("POST", path, token, "application/json", []byte(`{"cardUrl":"`+c.url+`"}`))
			var doc struct {
				Status                      int
				Code, Reason, Detail, Field string
			}
			if err := json.Unmarshal(r.body, &doc); err != nil {
				t.Fatal(err)
			}
			if r.status != c.status || doc.Code != c.code || doc.Reason != c.reason || !strings.Contains(doc.Detail, c.says) {
				t.Errorf("%s %s: %d %+v; want %d %s (%s)", path, c.url, r.status, doc, c.status, c.code, c.reason)
			}
			if c.status < 500 && doc.Field != "cardUrl" {
				t.Errorf("%s %s: field = %q; want cardUrl", path, c.url, doc.Field)
			}
			if leaks := hostile.Leaks(string(r.body)); leaks != nil {
				t.Errorf("%s: answer shows internals %q: %s", c.url, leaks, r.body)
			}
			for _, addr := range resolverAddrs(t) {
				if strings.Contains(string(r.body), addr) {
					t.Errorf("%s: answer shows the resolver's address %s: %s", c.url, addr, r.body)
				}
			}
		}
	}
	if !strings.Contains(e.logs.String(), `"reason":"refused"`) {
		t.Error("the fetch failure is not logged")
	}
}

// resolverAddrs are the name servers of this machine, which no answer may name.
func resolverAddrs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		return nil
	}
	var out []string
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "nameserver" {
			out = append(out, f[1])
		}
	}
	return out
}

func TestInvalidUTF8Member(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		"{\"name\":\"a\xff\"}":                         "name",
		"{\"a\":{\"b\":[1,\"ok\",\"\xfe\"]}}":          "a.b[2]",
		"{\"ok\":\"fine\",\"k\xff\":1}":                "k\uFFFD",
		"{\"a\":[{\"x\":1},{\"y\":\"\xc3\"}]}":         "a[1].y",
		"{\"a\":\"x\"}\xff":                            "",
		"\xff":                                         "",
		"{\"a\":{\"b\":1},\"c\":[2,3],\"d\":\"\xff\"}": "d",
	} {
		if got := invalidUTF8Member([]byte(body)); got != want {
			t.Errorf("invalidUTF8Member(%q) = %q, want %q", body, got, want)
		}
	}
}
