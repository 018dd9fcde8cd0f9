package credential

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
	"golang.org/x/oauth2/google"
	"golang.org/x/sync/singleflight"

	connector "github.com/a2a-connector/a2a-connector"
)

// DefaultFetchTimeout bounds one token request.
const DefaultFetchTimeout = 10 * time.Second

// maxMargin caps how long before its expiry a token is replaced. The margin is a tenth of the
// token's lifetime up to this, so a 10-second token is used for 9 seconds, and an hour-long
// one until 5 seconds before it ends (enough for a turn's first request to reach the agent).
const maxMargin = 5 * time.Second

// Tokens fetches OAuth 2.0 access tokens for agents and keeps each agent's last one in this
// process's memory until shortly before it expires. Concurrent turns of one agent share one
// request in flight. It is safe for concurrent use.
//
// Replicas each hold their own token: sharing them through the store would put access tokens
// at rest and a write on the turn path, to save one token request per replica per lifetime.
type Tokens struct {
	client  *http.Client
	timeout time.Duration
	now     func() time.Time

	group singleflight.Group
	mu    sync.Mutex
	cache map[string]cached // agent id -> its last token
}

type cached struct {
	source [32]byte // which credential and token URL it came from
	tok    *oauth2.Token
	until  time.Time // when it stops being handed out; zero: until a 401
}

// TokensOptions configure Tokens.
type TokensOptions struct {
	// Client makes the token requests; it must be the SSRF-guarded client (netguard), so that
	// a token URL on a blocked address is never contacted.
	Client *http.Client
	// FetchTimeout bounds one token request (default DefaultFetchTimeout).
	FetchTimeout time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// NewTokens returns an empty token cache fetching through o.Client.
func NewTokens(o TokensOptions) *Tokens {
	t := &Tokens{client: o.Client, timeout: o.FetchTimeout, now: o.Now, cache: map[string]cached{}}
	if t.timeout <= 0 {
		t.timeout = DefaultFetchTimeout
	}
	if t.now == nil {
		t.now = time.Now
	}
	if t.client == nil {
		t.client = http.DefaultClient
	}
	return t
}

// TokenError is a token request that failed: the token endpoint's own error code and
// description when it answered one (RFC 6749 §5.2), else what went wrong in the connection.
// It never holds the client secret or a token.
type TokenError struct {
	TokenURL string
	// Code is the endpoint's error ("invalid_client") or, when it answered none, "".
	Code string
	// Status is the HTTP status of its answer (0 when none came).
	Status int
	Err    error
}

func (e *TokenError) Error() string {
	switch {
	case e.Code != "":
		return fmt.Sprintf("token request to %s: %s (HTTP %d)", e.TokenURL, e.Code, e.Status)
	case e.Status != 0:
		return fmt.Sprintf("token request to %s: HTTP %d", e.TokenURL, e.Status)
	}
	return fmt.Sprintf("token request to %s: %v", e.TokenURL, e.Err)
}

func (e *TokenError) Unwrap() error { return e.Err }

// Target is what a token is for: the agent, its credential and the card's token URL and
// scopes (a credential's own TokenURL and Scopes override them).
type Target struct {
	AgentID  string
	Cred     Credential
	TokenURL string
	Scopes   []string
}

// Token returns a valid access token for the target: the cached one while it lasts, else a new
// one from the token endpoint (one request for all concurrent callers; ctx bounds only this
// caller's wait, the request itself is bounded by FetchTimeout).
func (t *Tokens) Token(ctx context.Context, tg Target) (string, error) {
	src, err := sourceOf(tg)
	if err != nil {
		return "", err
	}
	now := t.now()
	t.mu.Lock()
	c, ok := t.cache[tg.AgentID]
	t.mu.Unlock()
	if ok && c.source == src && (c.until.IsZero() || now.Before(c.until)) {
		return c.tok.AccessToken, nil
	}
	key := tg.AgentID + "\x00" + string(src[:])
	ch := t.group.DoChan(key, func() (any, error) { return t.fetch(ctx, tg, src) })
	select {
	case r := <-ch:
		if r.Err != nil {
			return "", r.Err
		}
		return r.Val.(string), nil
	case <-ctx.Done():
		return "", fmt.Errorf("wait for token: %w", context.Cause(ctx))
	}
}

// Forget drops the agent's cached token if it is still accessToken (the one the agent refused),
// so that the next Token fetches a new one. Comparing the token keeps concurrent 401s of one
// stale token from throwing away the fresh one a sibling already fetched.
func (t *Tokens) Forget(agentID, accessToken string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.cache[agentID]; ok && c.tok.AccessToken == accessToken {
		delete(t.cache, agentID)
	}
}

// fetch runs on singleflight's goroutine: detached from the first caller's cancellation (its
// siblings still wait for the token) but bounded by the fetch timeout, so it ends on its own.
func (t *Tokens) fetch(ctx context.Context, tg Target, src [32]byte) (string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.timeout)
	defer cancel()
	ctx = context.WithValue(ctx, oauth2.HTTPClient, t.client)
	start := t.now()
	tokenURL, tok, err := t.request(ctx, tg)
	if err != nil {
		return "", tokenError(tokenURL, err)
	}
	if tok.AccessToken == "" {
		return "", &TokenError{TokenURL: tokenURL, Err: errors.New("the answer holds no access_token")}
	}
	c := cached{source: src, tok: tok}
	if !tok.Expiry.IsZero() {
		life := tok.Expiry.Sub(start)
		c.until = tok.Expiry.Add(-min(life/10, maxMargin))
	}
	t.mu.Lock()
	t.cache[tg.AgentID] = c
	if len(t.cache) > pruneAbove {
		t.pruneLocked(start)
	}
	t.mu.Unlock()
	return tok.AccessToken, nil
}

