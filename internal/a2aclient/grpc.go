package a2aclient

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/a2a"
	"github.com/a2a-connector/a2a-connector/internal/a2a/pbconv"
	"github.com/a2a-connector/a2a-connector/internal/reqauth"

	a2apbv0 "github.com/a2aproject/a2a-go/a2apb"
	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// The gRPC binding (A2A 1.0, a2a.proto's A2AService, and A2A 0.3's), with the clients generated
// from the protos that a2a-go ships (v2's a2apb/v1, v0.3's a2apb). Requests are built from the
// requests of the core model straight into the proto (package pbconv) and answers converted
// straight back: the JSON round trip this binding once made (protojson, then the JSON decoder)
// cost 13 % of the connector's CPU on a gRPC turn.

// grpcMetadata is the call's service parameters as gRPC metadata: the endpoint's headers (the
// API key under every name the card asks, extensions), A2A-Version (1.0 only: 0.3 has none), and
// the W3C trace context of ctx (traceparent, and tracestate when there is one), so that the
// agent joins the turn's trace as it does over HTTP (telemetry.AgentTransport). The propagator
// is named here rather than taken from otel's global, which nothing sets; baggage stays inside
// the platform.
func grpcMetadata(ctx context.Context, ep Endpoint, d dialect) context.Context {
	h := make(http.Header, len(ep.Header)+3)
	for k, vs := range ep.Header {
		h[k] = vs
	}
	if ep.Wire == WireV1 {
		d.header(h)
	}
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
	md := make(metadata.MD, len(h))
	for k, vs := range h {
		md[strings.ToLower(k)] = append([]string(nil), vs...)
	}
	ctx = reqauth.With(ctx, ep.Authorize, nil) // grpcAuth signs the call
	return metadata.NewOutgoingContext(ctx, md)
}

// grpcRequest builds the proto request of op from its request in the core model, straight into the proto
// of the call's generation (no JSON in between). 1.0 carries the tenant in the request; 0.3 has
// none and names a task as "tasks/{id}".
func grpcRequest(cl call, params any, tenant string) (proto.Message, error) {
	if cl.grpcV0 {
		return grpcRequestV0(cl, params)
	}
	switch p := params.(type) {
	case *a2a.SendMessageRequest:
		return pbconv.SendRequestToPB(p, tenant)
	case a2a.GetTaskRequest:
		m := &a2apb.GetTaskRequest{Tenant: tenant, Id: p.ID}
		if p.HistoryLength != nil {
			n, err := pbconv.Int32Of(*p.HistoryLength)
			if err != nil {
				return nil, err
			}
			m.HistoryLength = &n
		}
		return m, nil
	case a2a.SubscribeToTaskRequest:
		return &a2apb.SubscribeToTaskRequest{Tenant: tenant, Id: p.ID}, nil
	case a2a.CancelTaskRequest:
		md, err := pbconv.StructToPB(p.Metadata)
		if err != nil {
			return nil, fmt.Errorf("metadata: %w", err)
		}
		return &a2apb.CancelTaskRequest{Tenant: tenant, Id: p.ID, Metadata: md}, nil
	}
	return nil, fmt.Errorf("no A2A 1.0 gRPC request for %T", params)
}

func grpcRequestV0(cl call, params any) (proto.Message, error) {
	switch p := params.(type) {
	case *a2a.SendMessageRequest:
		return pbconv.SendRequestToPBV0(p)
	case a2a.GetTaskRequest:
		m := &a2apbv0.GetTaskRequest{Name: "tasks/" + p.ID}
		if p.HistoryLength != nil {
			n, err := pbconv.Int32Of(*p.HistoryLength)
			if err != nil {
				return nil, err
			}
			m.HistoryLength = n
		}
		return m, nil
	case a2a.CancelTaskRequest:
		return &a2apbv0.CancelTaskRequest{Name: "tasks/" + p.ID}, nil
	case a2a.SubscribeToTaskRequest:
		return &a2apbv0.TaskSubscriptionRequest{Name: "tasks/" + p.ID}, nil
	}
	return nil, fmt.Errorf("no A2A 0.3 gRPC request for %T", params)
}

// grpcDecode turns one answer of the agent (a message of either generation's proto) into an
// Event, converting the proto straight to the core model.
func (cl call) grpcDecode(m proto.Message, max int) (a2a.Event, error) {
	if n := proto.Size(m); n > max {
		return nil, &a2a.ProtocolError{Method: cl.method, Kind: a2a.ProtocolEventTooLarge, Detail: fmt.Sprintf("message of %d bytes exceeds %d", n, max)}
	}
	ev, ok, err := pbconv.EventFromPB(m)
	if !ok {
		return nil, &a2a.ProtocolError{Method: cl.method, Kind: a2a.ProtocolInvalidResponse, Detail: fmt.Sprintf("unexpected answer %T", m)}
	}
	if err != nil {
		return nil, withMethod(cl.method, err)
	}
	return ev, nil
}

