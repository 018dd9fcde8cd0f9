package h2grpc_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/a2a-connector/a2a-connector/internal/h2grpc"
)

// healthServer is a real grpc-go server of the health service (a unary call and a server
// stream) whose answers the test chooses.
type healthServer struct {
	healthpb.UnimplementedHealthServer
	check func(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error)
	watch func(req *healthpb.HealthCheckRequest, s grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error
}

func (h *healthServer) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return h.check(ctx, req)
}

func (h *healthServer) Watch(req *healthpb.HealthCheckRequest, s grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	return h.watch(req, s)
}

// server serves h on loopback, over TLS when cert is set, and returns its address and the
// connections it accepted (which the test may close, as a server closing idle ones does).
func server(t *testing.T, h *healthServer, cert *tls.Certificate) (addr string, accepted *connList) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted = &connList{Listener: ln}
	var opts []grpc.ServerOption
	if cert != nil {
		opts = append(opts, grpc.Creds(credentials.NewServerTLSFromCert(cert)))
	}
	gs := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(gs, h)
	go gs.Serve(accepted)
	t.Cleanup(gs.Stop)
	return ln.Addr().String(), accepted
}

type connList struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func (l *connList) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
	}
	return c, err
}

func (l *connList) closeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		c.Close()
	}
}

// transport dials loopback, counting dials.
func transport(t *testing.T, tlsConfig *tls.Config) (*h2grpc.Transport, *atomic.Int32) {
	var dials atomic.Int32
	var d net.Dialer
	tr := h2grpc.New(h2grpc.Options{TLSConfig: tlsConfig, Dial: func(ctx context.Context, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, "tcp", addr)
	}})
	t.Cleanup(tr.Close)
	return tr, &dials
}

func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestUnaryCall_metadata_deadline_and_reuse(t *testing.T) {
	var got metadata.MD
	addr, _ := server(t, &healthServer{check: func(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		got, _ = metadata.FromIncomingContext(ctx)
		if _, ok := ctx.Deadline(); !ok {
			t.Error("the server sees no deadline")
		}
		grpc.SetHeader(ctx, metadata.Pairs("x-answer", "yes"))
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
	}}, nil)
	tr, dials := transport(t, nil)
	client := healthpb.NewHealthClient(tr.Target(addr, false, nil))
	for i := range 3 {
		ctx := metadata.AppendToOutgoingContext(bounded(t), "x-api-key", "k", "a2a-version", "1.0", "trace-bin", "\x00\x01")
		var header metadata.MD
		resp, err := client.Check(ctx, &healthpb.HealthCheckRequest{Service: "s"}, grpc.Header(&header))
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("call %d: %v, %v", i, resp, err)
		}
		if v := header.Get("x-answer"); len(v) != 1 || v[0] != "yes" {
			t.Errorf("response header = %v", header)
		}
	}
	for k, want := range map[string]string{"x-api-key": "k", "a2a-version": "1.0", "trace-bin": "\x00\x01", "content-type": "application/grpc"} {
		if v := got.Get(k); len(v) != 1 || v[0] != want {
			t.Errorf("server metadata %s = %q, want %q", k, v, want)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d dials for three calls in a row, want one connection reused", n)
	}
}

