package main

import (
	"testing"

	"github.com/a2a-connector/a2a-connector/internal/clitest"
)

// The connector runs in a container whose memory limit is a cgroup's: the Go runtime's soft
// limit must follow it (90 %), or a replica under 10,000 open streams grows its heap past the
// chart's 512 MiB and the kernel kills it (measured: docs/performance.md). The database is one
// nobody listens on: the limit is set before any connection.
func TestMemoryLimitFollowsTheContainer(t *testing.T) {
	t.Parallel()
	clitest.CheckMemoryLimit(t, clitest.Build(t, "connector"), []string{"serve"}, []string{
		"DATABASE_URL=postgres://connector:pw@" + closedAddr(t) + "/connector?connect_timeout=1",
		"A2AC_GRPC_ADDR=127.0.0.1:0",
	})
}
