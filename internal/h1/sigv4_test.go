package h1_test

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/credential"
	"github.com/a2a-connector/a2a-connector/internal/h1"
	"github.com/a2a-connector/a2a-connector/internal/reqauth"
	"github.com/a2a-connector/a2a-connector/internal/sigv4"
	"github.com/a2a-connector/a2a-connector/internal/sigv4/sigv4test"
)

// A signed request answered 408 on a pooled connection is sent again on a new one with a
// signature made again: a later X-Amz-Date (the signer's clock moves a second per signature),
// another Authorization, and botocore accepts it. The agent is raw TCP written by hand: it
// checks each request's signature with botocore, answers the first on a connection, and gives
// up on the connection with a 408 when the second arrives.
func TestRoundTrip_resigns_a_request_sent_again_after_a_408(t *testing.T) {
	t.Parallel()
	key := credential.AWSKey{AccessKeyID: "AKIAH1RESENDTEST0001", SecretAccessKey: "h1-resend-secret", Region: "us-west-2"}
	v := sigv4test.Start(t, key, 5*time.Minute)
	type seen struct {
		conn            int
		date, auth      string
		verdict         error
		answeredWith408 bool
	}
	var mu sync.Mutex
	var got []seen
	s := startAgent(t, nil, func(c *agentConn) {
		for i := 0; ; i++ {
			req, body, err := readRequest(c.br)
			if err != nil {
				return
			}
			h := req.Header.Clone()
			h.Set("Host", req.Host)
			if req.ContentLength > 0 && h.Get("Content-Length") == "" {
				h.Set("Content-Length", strconv.FormatInt(req.ContentLength, 10))
			}
			e := seen{conn: c.n, date: req.Header.Get("X-Amz-Date"), auth: req.Header.Get("Authorization"),
				verdict: v.Check(req.Method, "http://"+req.Host+req.URL.RequestURI(), h, []byte(body)), answeredWith408: i == 1}
			mu.Lock()
			got = append(got, e)
			mu.Unlock()
			switch {
			case e.answeredWith408:
				io.WriteString(c.w, answer408)
				return
			case e.verdict != nil:
				fmt.Fprintf(c.w, "HTTP/1.1 403 Forbidden\r\nContent-Length: %d\r\n\r\n%s", len(e.verdict.Error()), e.verdict)
			default:
				answer(c.w, "accepted on conn "+strconv.Itoa(c.n))
			}
		}
	})
	base := time.Now()
	var signatures atomic.Int64
	signer := sigv4.New(&key, func() time.Time { return base.Add(time.Duration(signatures.Add(1)) * time.Second) })
	rt := newTransport(t, h1.Options{})
	send := func(body string) (*http.Response, string) {
		t.Helper()
		// As a2aclient does: the hook rides in the context, and the first attempt is signed by
		// its caller.
		ctx := reqauth.With(t.Context(), signer.Sign, []byte(body))
		req := post(t, ctx, s.url+"/a2a", body)
		req.Header.Set("Content-Type", "application/json")
		if err := reqauth.Apply(req); err != nil {
			t.Fatal(err)
		}
		return do(t, rt, req)
	}
	if resp, text := send(`{"n":1}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("first request: %d %q", resp.StatusCode, text)
	}
	resp, text := send(`{"n":2}`)
	if resp.StatusCode != http.StatusOK || text != "accepted on conn 2" {
		t.Fatalf("request sent again after a 408: %d %q, want accepted on a new connection", resp.StatusCode, text)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 || !got[1].answeredWith408 || got[2].conn != 2 {
		t.Fatalf("the agent saw %+v, want the second request on connection 1 (408), then on connection 2", got)
	}
	first, again := got[1], got[2]
	if first.verdict != nil {
		t.Errorf("botocore refused the first attempt: %v", first.verdict)
	}
	if again.verdict != nil {
		t.Errorf("botocore refused the request sent again: %v", again.verdict)
	}
	if again.date <= first.date || again.auth == first.auth || !strings.HasPrefix(again.auth, "AWS4-HMAC-SHA256 ") {
		t.Errorf("sent again with X-Amz-Date %s and %q; the attempt answered 408 had %s and %q: want a new signature, later", again.date, again.auth, first.date, first.auth)
	}
}
