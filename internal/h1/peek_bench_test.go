package h1

import (
	"net"
	"testing"
)

// BenchmarkIdleCheck is what h1 adds to each reuse of a pooled connection: one look at the
// socket's receive queue (recv with MSG_PEEK|MSG_DONTWAIT), here on an open, quiet loopback
// connection.
func BenchmarkIdleCheck(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		accepted <- c
	}()
	nc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	if sc := <-accepted; sc != nil {
		defer sc.Close()
	}
	c := &conn{nc: nc}
	c.peeker.init(nc)
	b.ReportAllocs()
	for b.Loop() {
		if v := c.idleCheck(); v != idleClean {
			b.Fatalf("verdict %d on a quiet connection", v)
		}
	}
}
