package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/pgtest"
)

// readyBound is how long after Postgres accepts connections again /readyz may take to say
// 200. Measured: milliseconds; the bound is for a busy machine, not a target.
const readyBound = 30 * time.Second

// readiness follows Postgres, with no restart of the console: 200, then 503 from the moment
// Postgres is down (stopped or crashed, in a private cluster the test owns), then 200 again
// once it is back.
func TestReadinessFollowsPostgres(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewCluster(t)
	db := pg.NewDB(t)
	addr := openConsole(t, map[string]string{
		"DATABASE_URL":     db.URL,
		"A2AC_SECRET_KEY":  base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32)),
		"A2AC_ADMIN_TOKEN": "admin-token-0123456789",
		"A2AC_LOG_LEVEL":   "error",
	}, io.Discard).Addr()

	client := &http.Client{Timeout: 10 * time.Second} // /readyz gives Postgres 2 s
	readyz := func() int {
		t.Helper()
		resp, err := client.Get("http://" + addr + "/readyz")
		if err != nil {
			return 0 // not listening yet
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// untilReady polls /readyz until 200; every other answer must be want.
	untilReady := func(want int, what string) time.Duration {
		t.Helper()
		start := time.Now()
		for {
			code := readyz()
			if code == http.StatusOK {
				return time.Since(start)
			}
			if code != want {
				t.Fatalf("readyz %s = %d; want %d until it is 200", what, code, want)
			}
			if time.Since(start) > readyBound {
				t.Fatalf("readyz %s still %d after %s", what, code, readyBound)
			}
			time.Sleep(20 * time.Millisecond) // a poll interval, not a verdict
		}
	}
	untilReady(0, "at start")

	for _, tc := range []struct {
		name string
		down func(context.Context) error
	}{
		{name: "stopped", down: pg.Stop},
		{name: "crashed", down: pg.Crash},
	} {
		if err := tc.down(t.Context()); err != nil {
			t.Fatal(err)
		}
		// Postgres is gone before down returns: the very next answer must say so.
		for range 3 {
			if code := readyz(); code != http.StatusServiceUnavailable {
				t.Fatalf("readyz with Postgres %s = %d; want 503", tc.name, code)
			}
		}
		if err := pg.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Logf("readyz 200 again %s after Postgres (%s) accepted connections", untilReady(http.StatusServiceUnavailable, "after restart"), tc.name)
	}
}
