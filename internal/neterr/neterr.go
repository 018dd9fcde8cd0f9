// Package neterr classifies the errors of outbound calls made through internal/netguard — why a
// connection could not be made or broke — into one small set of kinds, so that the card fetch,
// the agent client's retries, the turn's outcome and the console's problems agree on what a
// TLS alert, a refused dial or a resolver that did not answer is.
//
// It reads errors only: it makes no calls, keeps no state, and knows nothing of HTTP statuses,
// A2A errors or contexts (whether the caller's own deadline or cancellation ended a call is the
// caller's to tell, before it asks here).
package neterr

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"

	"github.com/a2a-connector/a2a-connector/internal/agenttls"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
)

// Kind is what went wrong on the way to a remote host.
type Kind string

// The kinds, in the order Classify tests them: an error that matches two (a blocked address is
// also a dial error) gets the first.
const (
	// Other is an error of none of the kinds below (nil included).
	Other Kind = "other"
	// Blocked: the SSRF guard refused the address dialed (netguard.ErrBlockedAddress).
	Blocked Kind = "blocked_address"
	// NoSuchHost: the resolver answered that the name does not exist (NXDOMAIN): a typo.
	NoSuchHost Kind = "no_such_host"
	// DNS: the name could not be resolved for another reason: the resolver failed, timed out
	// or answered nothing usable. Nobody's typo, possibly transient.
	DNS Kind = "dns"
	// TLS: the TLS handshake failed: the certificate was not accepted (unknown authority, wrong
	// host, expired), the server does not speak TLS on that port, or either side sent an alert
	// (a protocol version or cipher suite in common with none, a client certificate required).
	TLS Kind = "tls"
	// Refused: the host answered the dial with a refusal (nothing listens on the port).
	Refused Kind = "refused"
	// Unreachable: no route to the host or its network.
	Unreachable Kind = "unreachable"
	// Reset: the connection was reset or aborted by the peer.
	Reset Kind = "reset"
	// Closed: the peer closed the connection before the response was complete.
	Closed Kind = "closed"
	// Timeout: a dial, TLS handshake, response header or read deadline passed (a context
	// deadline too: tell it apart first when it is the caller's).
	Timeout Kind = "timeout"
)

// Classify says which Kind err is. It looks through wrapping (url.Error, net.OpError, …).
func Classify(err error) Kind {
	var dnsErr *net.DNSError
	switch {
	case err == nil:
		return Other
	case errors.Is(err, netguard.ErrBlockedAddress):
		return Blocked
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return NoSuchHost
	case errors.As(err, &dnsErr):
		return DNS
	case isTLS(err), errors.Is(err, agenttls.ErrClosedAfterClientCert):
		return TLS
	case errors.Is(err, syscall.ECONNREFUSED):
		return Refused
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return Unreachable
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE):
		return Reset
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return Closed
	case timedOut(err):
		return Timeout
	}
	return Other
}

// timedOut reports whether any error in err's tree says it is a timeout. errors.As with a
// net.Error would stop at the first one, and *url.Error is one that asks only its direct
// cause: "tls handshake with …: context deadline exceeded" would not count.
func timedOut(err error) bool {
	for err != nil {
		if t, ok := err.(interface{ Timeout() bool }); ok && t.Timeout() {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if timedOut(e) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// isTLS reports a failed TLS handshake. A certificate the client refused is a
// *tls.CertificateVerificationError wrapping the x509 error (the bare x509 errors are matched
// too, for verifiers that return them as they are); a server that answers in plain text is a
// tls.RecordHeaderError, which net/http turns into http.ErrSchemeMismatch when the answer
// is HTTP; an alert the peer sent arrives as a *net.OpError whose Op is
// "remote error" (its alert type is unexported), and one of our side's as a tls.AlertError.
func isTLS(err error) bool {
	var (
		recordErr tls.RecordHeaderError
		alertErr  tls.AlertError
		opErr     *net.OpError
	)
	return certRefused(err) || errors.As(err, &recordErr) || errors.Is(err, http.ErrSchemeMismatch) || errors.As(err, &alertErr) ||
		(errors.As(err, &opErr) && opErr.Op == "remote error")
}

// certRefused reports a server certificate that the client did not accept.
func certRefused(err error) bool {
	var (
		verifyErr *tls.CertificateVerificationError
		unknownCA x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		certErr   x509.CertificateInvalidError
	)
	return errors.As(err, &verifyErr) || errors.As(err, &unknownCA) || errors.As(err, &hostErr) || errors.As(err, &certErr)
}

// certDetail says what was wrong with a server certificate the client refused, after a colon.
func certDetail(err error) string {
	var (
		unknownCA x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		certErr   x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &unknownCA):
		return ": certificate signed by unknown authority (it does not chain to a CA the connector trusts: " +
			"give the agent's CA bundle in tls.caPem, or check that the one given is the CA that signed it)"
	case errors.As(err, &hostErr):
		return ": it is not valid for the host name called"
	case errors.As(err, &certErr) && certErr.Reason == x509.Expired:
		return ": it has expired or is not valid yet"
	}
	return ""
}

// clientCertRefused reads the alert a server sent about our client certificate (mutual TLS):
// TLS 1.3 servers send it after our side of the handshake ended, so it arrives on the first
// read. "" when err is no such alert.
func clientCertRefused(err error) string {
	var opErr *net.OpError
	if !errors.As(err, &opErr) || opErr.Op != "remote error" || opErr.Err == nil {
		return ""
	}
	// The alert's type is unexported; its text is Go's fixed name of the alert.
	switch alert := opErr.Err.Error(); alert {
	case "tls: certificate required":
		return "the agent asked for a client certificate and none was sent (its card's mutual TLS needs credentials.mtls)"
	case "tls: bad certificate", "tls: unknown certificate authority", "tls: expired certificate",
		"tls: revoked certificate", "tls: unsupported certificate", "tls: unknown certificate", "tls: access denied":
		return "the agent refused our client certificate (" + alert + ")"
	}
	return ""
}

// BeforeConnect reports whether err ended the call before a connection existed — resolving the
// name, the SSRF guard's check, or dialing — so that nothing of the request was sent.
func BeforeConnect(err error) bool {
	var (
		dnsErr *net.DNSError
		opErr  *net.OpError
	)
	return errors.As(err, &dnsErr) || errors.Is(err, netguard.ErrBlockedAddress) ||
		(errors.As(err, &opErr) && opErr.Op == "dial")
}

// Reason says why a connection failed or broke, in words for a tenant: never the transport's
// own text, which may name the resolver's address or the connector's own (the log keeps it).
func Reason(err error) string {
	switch Classify(err) {
	case Blocked:
		return "its address is one the connector may not call"
	case NoSuchHost:
		return "its host name does not resolve"
	case DNS:
		return "its host name could not be resolved"
	case TLS:
		var recordErr tls.RecordHeaderError
		switch {
		case errors.As(err, &recordErr), errors.Is(err, http.ErrSchemeMismatch):
			return "it does not speak TLS on that port"
		case certRefused(err):
			return "its TLS certificate was not accepted" + certDetail(err)
		}
		if why := clientCertRefused(err); why != "" {
			return why
		}
		if errors.Is(err, agenttls.ErrClosedAfterClientCert) {
			return "the agent closed the connection right after the TLS handshake, before answering: it most likely refused our client certificate"
		}
		return "the TLS handshake failed"
	case Refused:
		return "the connection was refused"
	case Unreachable:
		return "no route to its host"
	case Reset:
		return "the connection was reset"
	case Closed:
		return "it closed the connection"
	case Timeout:
		return "the connection timed out"
	}
	return "the connection failed"
}
