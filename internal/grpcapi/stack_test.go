package grpcapi

import (
	"bytes"
	"errors"
	"runtime"
	"testing"

	"google.golang.org/grpc"
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