// grpcCodes maps gRPC status codes to the JSON-RPC codes of the same A2A errors, for statuses
// without an A2A ErrorInfo.
var grpcCodes = map[codes.Code]int{
	codes.NotFound:           a2a.CodeTaskNotFound,
	codes.Unimplemented:      a2a.CodeMethodNotFound,
	codes.InvalidArgument:    a2a.CodeInvalidParams,
	codes.FailedPrecondition: a2a.CodeUnsupportedOperation,
	codes.Unauthenticated:    a2a.CodeUnauthenticated,
	codes.PermissionDenied:   a2a.CodeUnauthorized,
	codes.Internal:           a2a.CodeInternalError,
	codes.Unknown:            a2a.CodeInternalError,
}

// grpcError explains a failed gRPC call: our ctx (its cause), a connection that could not be
// made (the dialer's own error, so a guard refusal reads as one), an oversized message, or the
// agent's A2A error as *RPCError.
func (c *Client) grpcError(ctx context.Context, method string, conn *grpcConn, err error) error {
	if cause := context.Cause(ctx); cause != nil {
		return fmt.Errorf("a2a %s: %w", method, cause)
	}
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("a2a %s: %w", method, err)
	}
	switch st.Code() {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Aborted:
		if conn != nil {
			if de := conn.dialErr.Load(); de != nil {
				return fmt.Errorf("a2a %s: %w", method, *de)
			}
			if te := conn.tlsErr.Load(); te != nil && *te != nil {
				return fmt.Errorf("a2a %s: %w", method, *te)
			}
		}
		if alert := tlsAlertIn(st.Message()); alert != nil {
			// The alert was recorded (alertRecorder) but a reconnect cleared it since.
			return fmt.Errorf("a2a %s: %w", method, alert)
		}
		// No answer from the agent: a transport failure to the caller (resumed mid-stream,
		// "down" for the breaker), with gRPC's words kept for the log.
		return fmt.Errorf("a2a %s: %w", method, err)
	case codes.Internal:
		// grpc-go's INTERNAL for an RST_STREAM (INTERNAL_ERROR, PROTOCOL_ERROR, ...) with no
		// gRPC status: the stream was cut — by a proxy whose agent died, or by the agent's
		// HTTP/2 layer — so no answer of the agent's, and a transport failure like an HTTP
		// stream's unexpected EOF, not an A2A INTERNAL error.
		if strings.HasPrefix(st.Message(), "stream terminated by RST_STREAM") {
			return fmt.Errorf("a2a %s: %w", method, err)
		}
	case codes.ResourceExhausted:
		if strings.Contains(st.Message(), "larger than max") {
			return &a2a.ProtocolError{Method: method, Kind: a2a.ProtocolEventTooLarge, Detail: Clip(st.Message(), 200, "…")}
		}
	case codes.Unknown:
		// grpc-go's UNKNOWN for an HTTP 200 whose content type is not gRPC's: a web page (a
		// proxy's, a web server's) where the agent should be. The other bindings call a 2xx
		// that is not A2A a protocol error; so does this one, rather than an agent's A2A error.
		if _, rest, ok := strings.Cut(st.Message(), `received unexpected content-type "`); ok {
			mt, _, _ := strings.Cut(rest, `"`)
			return unexpectedType(method, mt)
		}
	}
	e := &a2a.RPCError{Code: a2a.CodeInternalError, Message: st.Message(), Method: method}
	if code, ok := grpcCodes[st.Code()]; ok {
		e.Code = code
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			if code, ok := reasonCodes[strings.ToUpper(info.GetReason())]; ok {
				e.Code = code
				break
			}
		}
	}
	return e
}

// grpcRetryable: no answer came because the connection could not be made or was refused for
// load, and the guard did not refuse it.
func grpcRetryable(conn *grpcConn, err error) bool {
	st, ok := status.FromError(err)
	if !ok || (st.Code() != codes.Unavailable && st.Code() != codes.ResourceExhausted) {
		return false
	}
	if de := conn.dialErr.Load(); de != nil && !retryableTransportError(*de) {
		return false
	}
	return st.Code() == codes.Unavailable || !strings.Contains(st.Message(), "larger than max")
}

