// Package credential holds what a registration stores to call an agent that wants more than an
// API key: a bearer token, an OAuth 2.0 client (RFC 6749 §4.4, client credentials), a Google
// service account key or a client certificate (mutual TLS: internal/agenttls checks it and
// makes the handshake's configuration), and turns the others into the Authorization header of
// agent calls, fetching and caching access tokens (Tokens).
//
// A credential is only ever plaintext between the secret box and the request header: it is
// sealed (internal/secret) before it reaches the store, and its values never appear in an
// error, a log line or a trace attribute here. It refuses flows that need a user present
// (authorization code, device code): the connector calls agents on a caller's behalf, with no
// browser to send anyone to.
package credential

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2/google"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/agenttls"
)

// GoogleScope is the scope a service account's access tokens are asked for: Google's agent
// platforms (Vertex AI Agent Engine, Gemini Enterprise) accept cloud-platform tokens.
const GoogleScope = "https://www.googleapis.com/auth/cloud-platform"

// OAuth2Client is an OAuth 2.0 client registered at the agent's authorization server. Scopes
// and TokenURL, when set, override what the agent's card says.
type OAuth2Client struct {
	ClientID     string   `json:"clientId"`
	ClientSecret string   `json:"clientSecret"`
	Scopes       []string `json:"scopes,omitempty"`
	TokenURL     string   `json:"tokenUrl,omitempty"`
}

// ClientCert is a client certificate for mutual TLS: the certificate (its chain may follow)
// and its unencrypted private key, PEM.
type ClientCert struct {
	CertificatePEM string `json:"certificatePem"`
	PrivateKeyPEM  string `json:"privateKeyPem"`
}

// Credential is one credential of a registration: Kind says which field holds it.
type Credential struct {
	Kind string // connector.CredentialKind*
	// Secret is the API key, the bearer token or the service account's JSON key file.
	Secret string
	OAuth2 *OAuth2Client
	AWS    *AWSKey
	MTLS   *ClientCert
}

// String never shows the secret: a Credential printed by mistake says only its kind.
func (c Credential) String() string { return "credential(" + c.Kind + ")" }

// GoString is String, for %#v.
func (c Credential) GoString() string { return c.String() }

