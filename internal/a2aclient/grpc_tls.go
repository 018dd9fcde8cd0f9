package a2aclient

import (
	"context"
	"net"

	"google.golang.org/grpc/credentials"
)

// handshakeRecorder is the TLS credentials of a gRPC connection that also tell record of a
// failed client handshake. grpc-go reports one only as an UNAVAILABLE status whose text holds
// the cause; kept like a dial error (grpcConn.dialErr), the cause stays a typed error, so that a
// certificate the connector refused (an agent behind a private CA without A2AC_AGENT_CA_FILE)
// reads as such to the caller (internal/neterr) instead of "the connection failed".
type handshakeRecorder struct {
	credentials.TransportCredentials
	record func(error)
}

func (h handshakeRecorder) ClientHandshake(ctx context.Context, authority string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	c, info, err := h.TransportCredentials.ClientHandshake(ctx, authority, conn)
	if err != nil {
		h.record(err)
	}
	return c, info, err
}

func (h handshakeRecorder) Clone() credentials.TransportCredentials {
	return handshakeRecorder{TransportCredentials: h.TransportCredentials.Clone(), record: h.record}
}
