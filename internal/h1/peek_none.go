//go:build !(linux || darwin || freebsd)

package h1

import "net"

// peeker is a no-op where recv(2) with MSG_PEEK|MSG_DONTWAIT is not available to this package:
// idle connections are reused unchecked, as net/http's are between its read loop's wake-ups,
// and a request that meets a closed one is sent again under RoundTrip's rules.
type peeker struct{}

func (*peeker) init(net.Conn) {}

func (*peeker) peek() (pending []byte, closed bool) { return nil, false }
