package fixtureagent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// BindingGRPC is the binding of an agent made by NewGRPC.
const BindingGRPC = "GRPC"

// The gRPC face (NewGRPC): a2a.proto's A2AService (the code a2a-go v2 generates from the spec)
// in front of the agent's own HTTP+JSON face, on a second loopback port. Each call is forwarded
// to the HTTP+JSON face (metadata as headers), so every behaviour is the same agent's; the
// answer is converted with protojson. An error body becomes a gRPC status with the ErrorInfo of
// the body; an error event in a stream becomes that status mid-stream; a dropped or reset HTTP
// stream becomes UNAVAILABLE mid-stream; an HTTP stream that ends without a final state ends the
// gRPC stream the same way. Requests are recorded by the HTTP+JSON face (paths under /a2a).
// Framing faults that gRPC cannot carry (a wrong content type, bad JSON) come out as INTERNAL;
// an HTTP 5xx without an A2A error as UNAVAILABLE, a 429 as RESOURCE_EXHAUSTED.

// NewGRPC starts a fixture agent speaking A2A 1.0 over gRPC (plaintext) on loopback; its URL is
// "http://127.0.0.1:port". It is closed when the test ends.
func NewGRPC(t testing.TB) *Server {
	t.Helper()
	s := NewWithOptions(t, Options{Binding: BindingHTTPJSON})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("fixtureagent: listen: %v", err)
	}
	gs := grpc.NewServer()
	a2apb.RegisterA2AServiceServer(gs, &grpcBridge{rest: s.URL, hc: &http.Client{}})
	go gs.Serve(ln) //nolint:errcheck // ends with Stop
	t.Cleanup(gs.Stop)
	s.grpcURL = "http://" + ln.Addr().String()
	s.URL = s.grpcURL
	return s
}

type grpcBridge struct {
	a2apb.UnimplementedA2AServiceServer
	rest string
	hc   *http.Client
}

// forward sends one HTTP+JSON request with the call's metadata as headers.
func (b *grpcBridge) forward(ctx context.Context, method, path string, body proto.Message, accept string) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		raw, err := protojson.Marshal(body)
		if err != nil {
			return nil, grpcstatus.Error(codes.Internal, err.Error())
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, b.rest+path, rd)
	if err != nil {
		return nil, grpcstatus.Error(codes.Internal, err.Error())
	}
	md, _ := metadata.FromIncomingContext(ctx)
	for k, vs := range md {
		if strings.HasPrefix(k, ":") || k == "content-type" || k == "user-agent" || k == "te" {
			continue
		}
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", accept)
	resp, err := b.hc.Do(req)
	if err != nil {
		return nil, grpcstatus.Error(codes.Unavailable, "agent unreachable")
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, statusFromBody(raw, resp.StatusCode)
	}
	return resp, nil
}

