package a2aclient

import (
	"net/http"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Exchange is how the agent answered one call, whatever the binding, as the Client saw it once
// the answer began (HTTP: the response headers; gRPC: the unary answer or the stream's first
// message or status). ClientOptions.Observe receives one per HTTP request or gRPC call the
// Client makes, after its retries (a 0.3 HTTP+JSON call that switches form makes two), for
// observers such as the console's "check my agent", which judges an agent by them. It holds no
// header value and no body.
type Exchange struct {
	// URL is the URL called (HTTP bindings: with the binding's path), or the interface URL
	// (gRPC).
	URL     string
	Wire    Wire
	Binding Binding
	Op      Op
	// Status is the HTTP status; on gRPC 200 when the agent answered (with a result or an A2A
	// error status), 401 or 403 for UNAUTHENTICATED or PERMISSION_DENIED, 0 when no answer came
	// (the connection failed, UNAVAILABLE).
	Status int
	// MediaType is the response's media type ("text/event-stream", "application/json", …); on
	// gRPC "text/event-stream" for a server stream and "application/json" for a unary answer
	// (the A2A body's kind, not the framing), "" without an answer.
	MediaType string
}

// observe reports an exchange when the Client has an observer.
func (c *Client) observe(ep Endpoint, op Op, url string, resp *http.Response) {
	if c.opts.Observe == nil {
		return
	}
	ex := Exchange{URL: url, Wire: ep.Wire, Binding: ep.Binding, Op: op}
	if resp != nil {
		ex.Status, ex.MediaType = resp.StatusCode, mediaType(resp.Header)
	}
	c.opts.Observe(ex)
}

// observeGRPC reports a gRPC exchange: err is the call's error (nil: answered), stream whether
// the call is a server stream.
func (c *Client) observeGRPC(ep Endpoint, op Op, stream bool, err error) {
	if c.opts.Observe == nil {
		return
	}
	ex := Exchange{URL: ep.URL, Wire: ep.Wire, Binding: ep.Binding, Op: op, Status: http.StatusOK, MediaType: "application/json"}
	if stream {
		ex.MediaType = "text/event-stream"
	}
	if err != nil {
		switch status.Code(err) {
		case codes.Unauthenticated:
			ex.Status = http.StatusUnauthorized
		case codes.PermissionDenied:
			ex.Status = http.StatusForbidden
		case codes.Unavailable, codes.Canceled, codes.DeadlineExceeded:
			ex.Status, ex.MediaType = 0, ""
		default:
			// An A2A error, said as JSON-RPC says it: an answer carrying an error.
			ex.MediaType = "application/json"
		}
	}
	c.opts.Observe(ex)
}
