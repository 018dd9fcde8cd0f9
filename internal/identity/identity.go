// Package identity issues the platform's caller-identity tokens: short-lived JWTs (ES256) that
// tell an agent acting on the caller's behalf who is calling, without telling it the platform's
// user id. The subject is pairwise per tenant, HMAC-SHA256(pairwise secret, tenant id || 0x00 ||
// user id), so two tenants never see the same subject for the same person; the audience is the
// agent's card URL; a token lives TokenLifetime.
//
// The signing key and the pairwise secret live in Postgres, sealed by internal/secret, shared by
// every replica and console-api, and are created on first need (the database settles a race
// between replicas). Rotate makes a new key sign at once; a retired key stays published (JWKS)
// until every token it may have signed has expired. Tokens are cached per key, tenant, user and
// audience until near their expiry, so the turn path rarely signs.
//
// It never logs, and neither the private key nor a user id appears in an error it returns: a
// user id is personal data, seen only by the HMAC.
package identity

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/secret"
)

// Header is the HTTP header agent calls carry the token in; on gRPC the metadata key is its
// lowercase form.
const Header = "A2A-Caller-Identity"

// TokenLifetime is how long a token is valid (exp - iat).
const TokenLifetime = 5 * time.Minute

// Algorithm is the JWS algorithm of every token and key.
const Algorithm = jose.ES256

const (
	// defaultRefresh is how often the signing key is read again, so that a rotation done by
	// another process is followed within it.
	defaultRefresh = 5 * time.Second
	// renewBefore: a cached token is replaced when less than this is left of it, so an agent
	// never receives one about to expire.
	renewBefore = time.Minute
	// staleGrace is how long a key read earlier may still sign while the database cannot be
	// read (a retired key must stay published for as long; see Retention).
	staleGrace = time.Minute
	// maxCached bounds the token cache; past it expired tokens are dropped, and when none are,
	// the whole cache (it only saves signatures).
	maxCached = 100_000
	// seal associated data: a sealed key copied into another row does not open.
	keyAAD      = "identity-key:"
	pairwiseAAD = "identity-pairwise"
)

// ErrNoIssuer means the process has no issuer configured (A2AC_IDENTITY_ISSUER).
var ErrNoIssuer = errors.New("identity: no issuer configured (A2AC_IDENTITY_ISSUER)")

// Keys is where the signing keys and the pairwise secret are kept (internal/store).
type Keys interface {
	IdentityKeys(ctx context.Context, retiredSince time.Time) ([]connector.SigningKey, error)
	AddIdentityKey(ctx context.Context, k connector.SigningKey, rotate bool, dropRetiredBefore time.Time) error
	IdentityPairwise(ctx context.Context, candidate connector.Sealed) (connector.Sealed, error)
}