// statusFromBody turns a google.rpc.Status body into a gRPC status with its ErrorInfo.
func statusFromBody(raw []byte, httpStatus int) error {
	var body struct {
		Error struct {
			Status  string `json:"status"`
			Message string `json:"message"`
			Details []struct {
				Reason string `json:"reason"`
				Domain string `json:"domain"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &body) != nil || body.Error.Status == "" {
		if httpStatus == http.StatusTooManyRequests {
			return grpcstatus.Errorf(codes.ResourceExhausted, "HTTP %d", httpStatus)
		}
		if httpStatus >= 500 {
			// What a gRPC gateway or balancer answers when the backend is down.
			return grpcstatus.Errorf(codes.Unavailable, "HTTP %d", httpStatus)
		}
		return grpcstatus.Errorf(codes.Internal, "HTTP %d", httpStatus)
	}
	code := codes.Internal
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		if strings.EqualFold(strings.ReplaceAll(c.String(), " ", "_"), body.Error.Status) ||
			strings.EqualFold(grpcStatusName(c), body.Error.Status) {
			code = c
		}
	}
	st := grpcstatus.New(code, body.Error.Message)
	for _, d := range body.Error.Details {
		if d.Reason != "" {
			if with, err := st.WithDetails(&errdetails.ErrorInfo{Reason: d.Reason, Domain: d.Domain}); err == nil {
				st = with
			}
		}
	}
	return st.Err()
}

// grpcStatusName is the google.rpc spelling of a code (FAILED_PRECONDITION).
func grpcStatusName(c codes.Code) string {
	var b strings.Builder
	for i, r := range c.String() {
		if r >= 'A' && r <= 'Z' && i > 0 {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}

func decodeInto(raw []byte, m proto.Message) error {
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(raw, m); err != nil {
		return grpcstatus.Errorf(codes.Internal, "the agent's answer is not A2A: %v", err)
	}
	return nil
}

func (b *grpcBridge) unary(ctx context.Context, method, path string, body proto.Message, out proto.Message) error {
	resp, err := b.forward(ctx, method, path, body, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return grpcstatus.Error(codes.Unavailable, "connection lost")
	}
	return decodeInto(raw, out)
}

// stream forwards an HTTP+JSON event stream (or single JSON answer) as gRPC messages.
func (b *grpcBridge) stream(ctx context.Context, path string, body proto.Message, send func(*a2apb.StreamResponse) error) error {
	resp, err := b.forward(ctx, http.MethodPost, path, body, "text/event-stream")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	one := func(data []byte) error {
		if bytes.Contains(data, []byte(`"error"`)) {
			var probe struct {
				Error json.RawMessage `json:"error"`
			}
			if json.Unmarshal(data, &probe) == nil && len(probe.Error) > 0 {
				return statusFromBody(data, http.StatusInternalServerError)
			}
		}
		var ev a2apb.StreamResponse
		if err := decodeInto(data, &ev); err != nil {
			return err
		}
		return send(&ev)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		if err != nil {
			return grpcstatus.Error(codes.Unavailable, "connection lost")
		}
		return one(raw)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if len(data) > 0 {
				if err := one(data); err != nil {
					return err
				}
			}
			data = data[:0]
		case bytes.HasPrefix(line, []byte("data:")):
			data = append(data, bytes.TrimSpace(line[len("data:"):])...)
		}
	}
	if err := sc.Err(); err != nil {
		return grpcstatus.Error(codes.Unavailable, fmt.Sprintf("connection lost: %v", err))
	}
	if len(data) > 0 {
		return one(data)
	}
	return nil
}

func (b *grpcBridge) SendMessage(ctx context.Context, req *a2apb.SendMessageRequest) (*a2apb.SendMessageResponse, error) {
	var out a2apb.SendMessageResponse
	if err := b.unary(ctx, http.MethodPost, "/message:send", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (b *grpcBridge) SendStreamingMessage(req *a2apb.SendMessageRequest, ss grpc.ServerStreamingServer[a2apb.StreamResponse]) error {
	return b.stream(ss.Context(), "/message:stream", req, ss.Send)
}

func (b *grpcBridge) GetTask(ctx context.Context, req *a2apb.GetTaskRequest) (*a2apb.Task, error) {
	var out a2apb.Task
	if err := b.unary(ctx, http.MethodGet, "/tasks/"+req.GetId(), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (b *grpcBridge) CancelTask(ctx context.Context, req *a2apb.CancelTaskRequest) (*a2apb.Task, error) {
	var out a2apb.Task
	if err := b.unary(ctx, http.MethodPost, "/tasks/"+req.GetId()+":cancel", &a2apb.CancelTaskRequest{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (b *grpcBridge) SubscribeToTask(req *a2apb.SubscribeToTaskRequest, ss grpc.ServerStreamingServer[a2apb.StreamResponse]) error {
	return b.stream(ss.Context(), "/tasks/"+req.GetId()+":subscribe", nil, ss.Send)
}
