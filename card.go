package connector

import (
	"net/url"
	"strings"
)

// CanonicalCardURL spells one card URL one way, so that "HTTPS://Agent.example.com:443/" and
// "https://agent.example.com" are the same registration, not two agents: scheme and host
// lower-cased, default port and fragment dropped, a bare "/" path removed. Anything unparsable
// is returned as it is.
func CanonicalCardURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	canonicalize(u)
	return u.String()
}

func canonicalize(u *url.URL) {
	u.Scheme = strings.ToLower(u.Scheme)
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if (u.Scheme == "https" && port == "443") || (u.Scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	u.Host = host
	u.Fragment, u.RawFragment = "", ""
	if u.Path == "/" && u.RawQuery == "" {
		u.Path, u.RawPath = "", ""
	}
}

// Card signature statuses (CardSignature.Status).
const (
	SignatureVerified     = "verified"
	SignatureUnsigned     = "unsigned"
	SignatureUnverifiable = "unverifiable"
	SignatureInvalid      = "invalid"
)

// CardSignature is the outcome of verifying a card's JWS signatures: the status and the key id
// ("kid") of the key that verified it, or of the one that was sought.
type CardSignature struct {
	Status string `json:"status"`
	KeyID  string `json:"keyId,omitempty"`
}

// Severity says whether a Problem blocks registration.
type Severity string

const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Problem is one finding of card validation, addressed by a JSON path into the card
// ("skills[2].id", "defaultInputModes") and a stable machine code ("required", "min_items",
// "unsupported_mode", ...). Message is a sentence a tenant can act on.
type Problem struct {
	Path     string   `json:"path"`
	Code     string   `json:"code"`
	Message  string   `json:"message"`
	Severity Severity `json:"severity"`
}

// HasErrors reports whether any problem has error severity.
func HasErrors(problems []Problem) bool {
	for _, p := range problems {
		if p.Severity == SeverityError {
			return true
		}
	}
	return false
}
