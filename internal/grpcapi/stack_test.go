package grpcapi

import (
	"bytes"
	"errors"
	"runtime"
	"testing"
)

// goroutineID is the id in the first line of runtime.Stack ("goroutine 42 [running]:").
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	return string(bytes.Fields(buf)[1])
}

func TestHandoff_runs_turns_past_the_threshold_on_goroutines_of_their_own(t *testing.T) {
	t.Parallel()
	errDone := errors.New("turn done")
	h := NewHandoff(1)
	caller := goroutineID()
	var first, second string
	// The first turn runs in place; while it is open, a second one gets its own goroutine.
	err := h.Run(func() error {
		first = goroutineID()
		return h.Run(func() error {
			second = goroutineID()
			return errDone
		})
	})
	if !errors.Is(err, errDone) {
		t.Errorf("error %v, want the turn's", err)
	}
	if first != caller {
		t.Errorf("the first turn ran on goroutine %q, want the caller's %q", first, caller)
	}
	if second == "" || second == caller {
		t.Errorf("the second turn ran on goroutine %q, the caller is %q: want another one", second, caller)
	}
	// Both have ended: the next turn is the only one open again and runs in place.
	var third string
	_ = h.Run(func() error {
		third = goroutineID()
		return nil
	})
	if third != caller {
		t.Errorf("after both ended, a turn ran on goroutine %q, want the caller's %q", third, caller)
	}
	// A nil Handoff runs every turn in place.
	var none *Handoff
	var fourth string
	_ = none.Run(func() error {
		fourth = goroutineID()
		return nil
	})
	if fourth != caller {
		t.Errorf("a nil Handoff ran a turn on goroutine %q, want the caller's %q", fourth, caller)
	}
}

// BenchmarkDeepCallOnAFreshGoroutine is a turn's stack in miniature: a fresh goroutine goes
// ~10 KiB deep through 40 frames, as a turn does in its agent call. "grown" calls growStack
// first, as Handoff does for a turn it runs in place; "as-is" leaves the growing to
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
