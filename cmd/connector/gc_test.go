package main

import (
	"bytes"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/bytedance/gopkg/util/gctuner"
)

func gogc() int64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// While the heap is small (as in this test process) the GC may wait longer: after a collection
// GOGC is above 100, up to 500. GOGC set by the operator is left alone. (Not parallel: GOGC and
// the tuner are the process's.)
func TestTuneGC(t *testing.T) {
	t.Run("the operator's GOGC wins", func(t *testing.T) {
		t.Setenv("GOGC", "100")
		before := gogc() // the runtime read GOGC when the process started
		var logs bytes.Buffer
		tuneGC(slog.New(slog.NewTextHandler(&logs, nil)))
		if !strings.Contains(logs.String(), "GOGC is set: the GC is not tuned") {
			t.Errorf("log = %q; want the GC left alone", logs.String())
		}
		runtime.GC()
		if got := gogc(); got != before {
			t.Errorf("GOGC after a collection = %d; want it left at %d", got, before)
		}
	})
	t.Run("small heap", func(t *testing.T) {
		t.Setenv("GOGC", "") // restored when the test ends
		os.Unsetenv("GOGC")
		before := debug.SetGCPercent(100) // the default, whatever this process started with
		t.Cleanup(func() {
			gctuner.Tuning(0) // stops the tuner
			debug.SetGCPercent(before)
		})
		var logs bytes.Buffer
		tuneGC(slog.New(slog.NewTextHandler(&logs, nil)))
		if !strings.Contains(logs.String(), "GOGC follows the heap") {
			t.Errorf("log = %q; want the tuner on", logs.String())
		}
		// The tuner runs in a finalizer after a collection; 10 s is thousands of collections.
		for deadline := time.Now().Add(10 * time.Second); gogc() <= 100; {
			if time.Now().After(deadline) {
				t.Fatalf("GOGC after collections with a heap of a few MiB = %d; want above 100", gogc())
			}
			runtime.GC()
			time.Sleep(time.Millisecond)
		}
		if got := gogc(); got > 500 {
			t.Errorf("GOGC = %d; want at most 500", got)
		}
	})
}
