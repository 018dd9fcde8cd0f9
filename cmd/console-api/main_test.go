package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/pgtest"
)

var testDB *pgtest.DB

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m, &testDB)) }

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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	vars := map[string]string{
		"DATABASE_URL":      dbURL,
		"A2AC_SECRET_KEY":   base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32)),
		"A2AC_ADMIN_TOKEN":  "admin-token-0123456789",
		"A2AC_CONSOLE_ADDR": addr,
		"A2AC_LOG_LEVEL":    "error",
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
	go func() { done <- run(ctx, []string{"serve"}, getenv, &bytes.Buffer{}) }()
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	vars := map[string]string{
		"DATABASE_URL":      "postgres://postgres@" + dead + "/none?sslmode=disable&connect_timeout=2",
		"A2AC_SECRET_KEY":   base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32)),
		"A2AC_ADMIN_TOKEN":  "admin-token-0123456789",
		"A2AC_CONSOLE_ADDR": addr,
		"A2AC_LOG_LEVEL":    "error",
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve"}, func(k string) string { return vars[k] }, &bytes.Buffer{}) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	var live bool
	for i := 0; i < 200 && !live; i++ {
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			live = resp.StatusCode == http.StatusOK
			resp.Body.Close()
		}
		if !live {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !live {
		t.Fatal("console API never became live")
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
