package fixtureagent

import (
	"net"
	"net/http"
	"time"
)

// ackWait bounds how long a reset waits for the client to have received what was sent: long
// enough for any loaded machine, short enough not to matter when a platform cannot tell.
const ackWait = 5 * time.Second

// drop ends the response the hard way, in the middle of its chunked body: the connection is taken
// from net/http (so no terminating chunk is written) and closed. With reset, SO_LINGER is set to
// 0 first, so the close sends a TCP RST instead of a FIN, as a crashed process or a load balancer
// cutting idle connections does.
//
// Everything written before is flushed, and before a reset the agent waits until the client's
// kernel acknowledged it: a reset discards data still queued for sending, and the client must
// see the events that came before the break.
func (c *call) drop(reset bool) {
	c.flush()
	hj, ok := c.w.(http.Hijacker)
	if !ok {
		panic("fixtureagent: the response writer cannot be hijacked")
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		panic("fixtureagent: hijack: " + err.Error())
	}
	_ = rw.Flush()
	if tc, ok := conn.(*net.TCPConn); ok && reset {
		waitAcked(tc, ackWait)
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}
