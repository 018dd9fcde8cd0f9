package main

import (
	"testing"

	"github.com/a2a-connector/a2a-connector/internal/clitest"
)

// TestHelp builds the real binary and runs it as a user would: every spelling of help prints the
// usage and exits 0; a wrong flag still exits 1. The environment is empty and stdin closed.
func TestHelp(t *testing.T) {
	t.Parallel()
	clitest.Run(t, clitest.Build(t, "demo-agent"), []clitest.Case{
		{Name: "-h", Args: []string{"-h"}, Want: "-chunk-delay"},
		{Name: "-help", Args: []string{"-help"}, Want: "-chunk-delay"},
		{Name: "--help", Args: []string{"--help"}, Want: "-public-url"},
		{Name: "unknown flag", Args: []string{"-no-such-flag"}, WantCode: 1, Want: "flag provided but not defined"},
	})
}
