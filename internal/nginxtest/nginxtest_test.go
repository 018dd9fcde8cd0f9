package nginxtest_test

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-connector/a2a-connector/internal/nginxtest"
)

// proxyTo is the server{} of an HTTP/1.1 reverse proxy to origin ("127.0.0.1:port").
func proxyTo(origin string) string {
	return `location / {
		proxy_pass http://` + origin + `;
		proxy_http_version 1.1;
		proxy_set_header Connection "";
	}`
}

// TestStart_proxies_plain_and_TLS: nginx answers through the proxy on its own loopback
// address, over TLS with the certificate RootCAs trusts, logs each request with its
// connection, and ClientStates sees the client's kept-alive connection.
func TestStart_proxies_plain_and_TLS(t *testing.T) {
	t.Parallel()
	origin := backend(t)
	for _, tls := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "tls"}[tls], func(t *testing.T) {
			t.Parallel()
			// Far longer than the test: the connection is still open when it is looked at.
			n := nginxtest.Start(t, nginxtest.Options{TLS: tls, HTTP2: tls, HTTP: "keepalive_timeout 60s;", Server: proxyTo(origin)})
			if !strings.HasPrefix(n.Addr, "127.") || (n.RootCAs != nil) != tls || !strings.HasPrefix(n.URL, map[bool]string{false: "http://", true: "https://"}[tls]) {
				t.Fatalf("Addr %q, URL %q, RootCAs %v", n.Addr, n.URL, n.RootCAs)
			}
			hc := client(t, n)
			get(t, hc, n.URL+"/x")
			get(t, hc, n.URL+"/x")
			// The start's probe left a TIME_WAIT socket; the client's one connection is open.
			states, err := n.ClientStates()
			if err != nil || countOf(states, "ESTABLISHED") != 1 {
				t.Errorf("client sockets = %v, %v; want one ESTABLISHED (kept alive)", states, err)
			}
			reqs := n.WaitRequests(t, 2)
			want := []nginxtest.Request{
				{Conn: reqs[0].Conn, ConnRequests: 1, Status: 200, Method: "GET", URI: "/x"},
				{Conn: reqs[0].Conn, ConnRequests: 2, Status: 200, Method: "GET", URI: "/x"},
			}
			if diff := cmp.Diff(want, reqs); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWaitIdleClosed_returns_after_nginx_closed_the_connection: after WaitIdleClosed, the
// client's next request goes on a new connection, which it only does when the kept-alive one
// was closed under it.
func TestWaitIdleClosed_returns_after_nginx_closed_the_connection(t *testing.T) {
	t.Parallel()
	n := nginxtest.Start(t, nginxtest.Options{HTTP: "keepalive_timeout 300ms;", Server: proxyTo(backend(t))})
	hc := client(t, n)
	get(t, hc, n.URL+"/x")
	n.WaitIdleClosed(t)
	get(t, hc, n.URL+"/x")
	if reqs := n.WaitRequests(t, 2); reqs[0].Conn == reqs[1].Conn || reqs[1].ConnRequests != 1 {
		t.Errorf("requests = %+v, want the second alone on a new connection", reqs)
	}
}

// backend is an HTTP server answering "hello " and the path; it returns its "127.0.0.1:port".
func backend(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello "+r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func countOf(states []string, state string) int {
	n := 0
	for _, s := range states {
		if s == state {
			n++
		}
	}
	return n
}

func client(t *testing.T, n *nginxtest.Nginx) *http.Client {
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: n.RootCAs}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func get(t *testing.T, hc *http.Client, url string) {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || string(body) != "hello /x" {
		t.Fatalf("GET %s = %d %q, %v", url, resp.StatusCode, body, err)
	}
}
