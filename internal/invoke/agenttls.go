package invoke

import (
	"context"
	"errors"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/agenttls"
	"github.com/a2a-connector/a2a-connector/internal/credential"
)

// withTLS returns ctx carrying the agent's own TLS (agenttls.Identity: its CA bundle, its
// client certificate when its credential is one), for every call of the turn: the agent's,
// its token URL's and a cancel's. An agent with neither gets ctx as it is: the process-wide
// roots, through the shared connections. The Identity is built once per registration
// (inv.tls caches it under a key made of the agent id, the CA bundle and the sealed bytes,
// so a PATCH of either makes a new one on the next turn).
func (inv *Invoker) withTLS(ctx context.Context, agent *connector.Agent, sealed *connector.Sealed) (context.Context, *connector.TurnError) {
	id, herr := inv.tlsIdentity(agent, sealed)
	if herr != nil {
		return ctx, herr
	}
	return agenttls.With(ctx, id), nil
}

func (inv *Invoker) tlsIdentity(agent *connector.Agent, sealed *connector.Sealed) (*agenttls.Identity, *connector.TurnError) {
	mtls := sealed != nil && agent.CredentialSetKind == connector.CredentialKindMTLS
	if !mtls && agent.TLSCAPem == "" {
		return nil, nil
	}
	var fingerprint []byte
	if mtls {
		fingerprint = sealed.Ciphertext
	}
	id, err := inv.tls.Get(agenttls.KeyOf(agent.ID, agent.TLSCAPem, fingerprint), agent.ID, func() (agenttls.Source, error) {
		src := agenttls.Source{CA: agent.TLSCAPem}
		if !mtls {
			return src, nil
		}
		cred, herr := inv.open(agent, sealed)
		if herr != nil {
			return src, herr
		}
		if cred.MTLS == nil {
			return src, &connector.TurnError{Code: connector.CodeCredentials, Message: "the agent's client certificate is missing from its credentials"}
		}
		src.Cert, src.Key = cred.MTLS.CertificatePEM, cred.MTLS.PrivateKeyPEM
		return src, nil
	})
	if err == nil {
		return id, nil
	}
	if herr, ok := errors.AsType[*connector.TurnError](err); ok {
		return nil, herr
	}
	if ce, ok := errors.AsType[*agenttls.CertError](err); ok {
		// CertError never quotes the key.
		return nil, &connector.TurnError{Code: connector.CodeCredentials, Message: "the agent's client certificate cannot be used: credentials.mtls." + ce.Error()}
	}
	return nil, &connector.TurnError{Code: connector.CodeCredentials, Message: "the agent's TLS settings cannot be used: " + err.Error()}
}

// open reads the agent's sealed credential. Its errors never hold the plaintext.
func (inv *Invoker) open(agent *connector.Agent, sealed *connector.Sealed) (credential.Credential, *connector.TurnError) {
	if inv.secrets == nil {
		return credential.Credential{}, &connector.TurnError{Code: connector.CodeCredentials, Message: "the agent has credentials but no secret key is configured to open them"}
	}
	plain, err := inv.secrets.Open(agent.ID, *sealed)
	if err != nil {
		// secret's errors never contain plaintext.
		return credential.Credential{}, &connector.TurnError{Code: connector.CodeCredentials, Message: "the agent's credentials cannot be opened: " + err.Error()}
	}
	cred, err := credential.Parse(agent.CredentialSetKind, plain)
	clear(plain)
	if err != nil {
		return credential.Credential{}, &connector.TurnError{Code: connector.CodeCredentials, Message: "the agent's credentials cannot be read: " + err.Error()}
	}
	return cred, nil
}

// TLSContext is ctx carrying the agent's own TLS (its CA bundle and client certificate), for
// calls made outside a turn: the agents service fetches cards with it, at registration
// before the agent is stored too. Its error says what is wrong without the key.
func (inv *Invoker) TLSContext(ctx context.Context, agent *connector.Agent, sealed *connector.Sealed) (context.Context, error) {
	ctx, herr := inv.withTLS(ctx, agent, sealed)
	if herr != nil {
		return ctx, herr
	}
	return ctx, nil
}
