package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/pgtest"
)

var testDB *pgtest.DB

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m, &testDB)) }

// openConsole opens the real server as `console-api serve` would, with the settings vars, on a
// port the kernel chooses (A2AC_CONSOLE_ADDR=127.0.0.1:0 unless vars sets it: a port picked
// here and bound later could be taken meanwhile by another test's connection), and closes it
// when the test ends. When it returns, the server accepts requests at its Addr.
func openConsole(tb testing.TB, vars map[string]string, stderr io.Writer) *Main {
	tb.Helper()
	getenv := func(k string) string {
		if k == "A2AC_CONSOLE_ADDR" && vars[k] == "" {
			return "127.0.0.1:0"
		}
		return vars[k]
	}
	cfg, err := serveConfig(getenv)
	if err != nil {
		tb.Fatal(err)
	}
	m := newMain(cfg, getenv, stderr)
	if err := m.Open(context.WithoutCancel(tb.Context())); err != nil {
		tb.Fatalf("open the console API: %v", errors.Join(err, m.Close()))
	}
	tb.Cleanup(func() {
		if err := m.Close(); err != nil {
			tb.Errorf("console API close: %v", err)
		}
	})
	return m
}

func TestMissingSettingsStopWithOneLineEach(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	err := run(t.Context(), []string{"serve"}, func(string) string { return "" }, &stderr)
	if err == nil {
		t.Fatal("run without configuration succeeded")
	}
	for _, name := range []string{"DATABASE_URL", "A2AC_SECRET_KEY", "A2AC_ADMIN_TOKEN"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %s: %v", name, err)
		}
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != 3 {
		t.Errorf("error has %d lines, want 3: %v", n, err)
	}
	if err := run(t.Context(), []string{"frobnicate"}, func(string) string { return "" }, &stderr); err == nil {
		t.Error("unknown command accepted")
	}
}

// TestServeAndMigrate starts the real program: migrate (twice: idempotent), then serve on a
// free port until ctx is canceled, which must shut it down cleanly. DATABASE_URL carries pool
// settings, as docs/operations.md recommends and the chart's migration Job passes on: migrate
// must not send them to Postgres (make e2e-k8s found it refused with FATAL 42704).
func TestServeAndMigrate(t *testing.T) {
	t.Parallel()
	dbURL := testDB.EmptyDatabase(t)
	if strings.Contains(dbURL, "?") {
		dbURL += "&pool_max_conns=4"
	} else {
		dbURL += "?pool_max_conns=4"
	}
	vars := map[string]string{
		"DATABASE_URL":      dbURL,
		"A2AC_SECRET_KEY":   base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32)),
		"A2AC_ADMIN_TOKEN":  "admin-token-0123456789",
		"A2AC_CONSOLE_ADDR": "127.0.0.1:0", // the port is read from the log
		"A2AC_LOG_LEVEL":    "info",
	}
	getenv := func(k string) string { return vars[k] }
	var stderr bytes.Buffer
	for range 2 {
		if err := run(t.Context(), []string{"migrate"}, getenv, &stderr); err != nil {
			t.Fatalf("migrate: %v", err)
		}
	}

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	logs := &syncBuffer{}
	go func() { done <- run(ctx, []string{"serve"}, getenv, logs) }()
	var addr string
	for i := 0; addr == ""; i++ {
		addr = loggedAddr(logs.String(), "console api listening")
		if i > 1500 {
			cancel()
			t.Fatalf("console API never said it listened: %v\n%s", <-done, logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var ready bool
	for i := 0; i < 200 && !ready; i++ {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			ready = resp.StatusCode == http.StatusOK
			resp.Body.Close()
		}
		if !ready {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !ready {
		cancel()
		t.Fatalf("console API never became ready: %v", <-done)
	}
	resp, err := http.Post("http://"+addr+"/v1/tenants", "application/json", strings.NewReader(`{"name":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unauthenticated tenant creation = %d", resp.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v after shutdown", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// With Postgres unreachable the console is alive but not ready, and API calls answer 503
// problem+json rather than hanging.
func TestPostgresDownIsNotReady(t *testing.T) {
	t.Parallel()
	addr := openConsole(t, map[string]string{
		"DATABASE_URL":     "postgres://postgres@" + closedAddr(t) + "/none?sslmode=disable&connect_timeout=2",
		"A2AC_SECRET_KEY":  base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32)),
		"A2AC_ADMIN_TOKEN": "admin-token-0123456789",
		"A2AC_LOG_LEVEL":   "error",
	}, io.Discard).Addr()
	if resp, err := http.Get("http://" + addr + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz with Postgres down: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("readyz with Postgres down = %d, want 503", resp.StatusCode)
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/v1/agents", nil)
	req.Header.Set("Authorization", "Bearer a2ac_whatever")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("API with Postgres down = %d %s, want 503 problem+json", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// The real program wires the session router into the console: a test conversation on the live
// console-api goes through INPUT_REQUIRED to COMPLETED on the demo agent's held task, and ends.
func TestTestConversationOnTheLiveConsole(t *testing.T) {
	t.Parallel()
	s := startConsole(t)
	path := "/v1/agents/" + s.agentID + "/test"
	first := s.call(t, "POST", path, s.token, map[string]string{"text": "帮我算加法"}, http.StatusOK)
	sessionID, _ := first["sessionId"].(string)
	if first["outcome"] != "INPUT_REQUIRED" || sessionID == "" || first["holdExpiresAt"] == nil {
		t.Fatalf("first turn = %v", first)
	}
	second := s.call(t, "POST", path, s.token, map[string]string{"text": "3和5", "sessionId": sessionID}, http.StatusOK)
	if second["outcome"] != "COMPLETED" || second["continued"] != true || second["taskId"] != first["taskId"] {
		t.Fatalf("second turn = %v, want COMPLETED on task %v", second, first["taskId"])
	}
	s.call(t, "POST", path, s.token, map[string]string{"text": "帮我算加法", "sessionId": sessionID}, http.StatusOK)
	if end := s.call(t, "DELETE", path+"/"+sessionID, s.token, nil, http.StatusOK); end["released"] != true {
		t.Fatalf("end = %v, want released", end)
	}
}

// loggedAddr is the addr of the first JSON log line of log whose msg is msg, or "".
func loggedAddr(log, msg string) string {
	for _, line := range strings.Split(log, "\n") {
		var rec struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == msg {
			return rec.Addr
		}
	}
	return ""
}