func TestServerStream_messages_then_the_end(t *testing.T) {
	addr, _ := server(t, &healthServer{watch: func(req *healthpb.HealthCheckRequest, s grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
		for _, st := range []healthpb.HealthCheckResponse_ServingStatus{healthpb.HealthCheckResponse_UNKNOWN, healthpb.HealthCheckResponse_NOT_SERVING, healthpb.HealthCheckResponse_SERVING} {
			if err := s.Send(&healthpb.HealthCheckResponse{Status: st}); err != nil {
				return err
			}
		}
		return nil
	}}, nil)
	tr, dials := transport(t, nil)
	client := healthpb.NewHealthClient(tr.Target(addr, false, nil))
	for round := range 2 {
		st, err := client.Watch(bounded(t), &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var got []healthpb.HealthCheckResponse_ServingStatus
		for {
			m, err := st.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			got = append(got, m.GetStatus())
		}
		if len(got) != 3 || got[2] != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("round %d: %v", round, got)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d dials for two streams in a row, want one", n)
	}
}

// Several calls at once take a connection each (one call per connection), and all of them go
// back to the pool.
func TestConcurrentCalls_take_a_connection_each(t *testing.T) {
	release := make(chan struct{})
	var inside sync.WaitGroup
	var calls atomic.Int32
	inside.Add(3)
	addr, _ := server(t, &healthServer{check: func(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		if calls.Add(1) <= 3 { // the first three wait until all three are in
			inside.Done()
			<-release
		}
		return &healthpb.HealthCheckResponse{}, nil
	}}, nil)
	tr, dials := transport(t, nil)
	client := healthpb.NewHealthClient(tr.Target(addr, false, nil))
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if _, err := client.Check(bounded(t), &healthpb.HealthCheckRequest{}); err != nil {
				t.Error(err)
			}
		})
	}
	inside.Wait()
	close(release)
	wg.Wait()
	if n := dials.Load(); n != 3 {
		t.Errorf("%d dials, want 3", n)
	}
	for range 3 {
		if _, err := client.Check(bounded(t), &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := dials.Load(); n != 3 {
		t.Errorf("%d dials after three more calls, want the pooled three reused", n)
	}
}

func TestStatus_code_message_and_details(t *testing.T) {
	addr, _ := server(t, &healthServer{check: func(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		st, _ := status.New(codes.NotFound, "task t-1 not found: 100% gone").WithDetails(&errdetails.ErrorInfo{Reason: "TASK_NOT_FOUND", Domain: "a2a-protocol.org"})
		return nil, st.Err()
	}}, nil)
	tr, _ := transport(t, nil)
	_, err := healthpb.NewHealthClient(tr.Target(addr, false, nil)).Check(bounded(t), &healthpb.HealthCheckRequest{})
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.NotFound || st.Message() != "task t-1 not found: 100% gone" {
		t.Fatalf("err = %v", err)
	}
	if d := st.Details(); len(d) != 1 || d[0].(*errdetails.ErrorInfo).GetReason() != "TASK_NOT_FOUND" {
		t.Errorf("details = %v", d)
	}
}

func TestMessageLargerThanTheLimit_is_resource_exhausted(t *testing.T) {
	addr, _ := server(t, &healthServer{watch: func(req *healthpb.HealthCheckRequest, s grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
		return s.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}) // 2 bytes
	}}, nil)
	tr, _ := transport(t, nil)
	st, err := healthpb.NewHealthClient(tr.Target(addr, false, nil)).Watch(bounded(t), &healthpb.HealthCheckRequest{}, grpc.MaxCallRecvMsgSize(1))
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Recv()
	if s, _ := status.FromError(err); s.Code() != codes.ResourceExhausted || !strings.Contains(s.Message(), "larger than max") {
		t.Fatalf("err = %v, want RESOURCE_EXHAUSTED larger than max", err)
	}
}

// Cancelling a call ends its blocked read at once; the server sees the call gone, and the
// connection is not reused.
func TestCancel_mid_stream(t *testing.T) {
	gone := make(chan struct{})
	addr, _ := server(t, &healthServer{watch: func(req *healthpb.HealthCheckRequest, s grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
		if err := s.Send(&healthpb.HealthCheckResponse{}); err != nil {
			return err
		}
		<-s.Context().Done()
		close(gone)
		return nil
	}}, nil)
	tr, _ := transport(t, nil)
	ctx, cancel := context.WithCancel(bounded(t))
	st, err := healthpb.NewHealthClient(tr.Target(addr, false, nil)).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err = st.Recv()
	if s, _ := status.FromError(err); s.Code() != codes.Canceled {
		t.Fatalf("err = %v, want CANCELED", err)
	}
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not see the call end")
	}
}

