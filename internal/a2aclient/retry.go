package a2aclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/neterr"
	"github.com/a2a-connector/a2a-connector/internal/reqauth"
)

// retryDrainLimit bounds what is read of a refused answer before it is closed and the call
// retried: enough for the connection to go back to the pool when the body is short.
const retryDrainLimit = 4 << 10

// newHTTPRequest builds a request whose body (nil: none) can be sent again: net/http sets GetBody
// for a *bytes.Reader, which both the transport (a POST resent on a stale keep-alive
// connection) and send use to rewind it.
func newHTTPRequest(ctx context.Context, method, url string, body []byte) (*http.Request, error) {
	if body == nil {
		return http.NewRequestWithContext(ctx, method, url, nil)
	}
	return http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
}

// withAuthorize returns req carrying f and its body in its context, for reqauth.Apply to
// authorize every attempt with (send, and h1 when it sends a request again).
func withAuthorize(req *http.Request, f reqauth.Func) (*http.Request, error) {
	var body []byte
	if req.GetBody != nil {
		rc, err := req.GetBody()
		if err != nil {
			return nil, fmt.Errorf("read body to sign: %w", err)
		}
		body, err = io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("read body to sign: %w", err)
		}
	}
	return req.WithContext(reqauth.With(req.Context(), f, body)), nil
}

// send makes the call of req, retrying it as pol decides (see the package doc, "Retries"), with
// the same body each time. It returns the last response (whatever its status; the caller closes
// its body) or the last transport error; ctx's error when ctx ended during a wait.
func (c *Client) send(ctx context.Context, req *http.Request, pol *retryPolicy) (*http.Response, error) {
	for {
		// Each attempt is authorized anew (reqauth): a signature made for the last one would
		// carry its time.
		if err := reqauth.Apply(req); err != nil {
			return nil, fmt.Errorf("authorize request: %w", err)
		}
		resp, err := c.hc.Do(req)
		wait, retry := pol.checkRetry(ctx, resp, err)
		if !retry {
			return resp, err
		}
		if err == nil {
			// Read a little of the refused answer so that its connection can be reused.
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, retryDrainLimit))
			resp.Body.Close()
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		// A new Request for the next attempt: the transport may still be closing the body of the
		// last one.
		next := *req
		if req.GetBody != nil {
			if next.Body, err = req.GetBody(); err != nil {
				return nil, err
			}
		}
		req = &next
	}
}

// retryPolicy decides the retries of one call.
type retryPolicy struct {
	opts      *ClientOptions
	budgetKey string
	attempts  int
}

// checkRetry is asked after every attempt, with its response or transport error: it says whether
// to try again and after which wait. A false answer leaves the last response or error as the
// call's.
func (p *retryPolicy) checkRetry(ctx context.Context, resp *http.Response, err error) (time.Duration, bool) {
	p.attempts++
	if ctx.Err() != nil {
		return 0, false
	}
	var wait time.Duration
	switch {
	case err != nil:
		if !retryableTransportError(err) {
			return 0, false
		}
		wait = p.backoffFor(p.attempts)
	case resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode == http.StatusBadGateway,
		resp.StatusCode == http.StatusServiceUnavailable, resp.StatusCode == http.StatusGatewayTimeout:
		if ra, ok := parseRetryAfter(resp.Header.Get("Retry-After"), p.opts.Now()); ok {
			if _, hasDeadline := ctx.Deadline(); !hasDeadline && ra > p.opts.RetryWaitMax {
				return 0, false
			}
			wait = ra
		} else {
			wait = p.backoffFor(p.attempts)
		}
	default:
		return 0, false
	}
	if deadline, ok := ctx.Deadline(); ok && !p.opts.Now().Add(wait).Before(deadline) {
		return 0, false
	}
	if p.attempts > p.opts.MaxRetries {
		return 0, false // none left: attempts-1 retries made
	}
	// Asked last: a retry the rules above refuse must not spend the budget.
	if b := p.opts.RetryBudget; b != nil && !b.retry(p.budgetKey) {
		return 0, false
	}
	return wait, true
}

// backoffFor is exponential from RetryWaitMin, capped at RetryWaitMax, with "equal jitter" so
// that many connector replicas do not retry in lockstep.
func (p *retryPolicy) backoffFor(attempt int) time.Duration {
	d := p.opts.RetryWaitMin
	for i := 1; i < attempt && d < p.opts.RetryWaitMax; i++ {
		d *= 2
	}
	d = min(d, p.opts.RetryWaitMax)
	half := d / 2
	return half + rand.N(half+1)
}

// retryableTransportError reports whether err means the request never reached the agent because
// the connection could not be made (internal/neterr classifies it). The dialer's own refusals
// (the SSRF guard returns an error from its Control hook), TLS failures, a name that does not
// exist and ctx errors are not retryable.
func retryableTransportError(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || !neterr.BeforeConnect(err) {
		return false
	}
	switch neterr.Classify(err) {
	case neterr.DNS, neterr.Refused, neterr.Reset, neterr.Unreachable, neterr.Timeout:
		return true
	}
	return false
}
