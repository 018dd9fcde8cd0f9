package grpcapi

import (
	"google.golang.org/grpc"
)

// OwnGoroutine is a stream interceptor that runs each streaming RPC (a turn) on a goroutine of
// its own, started near the bottom of a stack, while grpc-go's handler goroutine waits.
//
// Why: a turn spends nearly all its life parked in the agent's body read, and a parked
// goroutine keeps the largest stack it ever needed (the GC shrinks a stack only while less than
// a quarter of it is in use). On grpc-go's goroutine the turn sits on ~2 KiB of grpc-go's own
// frames and needed 16 KiB; on a fresh goroutine it fits in 8 KiB, and grpc-go's goroutine,
// which then never goes deeper than receiving the request, in 4 KiB. With thousands of open
// streams that is tens of MiB (docs/performance.md, "Goroutine stacks"). The price is one
// goroutine start and one hand-over per turn, after its Final.
func OwnGoroutine(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	done := make(chan error, 1)
	go func() { done <- handler(srv, ss) }()
	return <-done
}
