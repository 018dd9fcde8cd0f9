package console

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/agenttls"
	"github.com/a2a-connector/a2a-connector/internal/credential"
)

// maxServiceAccountBytes bounds a Google service account key file (they are about 2.3 KB).
const maxServiceAccountBytes = 16 << 10

// credentialsJSON is the write-only `credentials` member of POST /v1/agents and PATCH
// /v1/agents/{id}: exactly one member. Nothing in any answer carries these values.
type credentialsJSON struct {
	APIKey      *string     `json:"apiKey"`
	BearerToken *string     `json:"bearerToken"`
	OAuth2      *oauth2JSON `json:"oauth2"`
	// GoogleServiceAccount is the key file's contents as a string, or the key file's object
	// itself (what pasting the file into a JSON body gives).
	GoogleServiceAccount json.RawMessage `json:"googleServiceAccount"`
	AWSSigV4             *awsSigV4JSON   `json:"awsSigV4"`
	MTLS                 *mtlsJSON       `json:"mtls"`
}

// awsSigV4JSON is an AWS access key; calls are signed for Region and Service (default
// bedrock-agentcore).
type awsSigV4JSON struct {
	AccessKeyID     *string `json:"accessKeyId"`
	SecretAccessKey *string `json:"secretAccessKey"`
	SessionToken    *string `json:"sessionToken"`
	Region          *string `json:"region"`
	Service         *string `json:"service"`
}

// mtlsJSON is a client certificate for mutual TLS: PEM, the certificate (its chain may follow)
// and its unencrypted private key.
type mtlsJSON struct {
	CertificatePEM *string `json:"certificatePem"`
	PrivateKeyPEM  *string `json:"privateKeyPem"`
}

// tlsJSON is the `tls` member of POST /v1/agents and PATCH /v1/agents/{id}, and of an agent
// resource: the agent's own CA bundle. Not a secret: GET shows it as it was sent.
type tlsJSON struct {
	// CAPem: PEM, CA certificates only; "" (PATCH) removes it.
	CAPem *string `json:"caPem"`
}

// caPemOf checks the member and returns the bundle it holds ("" for none).
func caPemOf(in *tlsJSON) (string, error) {
	if in == nil || in.CAPem == nil {
		return "", nil
	}
	if err := ruleCAPem.check("tls.caPem", *in.CAPem); err != nil {
		return "", err
	}
	return *in.CAPem, nil
}

var (
	ruleCAPem = fieldRule{maxBytes: agenttls.MaxCABytes, multiline: true}
	rulePEM   = fieldRule{required: true, maxBytes: agenttls.MaxPEMBytes, multiline: true}
)

type oauth2JSON struct {
	ClientID     *string  `json:"clientId"`
	ClientSecret *string  `json:"clientSecret"`
	Scopes       []string `json:"scopes"`
	TokenURL     *string  `json:"tokenUrl"`
}

var ruleOAuthField = fieldRule{required: true, maxBytes: maxAPIKeyBytes, header: false}

// credentialOf checks the member and returns the credential it holds.
func credentialOf(in *credentialsJSON) (*credential.Credential, error) {
	var set []string
	if in.APIKey != nil {
		set = append(set, "apiKey")
	}
	if in.BearerToken != nil {
		set = append(set, "bearerToken")
	}
	if in.OAuth2 != nil {
		set = append(set, "oauth2")
	}
	if in.GoogleServiceAccount != nil && !bytes.Equal(in.GoogleServiceAccount, []byte("null")) {
		set = append(set, "googleServiceAccount")
	}
	if in.AWSSigV4 != nil {
		set = append(set, "awsSigV4")
	}
	if in.MTLS != nil {
		set = append(set, "mtls")
	}
	switch len(set) {
	case 0:
		return nil, fieldError("credentials", "required",
			"credentials must hold exactly one of apiKey, bearerToken, oauth2, googleServiceAccount, awsSigV4 or mtls.")
	case 1:
	default:
		return nil, fieldError("credentials", "too_many_members",
			"credentials must hold exactly one of apiKey, bearerToken, oauth2, googleServiceAccount, awsSigV4 or mtls; it holds %s and %s.", set[0], set[1])
	}
	c := &credential.Credential{}
	switch set[0] {
	case "apiKey":
		if err := ruleAPIKey.check("credentials.apiKey", *in.APIKey); err != nil {
			return nil, err
		}
		if *in.APIKey == "" {
			return nil, fieldError("credentials.apiKey", "required", "credentials.apiKey is required.")
		}
		c.Kind, c.Secret = connector.CredentialKindAPIKey, *in.APIKey
	case "bearerToken":
		if err := ruleAPIKey.check("credentials.bearerToken", *in.BearerToken); err != nil {
			return nil, err
		}
		if *in.BearerToken == "" {
			return nil, fieldError("credentials.bearerToken", "required", "credentials.bearerToken is required.")
		}
		c.Kind, c.Secret = connector.CredentialKindBearerToken, *in.BearerToken
	case "oauth2":
		o := in.OAuth2
		if o.ClientID == nil {
			return nil, fieldError("credentials.oauth2.clientId", "required", "credentials.oauth2.clientId is required.")
		}
		if o.ClientSecret == nil {
			return nil, fieldError("credentials.oauth2.clientSecret", "required", "credentials.oauth2.clientSecret is required.")
		}
		for field, v := range map[string]string{"credentials.oauth2.clientId": *o.ClientID, "credentials.oauth2.clientSecret": *o.ClientSecret} {
			if err := ruleOAuthField.check(field, v); err != nil {
				return nil, err
			}
		}
		c.Kind = connector.CredentialKindOAuth2
		c.OAuth2 = &credential.OAuth2Client{ClientID: *o.ClientID, ClientSecret: *o.ClientSecret, Scopes: o.Scopes}
		if o.TokenURL != nil {
			if err := ruleCardURL.check("credentials.oauth2.tokenUrl", *o.TokenURL); err != nil {
				return nil, err
			}
			c.OAuth2.TokenURL = *o.TokenURL
		}
	case "googleServiceAccount":
		raw := in.GoogleServiceAccount
		if len(raw) > maxServiceAccountBytes {
			return nil, fieldError("credentials.googleServiceAccount", "too_long", "credentials.googleServiceAccount is longer than %d bytes.", maxServiceAccountBytes)
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			s = string(raw) // the key file's object itself
		}
		c.Kind, c.Secret = connector.CredentialKindGoogleServiceAccount, s
	case "awsSigV4":
		k, err := awsKeyOf(in.AWSSigV4)
		if err != nil {
			return nil, err
		}
		c.Kind, c.AWS = connector.CredentialKindAWSSigV4, k
	case "mtls":
		m := in.MTLS
		for field, v := range map[string]*string{"credentials.mtls.certificatePem": m.CertificatePEM, "credentials.mtls.privateKeyPem": m.PrivateKeyPEM} {
			if v == nil {
				return nil, fieldError(field, "required", "%s is required.", field)
			}
			if err := rulePEM.check(field, *v); err != nil {
				return nil, err
			}
		}
		c.Kind = connector.CredentialKindMTLS
		c.MTLS = &credential.ClientCert{CertificatePEM: *m.CertificatePEM, PrivateKeyPEM: *m.PrivateKeyPEM}
	}
	if err := c.Check(); err != nil {
		return nil, err
	}
	return c, nil
}