// A pooled connection the server closed while it was idle: the next call goes out again on a
// fresh one, and the caller never sees it.
func TestDeadPooledConnection_is_replaced(t *testing.T) {
	addr, accepted := server(t, &healthServer{check: func(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
	}}, nil)
	tr, dials := transport(t, nil)
	client := healthpb.NewHealthClient(tr.Target(addr, false, nil))
	if _, err := client.Check(bounded(t), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	accepted.closeAll()
	if _, err := client.Check(bounded(t), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("call on a dead pooled connection: %v", err)
	}
	if n := dials.Load(); n != 2 {
		t.Errorf("%d dials, want 2", n)
	}
}

// What is not a gRPC server answers as grpc-go reports it: 200 without the gRPC content type is
// UNKNOWN, 404 is UNIMPLEMENTED (the fallback
// cue), 503 UNAVAILABLE, and a dial failure UNAVAILABLE with the dialer's error reported.
func TestNotAGRPCServer(t *testing.T) {
	for code, want := range map[int]codes.Code{http.StatusOK: codes.Unknown, http.StatusNotFound: codes.Unimplemented, http.StatusServiceUnavailable: codes.Unavailable, http.StatusTeapot: codes.Unknown} {
		s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(code)
		}))
		s.Config.Protocols = new(http.Protocols)
		s.Config.Protocols.SetHTTP1(true)
		s.Config.Protocols.SetUnencryptedHTTP2(true) // prior knowledge, as gRPC's plaintext
		s.Start()
		tr, _ := transport(t, nil)
		_, err := healthpb.NewHealthClient(tr.Target(strings.TrimPrefix(s.URL, "http://"), false, nil)).Check(bounded(t), &healthpb.HealthCheckRequest{})
		if st, _ := status.FromError(err); st.Code() != want {
			t.Errorf("HTTP %d: %v, want %v", code, err, want)
		}
		s.Close()
	}
	var seen error
	tr := h2grpc.New(h2grpc.Options{Dial: func(context.Context, string) (net.Conn, error) { return nil, errors.New("refused by the guard") }})
	defer tr.Close()
	_, err := healthpb.NewHealthClient(tr.Target("127.0.0.1:1", false, func(err error) { seen = err })).Check(bounded(t), &healthpb.HealthCheckRequest{})
	if st, _ := status.FromError(err); st.Code() != codes.Unavailable || seen == nil {
		t.Errorf("dial failure: %v (dialer error seen: %v)", err, seen)
	}
}

func TestTLS_with_ALPN_h2(t *testing.T) {
	hs := httptest.NewUnstartedServer(nil)
	hs.StartTLS()
	cert := hs.TLS.Certificates[0]
	roots := hs.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	hs.Close()
	addr, _ := server(t, &healthServer{check: func(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
	}}, &cert)
	tr, _ := transport(t, &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12})
	resp, err := healthpb.NewHealthClient(tr.Target(addr, true, nil)).Check(bounded(t), &healthpb.HealthCheckRequest{})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("over TLS: %v, %v", resp, err)
	}
}

// A turn stops reading at its last event and cancels the call (the trailers may not have been
// read): the connection is reset at the stream level and reused, not redialed.
func TestStoppingAfterTheLastMessage_keeps_the_connection(t *testing.T) {
	hold := make(chan struct{})
	addr, _ := server(t, &healthServer{watch: func(req *healthpb.HealthCheckRequest, s grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
		if err := s.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}); err != nil {
			return err
		}
		if req.GetService() == "hold" {
			select { // the trailers come only after the client gave up
			case <-s.Context().Done():
			case <-hold:
			}
		}
		return nil
	}}, nil)
	defer close(hold)
	tr, dials := transport(t, nil)
	client := healthpb.NewHealthClient(tr.Target(addr, false, nil))
	for i, service := range []string{"hold", "", "hold", ""} {
		ctx, cancel := context.WithCancel(bounded(t))
		st, err := client.Watch(ctx, &healthpb.HealthCheckRequest{Service: service})
		if err != nil {
			t.Fatal(err)
		}
		if m, err := st.Recv(); err != nil || m.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("call %d: %v, %v", i, m, err)
		}
		cancel()
		// The connection goes back from the context's hook, on its own goroutine.
		for deadline := time.Now().Add(10 * time.Second); tr.Idle() != 1; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("call %d: the connection did not come back to the pool", i)
			}
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d dials for four calls abandoned after their last message, want 1", n)
	}
}