// grpcAttempt runs fn with the Client's retry rules: at most MaxRetries more times, within the
// retry budget, only when the call got no answer (see grpcRetryable), with the same backoff as
// HTTP and never past ctx's deadline.
func (c *Client) grpcAttempt(ctx context.Context, ep Endpoint, conn *grpcConn, fn func() error) error {
	key := ep.BudgetKey
	if key == "" {
		key = ep.URL
	}
	if b := c.opts.RetryBudget; b != nil {
		b.call(key)
	}
	pol := &retryPolicy{opts: &c.opts, budgetKey: key}
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || attempt > c.opts.MaxRetries || ctx.Err() != nil || !grpcRetryable(conn, err) {
			return err
		}
		wait := pol.backoffFor(attempt)
		if deadline, ok := ctx.Deadline(); ok && !c.opts.Now().Add(wait).Before(deadline) {
			return err
		}
		if b := c.opts.RetryBudget; b != nil && !b.retry(key) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// grpcUnary makes a non-streaming gRPC call.
func (c *Client) grpcUnary(ctx context.Context, ep Endpoint, cl call, params any) (a2a.Event, error) {
	conn, err := c.grpc.acquire(ctx, ep.URL)
	if err != nil {
		return nil, fmt.Errorf("a2a %s: %w", cl.method, err)
	}
	defer c.grpc.release(conn)
	req, err := grpcRequest(cl, params, ep.Tenant)
	if err != nil {
		return nil, fmt.Errorf("a2a %s: encode params: %w", cl.method, err)
	}
	callCtx := grpcMetadata(ctx, ep, cl.d)
	limit := grpc.MaxCallRecvMsgSize(int(c.opts.MaxBodyBytes))
	var resp proto.Message
	err = c.grpcAttempt(ctx, ep, conn, func() error {
		var err error
		switch r := req.(type) {
		case *a2apb.SendMessageRequest:
			resp, err = conn.client.SendMessage(callCtx, r, limit)
		case *a2apb.GetTaskRequest:
			resp, err = conn.client.GetTask(callCtx, r, limit)
		case *a2apb.CancelTaskRequest:
			resp, err = conn.client.CancelTask(callCtx, r, limit)
		case *a2apbv0.SendMessageRequest:
			resp, err = conn.clientV0.SendMessage(callCtx, r, limit)
		case *a2apbv0.GetTaskRequest:
			resp, err = conn.clientV0.GetTask(callCtx, r, limit)
		case *a2apbv0.CancelTaskRequest:
			resp, err = conn.clientV0.CancelTask(callCtx, r, limit)
		default:
			err = fmt.Errorf("no unary gRPC call for %T", req)
		}
		return err
	})
	c.observeGRPC(ep, cl.op, false, err)
	if err != nil {
		return nil, c.grpcError(ctx, cl.method, conn, err)
	}
	return cl.grpcDecode(resp, int(c.opts.MaxBodyBytes))
}

// grpcStream opens a server stream; s is the Stream whose timer already runs on ctx.
func (c *Client) grpcStream(ctx context.Context, ep Endpoint, cl call, params any, s *Stream) (*Stream, error) {
	conn, err := c.grpc.acquire(ctx, ep.URL)
	if err != nil {
		s.release()
		return nil, fmt.Errorf("a2a %s: %w", cl.method, err)
	}
	req, err := grpcRequest(cl, params, ep.Tenant)
	if err != nil {
		c.grpc.release(conn)
		s.release()
		return nil, fmt.Errorf("a2a %s: encode params: %w", cl.method, err)
	}
	callCtx := grpcMetadata(ctx, ep, cl.d)
	limit := grpc.MaxCallRecvMsgSize(c.opts.MaxEventBytes + 1024)
	// recvNext reads the next message of whichever service the stream is on.
	var recvNext func() (proto.Message, error)
	var first proto.Message
	// A server stream's failure to start shows at the first Recv: the retries cover both.
	err = c.grpcAttempt(ctx, ep, conn, func() error {
		var err error
		switch r := req.(type) {
		case *a2apb.SendMessageRequest:
			var st grpc.ServerStreamingClient[a2apb.StreamResponse]
			st, err = conn.client.SendStreamingMessage(callCtx, r, limit)
			recvNext = func() (proto.Message, error) { return st.Recv() }
		case *a2apb.SubscribeToTaskRequest:
			var st grpc.ServerStreamingClient[a2apb.StreamResponse]
			st, err = conn.client.SubscribeToTask(callCtx, r, limit)
			recvNext = func() (proto.Message, error) { return st.Recv() }
		case *a2apbv0.SendMessageRequest:
			var st grpc.ServerStreamingClient[a2apbv0.StreamResponse]
			st, err = conn.clientV0.SendStreamingMessage(callCtx, r, limit)
			recvNext = func() (proto.Message, error) { return st.Recv() }
		case *a2apbv0.TaskSubscriptionRequest:
			var st grpc.ServerStreamingClient[a2apbv0.StreamResponse]
			st, err = conn.clientV0.TaskSubscription(callCtx, r, limit)
			recvNext = func() (proto.Message, error) { return st.Recv() }
		default:
			err = fmt.Errorf("no streaming gRPC call for %T", req)
		}
		if err != nil {
			return err
		}
		first, err = recvNext()
		if err == io.EOF {
			first, err = nil, nil
		}
		return err
	})
	c.observeGRPC(ep, cl.op, true, err)
	if err != nil {
		c.grpc.release(conn)
		e := c.grpcError(ctx, cl.method, conn, err)
		s.release()
		return nil, e
	}
	var once sync.Once
	done := func() { once.Do(func() { c.grpc.release(conn) }) }
	ended := first == nil
	s.recv = func() (a2a.Event, error) {
		var m proto.Message
		switch {
		case first != nil:
			m, first = first, nil
		case ended:
			done()
			return nil, io.EOF
		default:
			var err error
			if m, err = recvNext(); err != nil {
				done()
				if err == io.EOF {
					return nil, io.EOF
				}
				return nil, c.grpcError(ctx, cl.method, conn, err)
			}
		}
		if s.timer != nil {
			s.markProgress()
		}
		return cl.grpcDecode(m, c.opts.MaxEventBytes)
	}
	s.onRelease = done
	return s, nil
}
