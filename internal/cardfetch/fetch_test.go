package cardfetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-connector/a2a-connector/internal/cardcheck"
	"github.com/a2a-connector/a2a-connector/internal/cardcheck/cardchecktest"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
)

// serveJSON answers with body under the given Content-Type.
func serveJSON(contentType string, body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Write(body)
	}
}

func namedCard(name string) []byte {
	return cardchecktest.Card(func(c map[string]any) { c["name"] = name })
}

func wantKind(t *testing.T, err error, kind FetchErrorKind) *FetchError {
	t.Helper()
	var fe *FetchError
	if !errors.As(err, &fe) {
		t.Fatalf("error = %v, want a *FetchError of kind %s", err, kind)
	}
	if fe.Kind != kind {
		t.Fatalf("kind = %s, want %s (%v)", fe.Kind, kind, err)
	}
	t.Logf("%s: %v", kind, err)
	if !strings.HasPrefix(fe.Error(), `fetch card "`) {
		t.Errorf("Error() = %q, want it to start with fetch card \"", fe.Error())
	}
	return fe
}

func TestFetchDiscovery(t *testing.T) {
	t.Parallel()
	htmlPage := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<html><body>app</body></html>")
	}
	tests := []struct {
		name     string
		routes   map[string]http.HandlerFunc // path -> handler; others 404
		path     string                      // what is pasted after the origin
		wantPath string                      // where the card must come from
		wantName string
		wantKind FetchErrorKind // set when the fetch must fail
		wantHits map[string]int32
	}{
		{
			name: "agent_card_json_wins",
			routes: map[string]http.HandlerFunc{
				"/.well-known/agent-card.json": serveJSON("application/json", namedCard("new")),
				"/.well-known/agent.json":      serveJSON("application/json", namedCard("old")),
			},
			wantPath: "/.well-known/agent-card.json", wantName: "new",
			wantHits: map[string]int32{"/.well-known/agent-card.json": 1, "/.well-known/agent.json": 0},
		},
		{
			name:     "falls_back_to_agent_json_on_404",
			routes:   map[string]http.HandlerFunc{"/.well-known/agent.json": serveJSON("application/json", namedCard("old"))},
			path:     "/",
			wantPath: "/.well-known/agent.json", wantName: "old",
		},
		{
			name: "falls_back_when_the_first_is_an_html_page",
			routes: map[string]http.HandlerFunc{
				"/.well-known/agent-card.json": htmlPage,
				"/.well-known/agent.json":      serveJSON("application/json", namedCard("old")),
			},
			wantPath: "/.well-known/agent.json", wantName: "old",
		},
		{
			name: "falls_back_on_410",
			routes: map[string]http.HandlerFunc{
				"/.well-known/agent-card.json": func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusGone) },
				"/.well-known/agent.json":      serveJSON("application/json", namedCard("old")),
			},
			wantPath: "/.well-known/agent.json", wantName: "old",
		},
		{
			name: "server_error_on_the_first_does_not_fall_back",
			routes: map[string]http.HandlerFunc{
				"/.well-known/agent-card.json": func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) },
				"/.well-known/agent.json":      serveJSON("application/json", namedCard("old")),
			},
			wantKind: KindHTTPStatus,
			wantHits: map[string]int32{"/.well-known/agent.json": 0},
		},
		{
			name:     "neither_found_is_http_status",
			routes:   map[string]http.HandlerFunc{},
			wantKind: KindHTTPStatus,
		},
		{
			name: "a_path_is_fetched_exactly",
			routes: map[string]http.HandlerFunc{
				"/cards/mine.json":             serveJSON("application/json", namedCard("mine")),
				"/.well-known/agent-card.json": serveJSON("application/json", namedCard("new")),
			},
			path: "/cards/mine.json", wantPath: "/cards/mine.json", wantName: "mine",
		},
		{
			name: "a_query_on_the_origin_is_fetched_exactly",
			routes: map[string]http.HandlerFunc{
				"/": func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Query().Get("card") != "1" || r.URL.Path != "/" {
						http.NotFound(w, r)
						return
					}
					serveJSON("application/json", namedCard("query"))(w, r)
				},
			},
			path: "/?card=1", wantPath: "/?card=1", wantName: "query",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			hits := map[string]*atomic.Int32{}
			mux := http.NewServeMux()
			for p, h := range tt.routes {
				n := &atomic.Int32{}
				hits[p] = n
				pattern := p
				if p == "/" {
					pattern = "/{$}"
				}
				mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
					n.Add(1)
					h(w, r)
				})
			}
			srv, client := tlsServer(t, mux)
			f := New(Options{Client: client})
			got, rep, err := f.FetchAndValidate(t.Context(), srv.URL+tt.path)
			if tt.wantKind != "" {
				wantKind(t, err, tt.wantKind)
			} else {
				if err != nil {
					t.Fatalf("FetchAndValidate: %v", err)
				}
				if got.ResolvedURL != srv.URL+tt.wantPath {
					t.Errorf("ResolvedURL = %q, want %q", got.ResolvedURL, srv.URL+tt.wantPath)
				}
				if rep.Profile.Name != tt.wantName || !rep.Valid {
					t.Errorf("name = %q valid = %v, want %q and valid; problems %+v", rep.Profile.Name, rep.Valid, tt.wantName, rep.Problems)
				}
			}
			for p, want := range tt.wantHits {
				if got := hits[p].Load(); got != want {
					t.Errorf("%s was requested %d times, want %d", p, got, want)
				}
			}
		})
	}
}

