package a2aclient

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"sync/atomic"

	"google.golang.org/grpc/credentials"

	"github.com/a2a-connector/a2a-connector/internal/agenttls"
)

// handshakeRecorder is the TLS credentials of a gRPC connection that also tell record of a
// failed client handshake. grpc-go reports one only as an UNAVAILABLE status whose text holds
// the cause; kept like a dial error (grpcConn.dialErr), the cause stays a typed error, so that a
// certificate the connector refused (an agent behind a private CA without A2AC_AGENT_CA_FILE)
// reads as such to the caller (internal/neterr) instead of "the connection failed".
type handshakeRecorder struct {
	credentials.TransportCredentials
	record func(error)
	// after records a refusal after the handshake (nil once the agent sent a byte).
	after func(error)
	// clientCert: the configuration holds a client certificate (mutual TLS).
	clientCert bool
}

func (h handshakeRecorder) ClientHandshake(ctx context.Context, authority string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	c, info, err := h.TransportCredentials.ClientHandshake(ctx, authority, conn)
	if err != nil {
		h.record(err)
		return c, info, err
	}
	ar := &alertRecorder{Conn: c, record: h.after}
	if ti, ok := info.(credentials.TLSInfo); ok {
		ar.sentCert = h.clientCert && ti.State.Version == tls.VersionTLS13
	}
	return ar, info, nil
}

// alertRecorder records a TLS alert that arrives on a read of an established connection: in
// TLS 1.3 a server checks our client certificate after our side of the handshake ended, so
// its refusal ("remote error: tls: bad certificate", "certificate required") comes with the
// first read, which grpc-go reports only as UNAVAILABLE text.
//
// When the alert itself is lost (the server reset the connection our first write crossed), a
// close or reset before the server's first byte, after a TLS 1.3 handshake in which we sent a
// client certificate, is recorded as agenttls.ErrClosedAfterClientCert.
type alertRecorder struct {
	net.Conn
	record   func(error)
	sentCert bool
	readAny  atomic.Bool // set by the reader goroutine, read by the writers too
}

// Read records a refusal, or nil at the agent's first byte.
func (a *alertRecorder) Read(p []byte) (int, error) {
	n, err := a.Conn.Read(p)
	if n > 0 && !a.readAny.Load() {
		a.readAny.Store(true)
		a.record(nil)
	}
	if err != nil {
		switch opErr, ok := errors.AsType[*net.OpError](err); {
		case ok && opErr.Op == "remote error":
			a.record(err)
		default:
			if werr := agenttls.ClosedAfterClientCert(err, a.sentCert, a.readAny.Load()); werr != err {
				a.record(werr)
			}
		}
	}
	return n, err
}

// Write records a reset or broken pipe on writing alike: the same crossing, seen by grpc-go's
// writer first ("write: broken pipe"), which then fails the call before any read.
func (a *alertRecorder) Write(p []byte) (int, error) {
	n, err := a.Conn.Write(p)
	if err != nil {
		if werr := agenttls.ClosedAfterClientCert(err, a.sentCert, a.readAny.Load()); werr != err {
			a.record(werr)
		}
	}
	return n, err
}

func (h handshakeRecorder) Clone() credentials.TransportCredentials {
	return handshakeRecorder{TransportCredentials: h.TransportCredentials.Clone(), record: h.record, after: h.after, clientCert: h.clientCert}
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
