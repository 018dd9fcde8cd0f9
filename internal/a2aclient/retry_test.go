package a2aclient

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// closeCounter is a transport that counts CloseIdleConnections calls.
type closeCounter struct {
	http.RoundTripper
	closes atomic.Int32
}

func (c *closeCounter) CloseIdleConnections() { c.closes.Add(1) }

// A call that fails after its retries must not close the shared client's idle connections: they
// are the pooled connections to every other agent.
func TestRetry_a_failed_call_keeps_the_pooled_connections(t *testing.T) {
	t.Parallel()
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	hc := testHTTPClient(t)
	tr := &closeCounter{RoundTripper: hc.Transport}
	hc.Transport = tr
	c := NewClient(hc, ClientOptions{NewRequestID: func() string { return "req-1" }, RetryWaitMin: time.Millisecond, RetryWaitMax: 2 * time.Millisecond})
	t.Cleanup(c.Close)
	_, err := c.SendMessage(t.Context(), Endpoint{URL: srv.URL}, sendParams("x"))
	var se *HTTPStatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("err = %v, want HTTPStatusError 503", err)
	}
	if n := tr.closes.Load(); n != 0 {
		t.Errorf("CloseIdleConnections called %d times, want 0", n)
	}
}

// A retry wait is cut short when ctx ends: the call returns ctx's error at once.
func TestRetry_ctx_ending_during_the_wait_returns_at_once(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := agent(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := testClient(t, ClientOptions{}).SendMessage(ctx, Endpoint{URL: srv.URL}, sendParams("x"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("call took %v after ctx ended", d)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}
