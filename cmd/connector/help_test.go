package main

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/a2a-connector/a2a-connector/internal/clitest"
	"github.com/a2a-connector/a2a-connector/internal/telemetry"
)

// TestHelp builds the real binary and runs it as a user would: every spelling of help prints the
// usage and exits 0; a wrong flag still exits 1. The environment is empty, so a help flag that
// fell through to serving would fail on the missing settings instead.
func TestHelp(t *testing.T) {
	t.Parallel()
	clitest.Run(t, clitest.Build(t, "connector"), []clitest.Case{
		{Name: "-h", Args: []string{"-h"}, Want: "usage: connector"},
		{Name: "-help", Args: []string{"-help"}, Want: "usage: connector"},
		{Name: "--help", Args: []string{"--help"}, Want: "-grpc-addr"},
		{Name: "serve -h", Args: []string{"serve", "-h"}, Want: "usage: connector"},
		{Name: "chat -h", Args: []string{"chat", "-h"}, Want: "-tenant"},
		{Name: "chat --help", Args: []string{"chat", "--help"}, Want: "-tenant"},
		{Name: "chat -h voice flags", Args: []string{"chat", "-h"}, Want: "BCP 47 locale of the channel"},
		{Name: "chat -locale without -channel", Args: []string{"chat", "-tenant", "t1", "-locale", "zh-CN"}, WantCode: 1, Want: "-locale needs -channel"},
		{Name: "unknown flag", Args: []string{"-no-such-flag"}, WantCode: 1, Want: "flag provided but not defined"},
	})
}

// connector chat is a client: its output is the chat, without the server's log lines (the GC
// tuner's among them). With stdin closed it prints the session's header and leaves.
func TestChatPrintsOnlyTheChat(t *testing.T) {
	t.Parallel()
	clitest.Run(t, clitest.Build(t, "connector"), []clitest.Case{
		{Name: "chat", Args: []string{"chat", "-tenant", "t1", "-addr", "127.0.0.1:1"}, WantStdout: "session chat-", NoLogs: true},
	})
}

// A deployment made for an older release may still set A2AC_GRPC_TRANSPORT, which is removed:
// serve starts anyway and says so once, as a warning.
func TestRemovedSettingIsIgnoredWithAWarning(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"DATABASE_URL": "postgres://unused", "A2AC_GRPC_TRANSPORT": "grpc-go",
		"A2AC_SECRET_KEY": base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))}
	var stderr bytes.Buffer
	if _, err := newMain(nil, func(k string) string { return vars[k] }, &stderr, telemetry.Options{}); err != nil {
		t.Fatalf("serve refused a removed setting: %v", err)
	}
	if n := strings.Count(stderr.String(), `"level":"WARN","msg":"A2AC_GRPC_TRANSPORT is ignored: removed`); n != 1 {
		t.Errorf("%d warnings naming the removed setting, want 1; logged:\n%s", n, stderr.String())
	}
}
