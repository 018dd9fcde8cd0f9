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

func TestOwnGoroutine_runs_the_stream_on_a_goroutine_of_its_own_and_returns_its_error(t *testing.T) {
	t.Parallel()
	errDone := errors.New("handler done")
	srv := &Server{}
	caller := goroutineID()
	var ran string
	var gotSrv any
	err := OwnGoroutine(srv, nil, &grpc.StreamServerInfo{FullMethod: "/a2aconnector.v1.Connector/HandleTurn"},
		func(s any, _ grpc.ServerStream) error {
			ran, gotSrv = goroutineID(), s
			return errDone
		})
	if !errors.Is(err, errDone) {
		t.Errorf("error %v, want the handler's", err)
	}
	if ran == "" || ran == caller {
		t.Errorf("handler ran on goroutine %q, the caller is %q: want another one", ran, caller)
	}
	if gotSrv != srv {
		t.Errorf("handler got srv %v, want %v", gotSrv, srv)
	}
}
