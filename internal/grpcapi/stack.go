package grpcapi

import (
	"sync/atomic"
)

// Handoff runs turns: in place while at most n are open, and each one past that on a
// goroutine of its own, started near the bottom of a stack, while grpc-go's handler goroutine
// waits for it. A nil *Handoff runs every turn in place.
//
// Why: a turn spends nearly all its life parked in the agent's body read, and a parked
// goroutine keeps the largest stack it ever needed (the GC shrinks a stack only while less than
// a quarter of it is in use). On grpc-go's goroutine the turn sits on ~2 KiB of grpc-go's own
// frames and needed 16 KiB; on a fresh goroutine it fits in 8 KiB, and grpc-go's goroutine,
// which then only receives the request and waits, in 4 KiB. With thousands of open streams that
// is tens of MiB (docs/performance.md, "Goroutine stacks of open streams"). The price is a
// goroutine start and a hand-over per turn, which a few hundred open turns do not need to pay:
// their stacks are a few MiB either way. The server hands a turn over only once it has been
// admitted: a refused turn costs no goroutine beyond its stream's.
type Handoff struct {
	n    int64
	open atomic.Int64
}

// NewHandoff returns a Handoff that runs turns in place while at most n are open.
func NewHandoff(n int64) *Handoff { return &Handoff{n: n} }

// Run runs turn and returns what it returned.
func (h *Handoff) Run(turn func() error) error {
	if h == nil {
		return turn()
	}
	defer h.open.Add(-1)
	if h.open.Add(1) <= h.n {
		growStack()
		return turn()
	}
	done := make(chan error, 1)
	go func() { done <- turn() }()
	return <-done
}

// growStack grows the calling goroutine's stack to 16 KiB at once, while it is still shallow.
//
// Why: a turn run in place on grpc-go's goroutine goes ~10 KiB deep (parsing the agent's
// response headers under net/http's client and our a2a client with its retry loop), past the
// 8 KiB the runtime grows a fresh goroutine's stack to first. Growing there means copying the
// stack and adjusting each of its ~40 frames, once or twice per turn: ~5 % of the connector's
// CPU at c=100 (pprof: runtime.newstack, nearly all of it under the first context lookup of the
// agent call). Here, a few frames deep, the runtime makes room for this frame in one step, and
// the copy is of a small stack. The GC shrinks the stack again as usual once less than a quarter
// of it is in use, so a parked turn keeps no more than it needs. (CockroachDB's growstack does
// the same for its storage paths.) The turns run on their own goroutines above n are left
// alone: there memory matters more than the copy.
//
//go:noinline
func growStack() {
	var frame [10 << 10]byte
	keepFrame(frame[:])
}

// keepFrame uses the frame so the compiler cannot drop it; it does not let it escape, so the
// frame stays on the stack.
//
//go:noinline
func keepFrame(b []byte) { b[len(b)-1] = 0 }
