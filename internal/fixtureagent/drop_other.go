//go:build !linux

package fixtureagent

import (
	"net"
	"time"
)

// waitAcked cannot ask the kernel here; on loopback the data written before is normally
// delivered before the reset.
func waitAcked(*net.TCPConn, time.Duration) {}