// Plaintext is what the secret box seals for c: the secret itself, or the OAuth 2.0 client as
// JSON. Parse reads it back given the kind stored beside it.
func (c Credential) Plaintext() ([]byte, error) {
	switch c.Kind {
	case connector.CredentialKindAPIKey, connector.CredentialKindBearerToken, connector.CredentialKindGoogleServiceAccount:
		return []byte(c.Secret), nil
	case connector.CredentialKindOAuth2:
		if c.OAuth2 == nil {
			return nil, errors.New("credential: oauth2 without a client")
		}
		b, err := json.Marshal(c.OAuth2)
		if err != nil {
			return nil, fmt.Errorf("credential: encode oauth2 client: %w", err)
		}
		return b, nil
	case connector.CredentialKindAWSSigV4:
		if c.AWS == nil {
			return nil, errors.New("credential: awsSigV4 without a key")
		}
		b, err := json.Marshal(c.AWS)
		if err != nil {
			return nil, fmt.Errorf("credential: encode aws key: %w", err)
		}
		return b, nil
	case connector.CredentialKindMTLS:
		if c.MTLS == nil {
			return nil, errors.New("credential: mtls without a certificate")
		}
		b, err := json.Marshal(c.MTLS)
		if err != nil {
			return nil, fmt.Errorf("credential: encode mtls: %w", err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("credential: unknown kind %q", c.Kind)
}

// Parse reads a credential of the given kind ("" is an API key, as stored before kinds existed)
// from its plaintext. Errors never quote the plaintext.
func Parse(kind string, plaintext []byte) (Credential, error) {
	if kind == "" {
		kind = connector.CredentialKindAPIKey
	}
	c := Credential{Kind: kind}
	switch kind {
	case connector.CredentialKindAPIKey, connector.CredentialKindBearerToken, connector.CredentialKindGoogleServiceAccount:
		c.Secret = string(plaintext)
	case connector.CredentialKindOAuth2:
		var o OAuth2Client
		if err := json.Unmarshal(plaintext, &o); err != nil {
			return Credential{}, errors.New("credential: stored oauth2 client is not JSON")
		}
		c.OAuth2 = &o
	case connector.CredentialKindAWSSigV4:
		var k AWSKey
		if err := json.Unmarshal(plaintext, &k); err != nil {
			return Credential{}, errors.New("credential: stored aws key is not JSON")
		}
		c.AWS = &k
	case connector.CredentialKindMTLS:
		var m ClientCert
		if err := json.Unmarshal(plaintext, &m); err != nil {
			return Credential{}, errors.New("credential: stored mtls certificate is not JSON")
		}
		c.MTLS = &m
	default:
		return Credential{}, fmt.Errorf("credential: unknown kind %q", kind)
	}
	return c, nil
}

// FieldError is a credential a tenant sent that cannot work; Field is its JSON path
// ("credentials.oauth2.tokenUrl") and Reason a sentence that does not quote the secret.
type FieldError struct {
	Field, Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// Check reports the first reason c cannot work, as a *FieldError under the JSON member
// "credentials". It does no I/O: whether the token endpoint takes the client is for the
// agent check to find out.
func (c Credential) Check() error {
	switch c.Kind {
	case connector.CredentialKindAPIKey, connector.CredentialKindBearerToken:
		return nil // the console checks length and header-safe characters
	case connector.CredentialKindOAuth2:
		o := c.OAuth2
		switch {
		case o == nil:
			return &FieldError{"credentials.oauth2", "is required"}
		case strings.TrimSpace(o.ClientID) == "":
			return &FieldError{"credentials.oauth2.clientId", "is required"}
		case o.ClientSecret == "":
			return &FieldError{"credentials.oauth2.clientSecret", "is required"}
		case o.TokenURL != "" && !httpURL(o.TokenURL):
			return &FieldError{"credentials.oauth2.tokenUrl", "must be an absolute http(s) URL"}
		}
		for _, s := range o.Scopes {
			if s == "" || strings.ContainsAny(s, " \t\r\n\"\\") {
				return &FieldError{"credentials.oauth2.scopes", "each scope must be a non-empty token without spaces or quotes"}
			}
		}
		return nil
	case connector.CredentialKindGoogleServiceAccount:
		cfg, err := google.JWTConfigFromJSON([]byte(c.Secret), GoogleScope)
		if err != nil {
			// The library's words could quote the key file's type; say it our way.
			return &FieldError{"credentials.googleServiceAccount", `must be a service account's JSON key file ("type": "service_account")`}
		}
		if cfg.Email == "" || len(cfg.PrivateKey) == 0 {
			return &FieldError{"credentials.googleServiceAccount", "lacks client_email or private_key"}
		}
		if cfg.TokenURL != "" && !httpURL(cfg.TokenURL) {
			return &FieldError{"credentials.googleServiceAccount", "token_uri must be an absolute http(s) URL"}
		}
		return nil
	case connector.CredentialKindAWSSigV4:
		return c.AWS.check()
	case connector.CredentialKindMTLS:
		m := c.MTLS
		switch {
		case m == nil:
			return &FieldError{"credentials.mtls", "is required"}
		case strings.TrimSpace(m.CertificatePEM) == "":
			return &FieldError{"credentials.mtls.certificatePem", "is required"}
		case strings.TrimSpace(m.PrivateKeyPEM) == "":
			return &FieldError{"credentials.mtls.privateKeyPem", "is required"}
		}
		// Checked against the wall clock: a certificate expired at registration can never work.
		if _, err := agenttls.CheckClientCert(m.CertificatePEM, m.PrivateKeyPEM, time.Now()); err != nil {
			if ce, ok := errors.AsType[*agenttls.CertError](err); ok {
				return &FieldError{"credentials.mtls." + ce.Field, ce.Reason}
			}
			return &FieldError{"credentials.mtls", err.Error()}
		}
		return nil
	}
	return &FieldError{"credentials", fmt.Sprintf("unknown kind %q", c.Kind)}
}

func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}