// pruneAbove is the cache size past which expired tokens are dropped when a new one is stored:
// agents deleted or no longer called leave their last token behind otherwise.
const pruneAbove = 1024

func (t *Tokens) pruneLocked(now time.Time) {
	for id, c := range t.cache {
		if !c.until.IsZero() && now.After(c.until) {
			delete(t.cache, id)
		}
	}
}

func (t *Tokens) request(ctx context.Context, tg Target) (string, *oauth2.Token, error) {
	switch tg.Cred.Kind {
	case connector.CredentialKindOAuth2:
		o := tg.Cred.OAuth2
		cfg := clientcredentials.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret, TokenURL: tg.TokenURL, Scopes: tg.Scopes}
		if o.TokenURL != "" {
			cfg.TokenURL = o.TokenURL
		}
		if len(o.Scopes) > 0 {
			cfg.Scopes = o.Scopes
		}
		if cfg.TokenURL == "" {
			return "", nil, errors.New("no token URL: the card names none and the registration sets no tokenUrl")
		}
		tok, err := cfg.Token(ctx)
		return cfg.TokenURL, tok, err
	case connector.CredentialKindGoogleServiceAccount:
		cfg, err := google.JWTConfigFromJSON([]byte(tg.Cred.Secret), GoogleScope)
		if err != nil {
			return "", nil, errors.New("the service account key cannot be read")
		}
		// The JWT-bearer grant (RFC 7523) to the key's token_uri.
		tok, err := cfg.TokenSource(ctx).Token()
		return cfg.TokenURL, tok, err
	}
	return "", nil, fmt.Errorf("credential kind %q has no tokens", tg.Cred.Kind)
}

// tokenError keeps what the endpoint said (its error code and status) and drops its body, which
// the library quotes whole: a misbehaving endpoint could echo the request there.
func tokenError(tokenURL string, err error) *TokenError {
	te := &TokenError{TokenURL: redactURL(tokenURL), Err: err}
	if re, ok := errors.AsType[*oauth2.RetrieveError](err); ok {
		te.Code = re.ErrorCode
		if re.Response != nil {
			te.Status = re.Response.StatusCode
		}
		te.Err = errors.New("the token endpoint refused the request")
	}
	return te
}

// redactURL drops a token URL's user info and query, where a secret might have been put.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable token URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// sourceOf fingerprints what a token comes from, so a changed credential or card gets a new
// token at once. Only a hash is kept.
func sourceOf(tg Target) ([32]byte, error) {
	b, err := tg.Cred.Plaintext()
	if err != nil {
		return [32]byte{}, err
	}
	h := sha256.New()
	h.Write([]byte(tg.Cred.Kind))
	h.Write([]byte{0})
	h.Write(b)
	h.Write([]byte{0})
	h.Write([]byte(tg.TokenURL))
	for _, s := range tg.Scopes {
		h.Write([]byte{0})
		h.Write([]byte(s))
	}
	clear(b)
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out, nil
}