func TestFetchErrors(t *testing.T) {
	t.Parallel()
	bigCard := cardchecktest.Card(func(c map[string]any) { c["padding"] = strings.Repeat("p", 1<<20) })
	tests := []struct {
		name    string
		handler http.HandlerFunc
		path    string
		opts    Options // Client is filled in
		want    FetchErrorKind
		status  int
	}{
		{
			name:    "404_is_http_status",
			handler: http.NotFound,
			path:    "/card.json",
			want:    KindHTTPStatus,
			status:  http.StatusNotFound,
		},
		{
			name:    "html_is_not_json",
			handler: serveJSON("text/html", []byte("<html><body>Not a card</body></html>")),
			path:    "/card.json",
			want:    KindNotJSON,
		},
		{
			name:    "xml_is_not_json",
			handler: serveJSON("application/xml", []byte("<card/>")),
			path:    "/card.json",
			want:    KindNotJSON,
		},
		{
			name:    "text_plain_that_is_not_json_is_not_json",
			handler: serveJSON("text/plain", []byte("hello")),
			path:    "/card.json",
			want:    KindNotJSON,
		},
		{
			name: "body_over_1_MiB_with_length_is_too_large",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Length", fmt.Sprint(len(bigCard)))
				w.Write(bigCard)
			},
			path: "/card.json",
			want: KindTooLarge,
		},
		{
			name: "chunked_body_over_1_MiB_is_too_large",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				for i := 0; i < len(bigCard); i += 64 << 10 {
					w.Write(bigCard[i:min(i+64<<10, len(bigCard))])
					w.(http.Flusher).Flush()
				}
			},
			path: "/card.json",
			want: KindTooLarge,
		},
		{
			name:    "body_over_a_smaller_limit_is_too_large",
			handler: serveJSON("application/json", cardchecktest.Card(nil)),
			path:    "/card.json",
			opts:    Options{MaxBytes: 100},
			want:    KindTooLarge,
		},
		{
			name: "slow_server_is_timeout",
			handler: func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
				}
			},
			path: "/card.json",
			opts: Options{Timeout: 200 * time.Millisecond},
			want: KindTimeout,
		},
		{
			name: "slow_body_is_timeout",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"name": `))
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
				}
			},
			path: "/card.json",
			opts: Options{Timeout: 200 * time.Millisecond},
			want: KindTimeout,
		},
		{
			name:    "http_url_is_insecure_when_not_allowed",
			handler: serveJSON("application/json", cardchecktest.Card(nil)),
			path:    "http",
			want:    KindInsecureURL,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, client := tlsServer(t, tt.handler)
			tt.opts.Client = client
			target := srv.URL + tt.path
			if tt.path == "http" {
				target = strings.Replace(srv.URL, "https://", "http://", 1) + "/card.json"
			}
			_, err := New(tt.opts).Fetch(t.Context(), target)
			fe := wantKind(t, err, tt.want)
			if tt.status != 0 && fe.StatusCode != tt.status {
				t.Errorf("StatusCode = %d, want %d", fe.StatusCode, tt.status)
			}
		})
	}
}

func TestFetchAcceptsJSONContentTypes(t *testing.T) {
	t.Parallel()
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "application/agent-card+json", "text/plain; charset=utf-8", ""} {
		t.Run(ct, func(t *testing.T) {
			t.Parallel()
			srv, client := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Content-Type"] = []string{ct}
				w.Write(cardchecktest.Card(nil))
			}))
			got, err := New(Options{Client: client}).Fetch(t.Context(), srv.URL+"/card.json")
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			if diff := cmp.Diff(string(cardchecktest.Card(nil)), string(got.Raw)); diff != "" {
				t.Errorf("Raw (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFetchJSONSyntaxErrorReachesValidate: a body served as JSON that does not parse is the
// card's problem, reported with the parser's reason, not a fetch failure.
func TestFetchJSONSyntaxErrorReachesValidate(t *testing.T) {
	t.Parallel()
	srv, client := tlsServer(t, serveJSON("application/json", []byte(`{"name": "x",}`)))
	_, rep, err := New(Options{Client: client}).FetchAndValidate(t.Context(), srv.URL+"/card.json")
	if err != nil {
		t.Fatalf("FetchAndValidate: %v", err)
	}
	if rep.Valid || len(rep.Problems) != 1 || rep.Problems[0].Code != cardcheck.CodeInvalidJSON {
		t.Errorf("problems = %+v, want one invalid_json", rep.Problems)
	}
}

func TestFetchRedirects(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		hops int
		want FetchErrorKind // "" = success
	}{
		{name: "three_redirects_are_followed", hops: 3},
		{name: "four_redirects_are_too_many", hops: 4, want: KindRedirects},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mux := http.NewServeMux()
			mux.HandleFunc("/hop/{n}", func(w http.ResponseWriter, r *http.Request) {
				var n int
				fmt.Sscan(r.PathValue("n"), &n)
				if n < tt.hops {
					http.Redirect(w, r, fmt.Sprintf("/hop/%d", n+1), http.StatusFound)
					return
				}
				serveJSON("application/json", cardchecktest.Card(nil))(w, r)
			})
			srv, client := tlsServer(t, mux)
			got, err := New(Options{Client: client}).Fetch(t.Context(), srv.URL+"/hop/0")
			if tt.want != "" {
				wantKind(t, err, tt.want)
				return
			}
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			if want := fmt.Sprintf("%s/hop/%d", srv.URL, tt.hops); got.ResolvedURL != want {
				t.Errorf("ResolvedURL = %q, want %q", got.ResolvedURL, want)
			}
		})
	}
}

// TestFetchRedirectToHTTPIsInsecure: a card moved to plain http is refused on the hop.
func TestFetchRedirectToHTTPIsInsecure(t *testing.T) {
	t.Parallel()
	plain := httptest.NewServer(serveJSON("application/json", cardchecktest.Card(nil)))
	t.Cleanup(plain.Close)
	srv, client := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+"/card.json", http.StatusFound)
	}))
	_, err := New(Options{Client: client}).Fetch(t.Context(), srv.URL+"/card.json")
	wantKind(t, err, KindInsecureURL)
}

func TestFetchBlockedAddress(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(serveJSON("application/json", cardchecktest.Card(nil)))
	t.Cleanup(srv.Close)
	// No AllowedCIDRs: loopback is refused, as in production.
	client := guardedClient(t, srv, netguard.Policy{})
	_, err := New(Options{Client: client}).Fetch(t.Context(), srv.URL+"/card.json")
	wantKind(t, err, KindBlockedAddress)
	if !errors.Is(err, netguard.ErrBlockedAddress) {
		t.Errorf("error %v does not match netguard.ErrBlockedAddress", err)
	}
}

func TestFetchBlockedAddressByName(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(serveJSON("application/json", cardchecktest.Card(nil)))
	t.Cleanup(srv.Close)
	client := guardedClient(t, srv, netguard.Policy{})
	// localhost resolves to loopback: the dialed address is refused, not the name.
	target := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/card.json"
	_, err := New(Options{Client: client}).Fetch(t.Context(), target)
	wantKind(t, err, KindBlockedAddress)
}

func TestFetchConnectionRefused(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, client := tlsServer(t, http.NotFoundHandler())
	_, err = New(Options{Client: client}).Fetch(t.Context(), "https://"+addr+"/card.json")
	wantKind(t, err, KindRefused)
}

func TestFetchUntrustedCertificateIsTLS(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(serveJSON("application/json", cardchecktest.Card(nil)))
	t.Cleanup(srv.Close)
	// A client trusting no test CA: the system roots do not know httptest's certificate.
	client := guardedClient(t, nil, netguard.Policy{AllowedCIDRs: loopback})
	_, err := New(Options{Client: client}).Fetch(t.Context(), srv.URL+"/card.json")
	wantKind(t, err, KindTLS)
}

func TestFetchUnknownHostIsDNS(t *testing.T) {
	t.Parallel()
	_, client := tlsServer(t, http.NotFoundHandler())
	_, err := New(Options{Client: client}).Fetch(t.Context(), "https://card.invalid/agent.json")
	wantKind(t, err, KindDNS)
}

func TestFetchInvalidURL(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv, client := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.NotFound(w, r)
	}))
	host := strings.TrimPrefix(srv.URL, "https://")
	f := New(Options{Client: client})
	const password = "s3cr3tpw"
	for _, u := range []string{"", "agent.example.com", "/.well-known/agent.json", "ftp://agent.example.com/card.json",
		"https://", "https://exa mple.com/",
		// Userinfo of any kind is refused before anything is sent: the password is never
		// fetched with, and never shown.
		"https://user:" + password + "@" + host + "/card.json",
		"https://" + password + "@" + host + "/card.json",
		"https://@" + host + "/card.json",
		"https://user:" + password + "@" + host + "/\x00card.json",
		"https://" + host + "/card\x00.json", "https://" + host + "\x00/card.json",
		"https://" + host + "/card\xff.json", "https://\xff\xfe/card.json", "https://" + host + "/a\u0085b", "https://a!b/card.json", "https://" + strings.Repeat("a", 64) + ".example/",
		"https://" + host + "/%zz", "https://127.0.0.1:99999/card.json", "https://127.0.0.1:0/card.json",
		"https://host:/card.json", "https://[::1/card.json", "https://xn--/card.json", "https://\u00ad\u200d/card.json",
		"mailto:agent@example.com", "https:opaque",
	} {
		_, err := f.Fetch(t.Context(), u)
		var fe *FetchError
		if !errors.As(err, &fe) || fe.Kind != KindInvalidURL {
			t.Errorf("Fetch(%q) error = %v, want kind invalid_url", u, err)
			continue
		}
		for _, text := range []string{fe.Error(), fe.Explain()} {
			if strings.Contains(text, password) {
				t.Errorf("Fetch(%q): %q shows the password", u, text)
			}
		}
		for _, internal := range []string{"parse", "net/url", "\x00", "invalid control character"} {
			if strings.Contains(fe.Explain(), internal) {
				t.Errorf("Fetch(%q): Explain() = %q shows parser internals (%q)", u, fe.Explain(), internal)
			}
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d requests reached the server; invalid URLs must be refused before any fetch", n)
	}
	if fe, ok := errors.AsType[*FetchError](must(f.Fetch(t.Context(), "https://u:"+password+"@"+host+"/c"))); !ok ||
		!strings.Contains(fe.Explain(), "user name or password") {
		t.Errorf("userinfo refusal does not say why: %v", fe)
	}
}

func must(_ Fetched, err error) error { return err }

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://user:pw@host/p?q=1#f":   "https://xxxxx@host/p?q=1#f",
		"https://pw@host":                "https://xxxxx@host",
		"https://host/p@q":               "https://host/p@q",
		"https://a@b@host:8443/x":        "https://xxxxx@host:8443/x",
		"not a url":                      "not a url",
		"https://u:p@host/\x00?x=@":      "https://xxxxx@host/\x00?x=@",
		"https://host?next=https://u@h/": "https://host?next=https://u@h/",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// Explain never shows transport internals: a DNS failure names the host, not the resolver.
func TestExplainHidesTransportDetail(t *testing.T) {
	t.Parallel()
	_, client := tlsServer(t, http.NotFoundHandler())
	_, err := New(Options{Client: client}).Fetch(t.Context(), "https://card.invalid/agent.json")
	fe := wantKind(t, err, KindDNS)
	got := fe.Explain()
	if !strings.Contains(got, `"card.invalid"`) {
		t.Errorf("Explain() = %q, want it to name the host", got)
	}
	for _, internal := range []string{"lookup", "dial", ":53", "tcp", "udp"} {
		if strings.Contains(got, internal) {
			t.Errorf("Explain() = %q shows %q", got, internal)
		}
	}
}

func TestFetchCanceledByCaller(t *testing.T) {
	t.Parallel()
	srv, client := tlsServer(t, serveJSON("application/json", cardchecktest.Card(nil)))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := New(Options{Client: client}).Fetch(ctx, srv.URL+"/card.json")
	wantKind(t, err, KindCanceled)
}

func TestFetchErrorNamesBothDiscoveryURLs(t *testing.T) {
	t.Parallel()
	srv, client := tlsServer(t, http.NotFoundHandler())
	_, err := New(Options{Client: client}).Fetch(t.Context(), srv.URL)
	fe := wantKind(t, err, KindHTTPStatus)
	want := []string{srv.URL + "/.well-known/agent-card.json", srv.URL + "/.well-known/agent.json"}
	if diff := cmp.Diff(want, fe.Tried); diff != "" {
		t.Errorf("Tried (-want +got):\n%s", diff)
	}
	if fe.URL != want[1] || !strings.Contains(fe.Error(), "404") {
		t.Errorf("URL = %q, Error() = %q", fe.URL, fe.Error())
	}
}

// TestFetchUnderPrefix: a pasted URL with a path that does not answer a card is also looked up
// at the well-known paths under it, where SDKs serve agents mounted under a prefix.
func TestFetchUnderPrefix(t *testing.T) {
	t.Parallel()
	htmlPage := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><html><body>app</body></html>")
	}
	status := func(code int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(code) }
	}
	jsonRPCError := serveJSON("application/json", []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request"}}`))
	const (
		prefix  = "/agents/x"
		cardNew = prefix + "/.well-known/agent-card.json"
		cardOld = prefix + "/.well-known/agent.json"
	)
	tests := []struct {
		name     string
		routes   map[string]http.HandlerFunc // exact path -> handler
		fallback http.HandlerFunc            // every other path; nil: 404
		path     string                      // pasted after the origin; prefix when empty
		wantPath string                      // where the card must come from
		wantName string
		// When the fetch must fail: its kind, status, reported path, and the paths tried.
		wantKind   FetchErrorKind
		wantStatus int
		wantURL    string
		wantTried  []string
		wantHits   map[string]int32
	}{
		{
			name:     "agent_card_json_under_the_prefix",
			routes:   map[string]http.HandlerFunc{cardNew: serveJSON("application/json", namedCard("new"))},
			wantPath: cardNew, wantName: "new",
		},
		{
			name:     "trailing_slash_is_the_same_prefix",
			routes:   map[string]http.HandlerFunc{cardNew: serveJSON("application/json", namedCard("new"))},
			path:     prefix + "/",
			wantPath: cardNew, wantName: "new",
		},
		{
			name:     "agent_json_under_the_prefix",
			routes:   map[string]http.HandlerFunc{cardOld: serveJSON("application/json", namedCard("old"))},
			wantPath: cardOld, wantName: "old",
		},
		{
			name:     "html_catch_all_page_is_passed_over",
			routes:   map[string]http.HandlerFunc{cardOld: serveJSON("application/json", namedCard("old"))},
			fallback: htmlPage,
			wantPath: cardOld, wantName: "old",
		},
		{
			name:     "json_rpc_error_answer_to_get_is_not_a_card",
			routes:   map[string]http.HandlerFunc{prefix: jsonRPCError, cardNew: serveJSON("application/json", namedCard("new"))},
			wantPath: cardNew, wantName: "new",
		},
		{
			name:     "401_on_the_pasted_url_moves_on",
			routes:   map[string]http.HandlerFunc{prefix: status(http.StatusUnauthorized), cardNew: serveJSON("application/json", namedCard("new"))},
			wantPath: cardNew, wantName: "new",
		},
		{
			name: "query_is_kept_under_the_prefix",
			routes: map[string]http.HandlerFunc{cardNew: func(w http.ResponseWriter, r *http.Request) {
				serveJSON("application/json", namedCard(r.URL.Query().Get("t")))(w, r)
			}},
			path:     prefix + "?t=tok",
			wantPath: cardNew + "?t=tok", wantName: "tok",
		},
		{
			name: "a_card_at_the_pasted_url_is_not_looked_for_elsewhere",
			routes: map[string]http.HandlerFunc{
				prefix:  serveJSON("application/json", namedCard("pasted")),
				cardNew: serveJSON("application/json", namedCard("new")),
			},
			wantPath: prefix, wantName: "pasted",
			wantHits: map[string]int32{cardNew: 0, cardOld: 0},
		},
		{
			name:       "nothing_anywhere_reports_the_pasted_url",
			wantKind:   KindHTTPStatus,
			wantStatus: http.StatusNotFound,
			wantURL:    prefix,
			wantTried:  []string{prefix, cardNew, cardOld},
		},
		{
			name:      "html_everywhere_reports_the_pasted_url_as_not_json",
			fallback:  htmlPage,
			wantKind:  KindNotJSON,
			wantURL:   prefix,
			wantTried: []string{prefix, cardNew, cardOld},
		},
		{
			name:       "a_server_error_under_the_prefix_is_what_is_reported",
			routes:     map[string]http.HandlerFunc{cardNew: status(http.StatusInternalServerError), cardOld: serveJSON("application/json", namedCard("old"))},
			wantKind:   KindHTTPStatus,
			wantStatus: http.StatusInternalServerError,
			wantURL:    cardNew,
			wantTried:  []string{prefix, cardNew},
		},
		{
			name:       "a_server_error_at_the_pasted_url_is_returned_at_once",
			routes:     map[string]http.HandlerFunc{prefix: status(http.StatusBadGateway), cardNew: serveJSON("application/json", namedCard("new"))},
			wantKind:   KindHTTPStatus,
			wantStatus: http.StatusBadGateway,
			wantURL:    prefix,
			wantTried:  []string{prefix},
			wantHits:   map[string]int32{cardNew: 0},
		},
		{
			name:     "pasted_well_known_url_is_not_extended",
			path:     cardNew,
			wantKind: KindHTTPStatus, wantStatus: http.StatusNotFound, wantURL: cardNew,
			wantTried: []string{cardNew},
		},
		{
			name:     "non_card_json_with_nothing_under_the_prefix_is_validated_as_fetched",
			routes:   map[string]http.HandlerFunc{prefix: jsonRPCError},
			wantPath: prefix,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			hits := map[string]int32{}
			srv, client := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				hits[r.URL.Path]++
				mu.Unlock()
				if h, ok := tt.routes[r.URL.Path]; ok {
					h(w, r)
					return
				}
				if tt.fallback != nil {
					tt.fallback(w, r)
					return
				}
				http.NotFound(w, r)
			}))
			path := tt.path
			if path == "" {
				path = prefix
			}
			got, rep, err := New(Options{Client: client}).FetchAndValidate(t.Context(), srv.URL+path)
			if tt.wantKind != "" {
				fe := wantKind(t, err, tt.wantKind)
				if tt.wantStatus != 0 && fe.StatusCode != tt.wantStatus {
					t.Errorf("StatusCode = %d, want %d", fe.StatusCode, tt.wantStatus)
				}
				if fe.URL != srv.URL+tt.wantURL {
					t.Errorf("URL = %q, want %q", fe.URL, srv.URL+tt.wantURL)
				}
				var want []string
				for _, p := range tt.wantTried {
					want = append(want, srv.URL+p)
				}
				if diff := cmp.Diff(want, fe.Tried); diff != "" {
					t.Errorf("Tried (-want +got):\n%s", diff)
				}
			} else {
				if err != nil {
					t.Fatalf("FetchAndValidate: %v", err)
				}
				if got.ResolvedURL != srv.URL+tt.wantPath {
					t.Errorf("ResolvedURL = %q, want %q", got.ResolvedURL, srv.URL+tt.wantPath)
				}
				if tt.wantName != "" && (rep.Profile.Name != tt.wantName || !rep.Valid) {
					t.Errorf("name = %q valid = %v, want %q and valid; problems %+v", rep.Profile.Name, rep.Valid, tt.wantName, rep.Problems)
				}
				if tt.wantName == "" && rep.Valid {
					t.Errorf("a JSON-RPC error object validated as a card")
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for p, want := range tt.wantHits {
				if hits[p] != want {
					t.Errorf("%s was requested %d times, want %d", p, hits[p], want)
				}
			}
		})
	}
}

// TestFetchSendsA2AVersion: every card request says A2A-Version: 1.0, so a server that speaks
// both generations answers with its 1.0 card; discovery requests too.
func TestFetchSendsA2AVersion(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	srv, client := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path+" "+r.Header.Get("A2A-Version"))
		mu.Unlock()
		if r.URL.Path != "/.well-known/agent.json" {
			http.NotFound(w, r)
			return
		}
		serveJSON("application/json", cardchecktest.Card(nil))(w, r)
	}))
	if _, err := New(Options{Client: client}).Fetch(t.Context(), srv.URL); err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"/.well-known/agent-card.json 1.0", "/.well-known/agent.json 1.0"}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}
