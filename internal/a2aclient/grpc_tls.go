package a2aclient

import (
	"context"
	"errors"
	"net"
	"strings"

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
		return c, info, err
	}
	return alertRecorder{Conn: c, record: h.record}, info, nil
}

// alertRecorder records a TLS alert that arrives on a read of an established connection: in
// TLS 1.3 a server checks our client certificate after our side of the handshake ended, so
// its refusal ("remote error: tls: bad certificate", "certificate required") comes with the
// first read, which grpc-go reports only as UNAVAILABLE text.
type alertRecorder struct {
	net.Conn
	record func(error)
}

func (a alertRecorder) Read(p []byte) (int, error) {
	n, err := a.Conn.Read(p)
	if err != nil {
		if opErr, ok := errors.AsType[*net.OpError](err); ok && opErr.Op == "remote error" {
			a.record(err)
		}
	}
	return n, err
}

func (h handshakeRecorder) Clone() credentials.TransportCredentials {
	return handshakeRecorder{TransportCredentials: h.TransportCredentials.Clone(), record: h.record}
}

// tlsAlertIn reads the TLS alert a gRPC status text quotes ("… remote error: tls: bad
// certificate\""), as the *net.OpError a read returns it in; nil when it quotes none.
func tlsAlertIn(msg string) error {
	_, rest, ok := strings.Cut(msg, "remote error: tls: ")
	if !ok {
		return nil
	}
	alert, _, _ := strings.Cut(rest, `"`)
	return &net.OpError{Op: "remote error", Err: errors.New("tls: " + strings.TrimSpace(alert))}
}