// Options configure an Issuer.
type Options struct {
	Keys    Keys
	Secrets *secret.Box
	// Issuer is the iss of every token: the platform, as A2AC_IDENTITY_ISSUER names it. ""
	// makes Token fail with ErrNoIssuer (JWKS and Rotate still work: console-api needs no
	// issuer to publish keys).
	Issuer string
	// Refresh is how often the signing key is read again (default 5s).
	Refresh time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Issuer signs tokens and publishes its keys. Safe for concurrent use; one per process.
type Issuer struct {
	opts Options

	load sync.Mutex // one reader of the store at a time

	mu       sync.Mutex
	signing  *signingKey
	loadedAt time.Time
	pairwise []byte
	tokens   map[tokenKey]cachedToken
}

type signingKey struct {
	kid    string
	signer jose.Signer
}

type tokenKey struct{ kid, tenantID, userID, audience string }

type cachedToken struct {
	token string
	exp   time.Time
}

// New returns an Issuer; it reads nothing until first needed.
func New(o Options) *Issuer {
	if o.Refresh <= 0 {
		o.Refresh = defaultRefresh
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Issuer{opts: o, tokens: make(map[tokenKey]cachedToken)}
}

// Retention is how long a retired key stays published: a process may sign with it until it
// next reads the keys (Refresh), or for staleGrace while the database is away, and its last
// token lives TokenLifetime.
func (i *Issuer) Retention() time.Duration {
	return TokenLifetime + max(i.opts.Refresh, staleGrace) + time.Minute
}

// Claims are the claims of a token.
type Claims struct {
	Issuer   string `json:"iss"`
	Subject  string `json:"sub"`
	Audience string `json:"aud"`
	Expiry   int64  `json:"exp"`
	IssuedAt int64  `json:"iat"`
	ID       string `json:"jti"`
}

// Token returns a token naming userID of tenantID to the agent whose card URL is audience: a
// cached one while more than a minute is left of it, else a new one.
func (i *Issuer) Token(ctx context.Context, tenantID, userID, audience string) (string, error) {
	if i.opts.Issuer == "" {
		return "", ErrNoIssuer
	}
	if userID == "" || audience == "" {
		return "", errors.New("identity: token without a user or an audience")
	}
	key, pairwise, err := i.current(ctx)
	if err != nil {
		return "", err
	}
	now := i.opts.Now()
	ck := tokenKey{kid: key.kid, tenantID: tenantID, userID: userID, audience: audience}
	i.mu.Lock()
	c, ok := i.tokens[ck]
	i.mu.Unlock()
	if ok && c.exp.Sub(now) > renewBefore {
		return c.token, nil
	}
	jti := make([]byte, 16)
	if _, err := rand.Read(jti); err != nil {
		return "", fmt.Errorf("identity: token id: %w", err)
	}
	exp := now.Add(TokenLifetime)
	claims := Claims{
		Issuer: i.opts.Issuer, Subject: subject(pairwise, tenantID, userID), Audience: audience,
		Expiry: exp.Unix(), IssuedAt: now.Unix(), ID: base64.RawURLEncoding.EncodeToString(jti),
	}
	tok, err := jwt.Signed(key.signer).Claims(claims).Serialize()
	if err != nil {
		return "", fmt.Errorf("identity: sign with key %s: %w", key.kid, err)
	}
	i.mu.Lock()
	if len(i.tokens) >= maxCached {
		i.prune(now)
	}
	i.tokens[ck] = cachedToken{token: tok, exp: time.Unix(exp.Unix(), 0)}
	i.mu.Unlock()
	return tok, nil
}

// prune drops expired tokens, or all of them when none has expired. i.mu is held.
func (i *Issuer) prune(now time.Time) {
	for k, c := range i.tokens {
		if c.exp.Sub(now) <= renewBefore {
			delete(i.tokens, k)
		}
	}
	if len(i.tokens) >= maxCached {
		clear(i.tokens)
	}
}

// Subject is the pairwise subject of userID for tenantID, as tokens carry it.
func (i *Issuer) Subject(ctx context.Context, tenantID, userID string) (string, error) {
	_, pairwise, err := i.current(ctx)
	if err != nil {
		return "", err
	}
	return subject(pairwise, tenantID, userID), nil
}

func subject(secret []byte, tenantID, userID string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(tenantID))
	m.Write([]byte{0})
	m.Write([]byte(userID))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// current returns the signing key and the pairwise secret, reading them again when they are
// older than Refresh, and creating them when there are none.
func (i *Issuer) current(ctx context.Context) (*signingKey, []byte, error) {
	now := i.opts.Now()
	i.mu.Lock()
	key, pairwise, age := i.signing, i.pairwise, now.Sub(i.loadedAt)
	i.mu.Unlock()
	if key != nil && age < i.opts.Refresh {
		return key, pairwise, nil
	}
	switch {
	case key != nil && age < staleGrace:
		if !i.load.TryLock() {
			return key, pairwise, nil // another goroutine is reading; this one need not wait
		}
	default:
		i.load.Lock()
	}
	defer i.load.Unlock()
	i.mu.Lock()
	if i.signing != nil && now.Sub(i.loadedAt) < i.opts.Refresh {
		key, pairwise = i.signing, i.pairwise
		i.mu.Unlock()
		return key, pairwise, nil
	}
	i.mu.Unlock()
	newKey, newPairwise, err := i.read(ctx, pairwise)
	if err != nil {
		if key != nil && age < staleGrace {
			return key, pairwise, nil // the database is away for a moment: the key read last still signs
		}
		return nil, nil, err
	}
	i.mu.Lock()
	i.signing, i.pairwise, i.loadedAt = newKey, newPairwise, now
	i.mu.Unlock()
	return newKey, newPairwise, nil
}

// read loads the signing key (creating the first) and, unless known, the pairwise secret.
func (i *Issuer) read(ctx context.Context, pairwise []byte) (*signingKey, []byte, error) {
	if i.opts.Keys == nil || i.opts.Secrets == nil {
		return nil, nil, errors.New("identity: no key store or no secret key")
	}
	keys, err := i.opts.Keys.IdentityKeys(ctx, i.opts.Now())
	if err != nil {
		return nil, nil, fmt.Errorf("identity: %w", err)
	}
	if len(keys) == 0 || !keys[0].RetiredAt.IsZero() {
		if err := i.add(ctx, false); err != nil {
			return nil, nil, err
		}
		if keys, err = i.opts.Keys.IdentityKeys(ctx, i.opts.Now()); err != nil {
			return nil, nil, fmt.Errorf("identity: %w", err)
		}
		if len(keys) == 0 || !keys[0].RetiredAt.IsZero() {
			return nil, nil, errors.New("identity: no signing key after creating one")
		}
	}
	key, err := i.open(keys[0])
	if err != nil {
		return nil, nil, err
	}
	if pairwise == nil {
		if pairwise, err = i.readPairwise(ctx); err != nil {
			return nil, nil, err
		}
	}
	return key, pairwise, nil
}

func (i *Issuer) readPairwise(ctx context.Context) ([]byte, error) {
	candidate := make([]byte, 32)
	if _, err := rand.Read(candidate); err != nil {
		return nil, fmt.Errorf("identity: pairwise secret: %w", err)
	}
	sealed, err := i.opts.Secrets.Seal(pairwiseAAD, candidate)
	if err != nil {
		return nil, fmt.Errorf("identity: seal pairwise secret: %w", err)
	}
	stored, err := i.opts.Keys.IdentityPairwise(ctx, sealed)
	if err != nil {
		return nil, fmt.Errorf("identity: %w", err)
	}
	plain, err := i.opts.Secrets.Open(pairwiseAAD, stored)
	if err != nil {
		return nil, fmt.Errorf("identity: open pairwise secret: %w", err)
	}
	return plain, nil
}

// open unseals a stored key into a signer.
func (i *Issuer) open(k connector.SigningKey) (*signingKey, error) {
	der, err := i.opts.Secrets.Open(keyAAD+k.KID, k.Private)
	if err != nil {
		return nil, fmt.Errorf("identity: open signing key %s: %w", k.KID, err)
	}
	parsed, err := x509.ParsePKCS8PrivateKey(der)
	clear(der)
	if err != nil {
		return nil, fmt.Errorf("identity: signing key %s is no PKCS #8 key", k.KID)
	}
	priv, ok := parsed.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("identity: signing key %s is not an ECDSA key", k.KID)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: Algorithm, Key: jose.JSONWebKey{Key: priv, KeyID: k.KID, Algorithm: string(Algorithm)}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return nil, fmt.Errorf("identity: signer of key %s: %w", k.KID, err)
	}
	return &signingKey{kid: k.KID, signer: signer}, nil
}

// add makes a new key and stores it: as the first signing key (a no-op when another process
// stored one first), or, with rotate, in place of the signing key.
func (i *Issuer) add(ctx context.Context, rotate bool) error {
	k, err := i.newKey()
	if err != nil {
		return err
	}
	if err := i.opts.Keys.AddIdentityKey(ctx, k, rotate, i.opts.Now().Add(-i.Retention())); err != nil {
		return fmt.Errorf("identity: %w", err)
	}
	return nil
}

func (i *Issuer) newKey() (connector.SigningKey, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return connector.SigningKey{}, fmt.Errorf("identity: generate key: %w", err)
	}
	pub := jose.JSONWebKey{Key: &priv.PublicKey, Algorithm: string(Algorithm), Use: "sig"}
	thumb, err := pub.Thumbprint(crypto.SHA256)
	if err != nil {
		return connector.SigningKey{}, fmt.Errorf("identity: key thumbprint: %w", err)
	}
	pub.KeyID = base64.RawURLEncoding.EncodeToString(thumb) // RFC 7638: stable and not secret
	jwk, err := json.Marshal(pub)
	if err != nil {
		return connector.SigningKey{}, fmt.Errorf("identity: encode public key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return connector.SigningKey{}, fmt.Errorf("identity: encode private key: %w", err)
	}
	sealed, err := i.opts.Secrets.Seal(keyAAD+pub.KeyID, der)
	clear(der)
	if err != nil {
		return connector.SigningKey{}, fmt.Errorf("identity: seal private key: %w", err)
	}
	return connector.SigningKey{KID: pub.KeyID, PublicJWK: jwk, Private: sealed}, nil
}

// Rotate makes a new key the signing key of every process (each follows within Refresh; this
// one at once) and retires the old one, which stays published for Retention. It returns the new
// key's id.
func (i *Issuer) Rotate(ctx context.Context) (string, error) {
	if i.opts.Keys == nil || i.opts.Secrets == nil {
		return "", errors.New("identity: no key store or no secret key")
	}
	if err := i.add(ctx, true); err != nil {
		return "", err
	}
	i.mu.Lock()
	i.loadedAt = time.Time{} // read again on next use
	i.mu.Unlock()
	keys, err := i.opts.Keys.IdentityKeys(ctx, i.opts.Now())
	if err != nil || len(keys) == 0 {
		return "", fmt.Errorf("identity: read the new key: %w", err)
	}
	return keys[0].KID, nil
}

// JWKS returns the published public keys: the signing key (created when there is none yet, so
// that agents can fetch it before the first token) and the retired keys still within Retention.
func (i *Issuer) JWKS(ctx context.Context) (jose.JSONWebKeySet, error) {
	if i.opts.Keys == nil || i.opts.Secrets == nil {
		return jose.JSONWebKeySet{}, errors.New("identity: no key store or no secret key")
	}
	since := i.opts.Now().Add(-i.Retention())
	keys, err := i.opts.Keys.IdentityKeys(ctx, since)
	if err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("identity: %w", err)
	}
	if len(keys) == 0 || !keys[0].RetiredAt.IsZero() {
		if err := i.add(ctx, false); err != nil {
			return jose.JSONWebKeySet{}, err
		}
		if keys, err = i.opts.Keys.IdentityKeys(ctx, since); err != nil {
			return jose.JSONWebKeySet{}, fmt.Errorf("identity: %w", err)
		}
	}
	set := jose.JSONWebKeySet{Keys: make([]jose.JSONWebKey, 0, len(keys))}
	for _, k := range keys {
		var jwk jose.JSONWebKey
		if err := jwk.UnmarshalJSON(k.PublicJWK); err != nil {
			return jose.JSONWebKeySet{}, fmt.Errorf("identity: stored public key %s: %w", k.KID, err)
		}
		set.Keys = append(set.Keys, jwk)
	}
	return set, nil
}
