package main

import (
	"testing"

	"github.com/a2a-connector/a2a-connector/internal/clitest"
)

// TestHelp builds the real binary and runs it as a user would: every spelling of help prints the
// usage and exits 0; a wrong flag still exits 1. The environment is empty, so a help flag that
// fell through to serving would fail on the missing settings instead.
func TestHelp(t *testing.T) {
	t.Parallel()
	clitest.Run(t, clitest.Build(t, "console-api"), []clitest.Case{
		{Name: "-h", Args: []string{"-h"}, Want: "usage: console-api"},
		{Name: "-help", Args: []string{"-help"}, Want: "usage: console-api"},
		{Name: "--help", Args: []string{"--help"}, Want: "-console-addr"},
		{Name: "serve -h", Args: []string{"serve", "-h"}, Want: "usage: console-api"},
		{Name: "migrate -h", Args: []string{"migrate", "-h"}, Want: "usage: console-api"},
		{Name: "unknown flag", Args: []string{"-no-such-flag"}, WantCode: 1, Want: "flag provided but not defined"},
	})
}
