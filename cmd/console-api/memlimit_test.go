package main

import (
	"testing"

	"github.com/a2a-connector/a2a-connector/internal/clitest"
)

// console-api follows its container's memory limit too (see the connector's test). The
// database is one nobody listens on: the limit is set before any connection.
func TestMemoryLimitFollowsTheContainer(t *testing.T) {
	t.Parallel()
	clitest.CheckMemoryLimit(t, clitest.Build(t, "console-api"), []string{"serve"}, []string{
		"DATABASE_URL=postgres://console:pw@" + closedAddr(t) + "/console?connect_timeout=1",
		"A2AC_ADMIN_TOKEN=memlimit-test-admin-token-0123456789",
		"A2AC_CONSOLE_ADDR=127.0.0.1:0",
	})
}
