package grpcapi

import (
	"bytes"
	"context"
	"errors"
	"net"
	"runtime"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// goroutineID is the id in the first line of runtime.Stack ("goroutine 42 [running]:").
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	return string(bytes.Fields(buf)[1])
}

var turnInfo = &grpc.StreamServerInfo{FullMethod: "/a2aconnector.v1.Connector/HandleTurn", IsServerStream: true}

func TestOwnGoroutineAbove_runs_streams_past_the_threshold_on_goroutines_of_their_own(t *testing.T) {
	t.Parallel()
	errDone := errors.New("handler done")
	intercept := OwnGoroutineAbove(1)
	srv := &Server{}
	caller := goroutineID()
	var first, second string
	var gotSrv any
	// The first stream runs in place; while it is open, a second one gets its own goroutine.
	err := intercept(srv, nil, turnInfo, func(s any, _ grpc.ServerStream) error {
		first, gotSrv = goroutineID(), s
		return intercept(srv, nil, turnInfo, func(any, grpc.ServerStream) error {
			second = goroutineID()
			return errDone
		})
	})
	if !errors.Is(err, errDone) {
		t.Errorf("error %v, want the handler's", err)
	}
	if first != caller {
		t.Errorf("the first stream ran on goroutine %q, want the caller's %q", first, caller)
	}
	if second == "" || second == caller {
		t.Errorf("the second stream ran on goroutine %q, the caller is %q: want another one", second, caller)
	}
	if gotSrv != srv {
		t.Errorf("handler got srv %v, want %v", gotSrv, srv)
	}
	// Both have ended: the next stream is the only one open again and runs in place.
	var third string
	_ = intercept(srv, nil, turnInfo, func(any, grpc.ServerStream) error {
		third = goroutineID()
		return nil
	})
	if third != caller {
		t.Errorf("after both ended, a stream ran on goroutine %q, want the caller's %q", third, caller)
	}
}

// Through a real gRPC server, a stream on its own goroutine sends, receives its caller's
// cancellation, and ends: the server then stops gracefully (it would wait for a stuck one).
func TestOwnGoroutineAbove_serves_a_real_stream_to_its_end(t *testing.T) {
	t.Parallel()
	srv := grpc.NewServer(grpc.ChainStreamInterceptor(OwnGoroutineAbove(0)))
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	ctx, cancel := context.WithCancel(t.Context())
	watch, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := watch.Recv(); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("first message %v, %v; want SERVING", r, err)
	}
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	if r, err := watch.Recv(); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("second message %v, %v; want NOT_SERVING", r, err)
	}
	cancel()
	if _, err := watch.Recv(); status.Code(err) != codes.Canceled {
		t.Fatalf("after cancel: %v, want Canceled", err)
	}
	stopped := make(chan struct{})
	go func() { srv.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second): // a stopped stream ends in milliseconds
		srv.Stop()
		t.Fatal("the server did not stop gracefully: the stream's goroutine did not end")
	}
}

// BenchmarkDeepCallOnAFreshGoroutine is a turn's stack in miniature: a fresh goroutine goes
// ~10 KiB deep through 40 frames, as a turn does in its agent call. "grown" calls growStack
// first, as OwnGoroutineAbove does for a turn it runs in place; "as-is" leaves the growing to
// the runtime at the deep point, where it copies and adjusts every frame.
func BenchmarkDeepCallOnAFreshGoroutine(b *testing.B) {
	for _, v := range []struct {
		name string
		grow bool
	}{{"as-is", false}, {"grown", true}} {
		b.Run(v.name, func(b *testing.B) {
			done := make(chan byte)
			for b.Loop() {
				go func() {
					if v.grow {
						growStack()
					}
					done <- descend(40)
				}()
				<-done
			}
		})
	}
}

// descend calls itself n deep, each frame ~256 bytes.
//
//go:noinline
func descend(n int) byte {
	var frame [240]byte
	frame[n%len(frame)] = byte(n)
	if n == 0 {
		return frame[0]
	}
	return descend(n-1) + frame[n%len(frame)]
}
