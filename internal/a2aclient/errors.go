package a2aclient

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/a2a"
)

// ErrFirstEventTimeout matches (errors.Is) the error of a Stream that saw no event within
// StreamOptions.FirstEventTimeout of the call.
var ErrFirstEventTimeout = errors.New("first event timeout")

// ErrIdleTimeout matches (errors.Is) the error of a Stream that saw no event within
// StreamOptions.IdleTimeout of the previous one.
var ErrIdleTimeout = errors.New("idle timeout")

// errStreamClosed ends Next after Close.
var errStreamClosed = errors.New("stream closed")

// HTTPStatusError is a non-2xx answer. 3xx answers land here too: agent calls never follow
// redirects (custom headers such as X-API-KEY would go to the new host).
type HTTPStatusError struct {
	Method     string
	StatusCode int
	// RetryAfter is the parsed Retry-After header (seconds or HTTP date), 0 when absent.
	RetryAfter time.Duration
	// Location is the Location header of a 3xx answer.
	Location string
	// Body is the start of the response body (at most 512 bytes, valid UTF-8), for diagnostics.
	Body string
	// RPC is the JSON-RPC error the body held, if it was one; Unwrap returns it so that
	// errors.As(err, **RPCError) also works. On HTTP+JSON it is the google.rpc.Status of the
	// body, under the JSON-RPC code of the same A2A error.
	RPC *a2a.RPCError
	// Binding is the binding of the call. On HTTP+JSON every A2A error comes as an HTTP status,
	// so there RPC (when set) is what the agent meant, as a JSON-RPC error object is on JSON-RPC.
	Binding Binding
}

func (e *HTTPStatusError) Error() string {
	msg := fmt.Sprintf("a2a %s: HTTP %d %s", e.Method, e.StatusCode, http.StatusText(e.StatusCode))
	if e.StatusCode >= 300 && e.StatusCode < 400 {
		if e.Location != "" {
			msg += fmt.Sprintf(": redirect to %s not followed", quoteShort(e.Location))
		} else {
			msg += ": redirect not followed"
		}
	}
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	if e.RPC != nil {
		msg += fmt.Sprintf(": agent error %d: %s", e.RPC.Code, e.RPC.Message)
	}
	return msg
}

// Unwrap returns the JSON-RPC error of the body, if any.
func (e *HTTPStatusError) Unwrap() error {
	if e.RPC == nil {
		return nil
	}
	return e.RPC
}

// quoteShort quotes s, cut to 64 bytes, so agent data in error messages stays short.
func quoteShort(s string) string {
	const max = 64
	if len(s) <= max {
		return strconv.Quote(s)
	}
	return strconv.Quote(Clip(s, max, "")) + "..."
}