// awsKeyOf reads credentials.awsSigV4; credential.Check judges the values.
func awsKeyOf(in *awsSigV4JSON) (*credential.AWSKey, error) {
	k := &credential.AWSKey{}
	for _, f := range []struct {
		name     string
		v        *string
		to       *string
		required bool
	}{
		{"accessKeyId", in.AccessKeyID, &k.AccessKeyID, true},
		{"secretAccessKey", in.SecretAccessKey, &k.SecretAccessKey, true},
		{"sessionToken", in.SessionToken, &k.SessionToken, false},
		{"region", in.Region, &k.Region, true},
		{"service", in.Service, &k.Service, false},
	} {
		field := "credentials.awsSigV4." + f.name
		if f.v == nil {
			if f.required {
				return nil, fieldError(field, "required", "%s is required.", field)
			}
			continue
		}
		if err := ruleAWSField.check(field, *f.v); err != nil {
			return nil, err
		}
		*f.to = *f.v
	}
	return k, nil
}

// ruleAWSField bounds the members of an AWS key: session tokens run to about 2 KB; nothing in
// them is more than printable ASCII (credential.Check says so per member).
var ruleAWSField = fieldRule{maxBytes: 8 << 10}

// credentialKindShown is the credentialKind an agent answers: what its card asks for, or
// awsSigV4 once that is the credential set, since no card can ask for it.
func credentialKindShown(a connector.Agent) string {
	if a.CredentialsSet && a.CredentialSetKind == connector.CredentialKindAWSSigV4 {
		return connector.CredentialKindAWSSigV4
	}
	return a.Credential()
}

// credentialKindsOffered is every kind of credential a tenant may set for a card of profile p,
// in the order a form offers them: what the card asks for first, then each other kind that fits
// one of the card's alternatives (the bearer kinds stand in for one another), then an AWS key,
// which fits any card (A2A has no scheme for it: an agent behind AWS IAM has a card that says
// nothing, or something else). Empty never: a card that asks for nothing still takes an AWS key.
func credentialKindsOffered(p connector.CardProfile) []string {
	want := p.Credential()
	alternatives := p.CredentialKinds
	if want != connector.CredentialKindNone {
		alternatives = append([]string{want}, alternatives...)
	}
	var out []string
	for _, k := range append([]string{want}, connector.CredentialKindsStored()...) {
		if k == connector.CredentialKindNone || slices.Contains(out, k) {
			continue
		}
		if k == connector.CredentialKindAWSSigV4 ||
			slices.ContainsFunc(alternatives, func(a string) bool { return connector.CredentialFits(k, a) }) {
			out = append(out, k)
		}
	}
	return out
}

// credentialProblem is the 400 of a credential that cannot work (credential.FieldError).
func credentialProblem(fe *credential.FieldError) *apiError {
	code := "invalid_credentials"
	if strings.HasPrefix(fe.Field, "tls.") {
		code = "invalid_tls" // the agent's CA bundle: not a credential
	}
	return &apiError{status: http.StatusBadRequest, code: code, field: fe.Field,
		detail: fe.Field + " " + fe.Reason + "."}
}

// cardSignature is the signature status to show: a revision stored before signatures were
// verified was not checked, which for the tenant is what unsigned means.
func cardSignature(sig connector.CardSignature) connector.CardSignature {
	if sig.Status == "" {
		sig.Status = connector.SignatureUnsigned
	}
	return sig
}
