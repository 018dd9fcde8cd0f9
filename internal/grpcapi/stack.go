package grpcapi

import (
	"sync/atomic"

	"google.golang.org/grpc"
)

// OwnGoroutineAbove returns a stream interceptor that, once more than n streaming RPCs (turns)
// are open, runs each new one on a goroutine of its own, started near the bottom of a stack,
// while grpc-go's handler goroutine waits for it. Up to n it runs them in place.
//
// Why: a turn spends nearly all its life parked in the agent's body read, and a parked
// goroutine keeps the largest stack it ever needed (the GC shrinks a stack only while less than
// a quarter of it is in use). On grpc-go's goroutine the turn sits on ~2 KiB of grpc-go's own
// frames and needed 16 KiB; on a fresh goroutine it fits in 8 KiB, and grpc-go's goroutine,
// which then only receives the request and waits, in 4 KiB. With thousands of open streams that
// is tens of MiB (docs/performance.md, "Goroutine stacks of open streams"). The price is a
// goroutine start and a hand-over per turn, which a few hundred open turns do not need to pay:
// their stacks are a few MiB either way.
func OwnGoroutineAbove(n int64) grpc.StreamServerInterceptor {
	var open atomic.Int64
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		defer open.Add(-1)
		if open.Add(1) <= n {
			return handler(srv, ss)
		}
		done := make(chan error, 1)
		go func() { done <- handler(srv, ss) }()
		return <-done
	}
}
