package telemetry

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
)

// writes records each Write the logger makes, as the pipe to the container runtime would see it.
type writes struct {
	mu  sync.Mutex
	all []string
}

func (w *writes) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all = append(w.all, string(p))
	return len(p), nil
}

func (w *writes) get() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.all...)
}

// msgs is the msg of each JSON line written, in order.
func msgs(t *testing.T, ws []string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(strings.TrimSuffix(strings.Join(ws, ""), "\n"), "\n") {
		if line == "" {
			continue
		}
		var r struct{ Msg string }
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, r.Msg)
	}
	return out
}

func TestBufferedLogger_holds_info_lines_until_flush_and_writes_them_together(t *testing.T) {
	t.Parallel()
	w := &writes{}
	log, flush := NewBufferedLogger(w, "info", time.Hour) // the timer never fires in the test
	log.Info("one")
	log.Info("two")
	log.Debug("below the level")
	if got := w.get(); len(got) != 0 {
		t.Fatalf("written before flush: %q", got)
	}
	if err := flush(); err != nil {
		t.Fatal(err)
	}
	got := w.get()
	if len(got) != 1 {
		t.Fatalf("%d writes, want the two lines in one: %q", len(got), got)
	}
	if m := msgs(t, got); strings.Join(m, ",") != "one,two" {
		t.Errorf("lines %q, want one, two", m)
	}
	if err := flush(); err != nil || len(w.get()) != 1 {
		t.Errorf("a flush with nothing held wrote again (err %v): %q", err, w.get())
	}
}

func TestBufferedLogger_writes_a_warning_at_once_after_the_lines_before_it(t *testing.T) {
	t.Parallel()
	w := &writes{}
	log, _ := NewBufferedLogger(w, "info", time.Hour)
	log.Info("before")
	log.With("k", "v").Warn("trouble") // a derived logger flushes too
	if m := msgs(t, w.get()); strings.Join(m, ",") != "before,trouble" {
		t.Errorf("written at once: %q, want before, trouble", m)
	}
	log.Info("after")
	log.Error("worse")
	if m := msgs(t, w.get()); strings.Join(m, ",") != "before,trouble,after,worse" {
		t.Errorf("written: %q, want before, trouble, after, worse", m)
	}
}

func TestBufferedLogger_writes_without_waiting_once_64KiB_are_held(t *testing.T) {
	t.Parallel()
	w := &writes{}
	log, _ := NewBufferedLogger(w, "info", time.Hour)
	big := strings.Repeat("x", 1000)
	n := 0
	for len(w.get()) == 0 {
		if n++; n > 100 {
			t.Fatal("nothing written after 100 lines of 1 KB")
		}
		log.Info("line", "pad", big)
	}
	if n < 60 {
		t.Errorf("written after %d lines of ~1 KB, want it held until 64 KiB", n)
	}
	if got := strings.Count(strings.Join(w.get(), ""), "\n"); got != n {
		t.Errorf("%d whole lines written, want all %d", got, n)
	}
}

func TestBufferedLogger_writes_held_lines_after_the_interval(t *testing.T) {
	t.Parallel()
	w := &writes{}
	log, _ := NewBufferedLogger(w, "info", 10*time.Millisecond)
	log.Info("first")
	deadline := time.Now().Add(10 * time.Second)
	for len(w.get()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the held line was not written within 10s of a 10ms interval")
		}
		time.Sleep(time.Millisecond)
	}
	// The timer re-arms for the next line.
	log.Info("second")
	for len(msgs(t, w.get())) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the second line was not written: %q", w.get())
		}
		time.Sleep(time.Millisecond)
	}
	if m := msgs(t, w.get()); strings.Join(m, ",") != "first,second" {
		t.Errorf("lines %q", m)
	}
}

func TestBufferedLogger_without_an_interval_writes_each_line_at_once(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log, flush := NewBufferedLogger(&buf, "info", 0)
	log.Info("now")
	if !strings.Contains(buf.String(), `"msg":"now"`) {
		t.Errorf("not written at once: %q", buf.String())
	}
	if err := flush(); err != nil {
		t.Error(err)
	}
}
