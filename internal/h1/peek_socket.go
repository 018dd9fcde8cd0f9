//go:build linux || darwin || freebsd

package h1

import (
	"net"
	"syscall"
)

// peeker looks at a socket's receive queue without blocking and without taking anything from
// it: recv(2) with MSG_PEEK|MSG_DONTWAIT. It is how an idle connection is checked before it is
// reused and by the pool's sweep. Its fields are reused from call to call (the RawConn and the
// method value are made once per connection), so a check allocates nothing.
type peeker struct {
	rc  syscall.RawConn
	fn  func(fd uintptr) bool
	buf [12]byte // "HTTP/1.1 408"
	n   int
	err error
}

// init prepares p for nc, the TCP connection under any TLS. A connection that is not a socket
// (none in production: netguard dials TCP) is never checked.
func (p *peeker) init(nc net.Conn) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	p.rc, p.fn = rc, p.recv
}

func (p *peeker) recv(fd uintptr) bool {
	for {
		p.n, _, p.err = syscall.Recvfrom(int(fd), p.buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		if p.err != syscall.EINTR {
			return true // done either way: never wait for the socket to become readable
		}
	}
}

// peek reports what the peer left on the connection: pending bytes (the first of them), or
// closed when it sent its FIN or reset the connection. Neither means the queue was empty.
func (p *peeker) peek() (pending []byte, closed bool) {
	if p.rc == nil {
		return nil, false
	}
	if err := p.rc.Read(p.fn); err != nil {
		return nil, true // the descriptor is closed or its deadline spoiled: unusable
	}
	switch {
	case p.err == syscall.EAGAIN || p.err == syscall.EWOULDBLOCK:
		return nil, false
	case p.err != nil, p.n == 0: // ECONNRESET and the like; 0 bytes is end of stream
		return nil, true
	}
	return p.buf[:p.n], false
}
