package fixtureagent

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// waitAcked waits, at most max, until every byte written to conn was sent and acknowledged by the
// peer, polling the kernel's TCP_INFO.
func waitAcked(conn *net.TCPConn, max time.Duration) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return
	}
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) {
		var info *unix.TCPInfo
		var infoErr error
		if err := raw.Control(func(fd uintptr) { info, infoErr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil || infoErr != nil {
			return
		}
		if info.Unacked == 0 && info.Notsent_bytes == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
