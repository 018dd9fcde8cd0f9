package cardfetch

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Explain says what went wrong in the tenant's terms, as one or two sentences for the console:
// which URL, what kind of failure, and what to change when that is clear. Unlike Error it never
// includes a transport error's text (resolver and local addresses, parser wording, Go package
// names), and like Error it never shows a URL's userinfo.
func (e *FetchError) Explain() string {
	where := fmt.Sprintf("%q", RedactURL(e.URL))
	var msg string
	switch e.Kind {
	case KindInvalidURL:
		why := urlUnparsable
		var p urlProblem
		if errors.As(e.Err, &p) {
			why = p
		}
		msg = "The card URL cannot be used: " + string(why) + "."
	case KindInsecureURL:
		msg = "The card URL uses plain http; the platform fetches cards over https only."
	case KindDNS:
		msg = fmt.Sprintf("The host name %q could not be resolved (no such host, or DNS did not answer).", hostname(e.URL))
	case KindRefused:
		msg = where + " refused the connection: nothing is listening at that address and port."
	case KindTimeout:
		msg = where + " did not send the card in time."
	case KindBlockedAddress:
		msg = "The card URL resolves to a private, loopback or otherwise reserved network address; the platform only calls public addresses."
	case KindTLS:
		msg = "The secure connection to " + where + " failed: " + tlsReason(e.Err) + "."
	case KindHTTPStatus:
		msg = fmt.Sprintf("%s answered HTTP %d instead of the card.", where, e.StatusCode)
	case KindNotJSON:
		msg = where + " answered, but not with a JSON agent card"
		if errors.Is(e.Err, errNotJSON) {
			// Our own words, with the Content-Type the server sent quoted.
			msg += " (" + strings.TrimPrefix(e.Err.Error(), errNotJSON.Error()+": ") + ")"
		}
		msg += "."
	case KindTooLarge:
		msg = where + " answered with a card that is too large"
		if errors.Is(e.Err, errTooLarge) {
			msg += " (" + strings.TrimPrefix(e.Err.Error(), errTooLarge.Error()+": ") + ")"
		}
		msg += "."
	case KindRedirects:
		msg = where + " redirected too many times."
	case KindCanceled:
		msg = "The fetch of " + where + " was canceled before it finished."
	default:
		msg = "The connection to " + where + " failed before the card was read."
	}
	if len(e.Tried) > 1 {
		msg += " Tried: " + strings.Join(redactAll(e.Tried), ", ") + "."
	}
	return msg
}

// hostname is the host of a URL without port and userinfo, or the redacted URL when it does
// not parse.
func hostname(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return RedactURL(raw)
	}
	return u.Hostname()
}

// tlsReason names a TLS failure the way a tenant can fix it.
func tlsReason(err error) string {
	var (
		unknownCA x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		certErr   x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &unknownCA):
		return "its certificate is not signed by an authority the platform trusts"
	case errors.As(err, &hostErr):
		return "its certificate is not valid for this host name"
	case errors.As(err, &certErr) && certErr.Reason == x509.Expired:
		return "its certificate has expired or is not valid yet"
	case errors.As(err, &certErr):
		return "its certificate is not valid"
	}
	return "the TLS handshake did not complete"
}
