package a2aclient

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testHTTPClient is what the caller would pass in production, minus the SSRF guard: redirects
// come back as responses. Its idle connections are closed when the test ends so that goleak sees
// no transport goroutines.
func testHTTPClient(t *testing.T) *http.Client {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// testClient returns a Client with fixed request ids ("req-1") and millisecond retry waits.
func testClient(t *testing.T, o ClientOptions) *Client {
	t.Helper()
	if o.NewRequestID == nil {
		o.NewRequestID = func() string { return "req-1" }
	}
	if o.RetryWaitMin == 0 {
		o.RetryWaitMin = time.Millisecond
	}
	if o.RetryWaitMax == 0 {
		o.RetryWaitMax = 5 * time.Millisecond
	}
	return NewClient(testHTTPClient(t), o)
}

// agent starts a loopback HTTP server for the test.
func agent(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// readRequest decodes the JSON-RPC request of r; failures are reported on t (not fatal: this
// runs on the server's goroutine).
func readRequest(t *testing.T, r *http.Request) (Request, []byte) {
	t.Helper()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		t.Errorf("read request body: %v", err)
	}
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		t.Errorf("decode request %q: %v", body, err)
	}
	return req, body
}

// writeJSON writes a JSON-RPC response with the request's id; a result of the core model is
// written as the 0.x object (the wire the test agents speak), anything else as it is.
func writeJSON(t *testing.T, w http.ResponseWriter, id json.RawMessage, result any) {
	t.Helper()
	raw, err := json.Marshal(v0Result(result))
	if err != nil {
		t.Errorf("marshal result: %v", err)
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(Response{JSONRPC: JSONRPCVersion, ID: id, Result: raw}); err != nil {
		t.Errorf("write response: %v", err)
	}
}

// sseWriter writes raw event-stream bytes and flushes them.
type sseWriter struct {
	w http.ResponseWriter
}

func startSSE(w http.ResponseWriter) sseWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	return sseWriter{w: w}
}

func (s sseWriter) raw(chunk string) {
	io.WriteString(s.w, chunk)
	s.w.(http.Flusher).Flush()
}
