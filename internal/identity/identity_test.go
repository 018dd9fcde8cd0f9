package identity_test

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/jackc/pgx/v5/pgxpool"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/identity"
	"github.com/a2a-connector/a2a-connector/internal/identity/identitytest"
	"github.com/a2a-connector/a2a-connector/internal/pgtest"
	"github.com/a2a-connector/a2a-connector/internal/secret"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

var testDB *pgtest.DB

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m, &testDB)) }

const issuerURL = "https://console.platform.example"

// keyDB is a database of its own (the keys are global to a database), migrated, with the
// secret box every process of the test shares.
type keyDB struct {
	pool *pgxpool.Pool
	st   *store.Store
	box  *secret.Box
}

func newKeyDB(t testing.TB) keyDB {
	t.Helper()
	db := testDB.NewDatabase(t)
	key := make([]byte, secret.KeySize)
	rand.Read(key)
	box, err := secret.New(key)
	if err != nil {
		t.Fatal(err)
	}
	return keyDB{pool: db.Pool, st: store.New(db.Pool), box: box}
}

// clock is a settable clock shared by the issuers of a test.
type clock struct{ at atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.at.Store(time.Now().UnixNano())
	return c
}
func (c *clock) now() time.Time          { return time.Unix(0, c.at.Load()) }
func (c *clock) advance(d time.Duration) { c.at.Add(int64(d)) }
func (k keyDB) issuer(now func() time.Time) *identity.Issuer {
	return identity.New(identity.Options{Keys: k.st, Secrets: k.box, Issuer: issuerURL, Now: now})
}

// serveJWKS publishes iss's JWKS over HTTP, as console-api does.
func serveJWKS(t testing.TB, iss *identity.Issuer) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		set, err := iss.JWKS(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_ = json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/.well-known/jwks.json"
}

func TestFirstKey_two_replicas_at_once_end_with_one_key_and_one_pairwise_secret(t *testing.T) {
	t.Parallel()
	k := newKeyDB(t)
	const replicas = 8
	subs := make([]string, replicas)
	kids := make([]string, replicas)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range replicas {
		wg.Go(func() {
			iss := k.issuer(nil)
			<-start
			tok, err := iss.Token(t.Context(), "tenant-a", "user-1", "https://agent.example/card")
			if err != nil {
				t.Error(err)
				return
			}
			kids[i], subs[i] = headerKID(t, tok), claimsOf(t, tok)["sub"].(string)
		})
	}
	close(start)
	wg.Wait()
	var keys, secrets int
	if err := k.pool.QueryRow(t.Context(), `select (select count(*) from identity_keys), (select count(*) from identity_pairwise)`).Scan(&keys, &secrets); err != nil {
		t.Fatal(err)
	}
	if keys != 1 || secrets != 1 {
		t.Errorf("after %d replicas started at once: %d keys, %d pairwise secrets; want 1 and 1", replicas, keys, secrets)
	}
	for i := range replicas {
		if kids[i] != kids[0] || subs[i] != subs[0] {
			t.Errorf("replica %d signs with %q for sub %q; replica 0 with %q for %q", i, kids[i], subs[i], kids[0], subs[0])
		}
	}
}

func TestToken_claims_pairwise_subject_and_verification(t *testing.T) {
	t.Parallel()
	k := newKeyDB(t)
	one, other := k.issuer(nil), k.issuer(nil) // two replicas
	jwks := serveJWKS(t, one)
	const card = "https://agent.example/.well-known/agent-card.json"
	ctx := t.Context()
	token := func(iss *identity.Issuer, tenant, user, aud string) identitytest.Caller {
		t.Helper()
		tok, err := iss.Token(ctx, tenant, user, aud)
		if err != nil {
			t.Fatal(err)
		}
		if len(user) > 4 && strings.Contains(tok, user) { // a short one may occur in base64 by chance
			t.Fatalf("token carries the user id in the clear")
		}
		c, err := identitytest.VerifyCaller(ctx, http.DefaultClient, jwks, issuerURL, aud, tok)
		if err != nil {
			t.Fatalf("verify: %v", err)
		}
		return c
	}
	a := token(one, "tenant-a", "user-1", card)
	if got := a.Claims.Expiry.Time().Sub(a.Claims.IssuedAt.Time()); got != identity.TokenLifetime || got > 5*time.Minute {
		t.Errorf("exp - iat = %v, want %v (at most 5m)", got, identity.TokenLifetime)
	}
	if a.Claims.Issuer != issuerURL || len(a.Claims.Audience) != 1 || a.Claims.Audience[0] != card || a.Claims.ID == "" {
		t.Errorf("claims = %+v", a.Claims)
	}
	if b := token(other, "tenant-a", "user-1", card+"?other"); b.Claims.Subject != a.Claims.Subject {
		t.Errorf("sub for one user of one tenant differs between replicas and agents: %q, %q", a.Claims.Subject, b.Claims.Subject)
	}
	if b := token(one, "tenant-b", "user-1", card); b.Claims.Subject == a.Claims.Subject {
		t.Errorf("two tenants see the same sub %q for one user", a.Claims.Subject)
	}
	if b := token(one, "tenant-a", "user-2", card); b.Claims.Subject == a.Claims.Subject || b.Claims.ID == a.Claims.ID {
		t.Errorf("two users share sub %q or jti %q", a.Claims.Subject, a.Claims.ID)
	}
	// Tenant "ab" with user "c" is not tenant "a" with user "bc".
	if x, y := token(one, "ab", "c", card), token(one, "a", "bc", card); x.Claims.Subject == y.Claims.Subject {
		t.Error("the subject does not separate tenant from user")
	}
	// Another audience is refused.
	tok, _ := one.Token(ctx, "tenant-a", "user-1", card)
	if _, err := identitytest.VerifyCaller(ctx, http.DefaultClient, jwks, issuerURL, "https://other.example/card", tok); err == nil {
		t.Error("a token for one agent verified for another")
	}
}

func TestToken_is_cached_until_a_minute_before_expiry(t *testing.T) {
	t.Parallel()
	k := newKeyDB(t)
	clk := newClock()
	iss := identity.New(identity.Options{Keys: k.st, Secrets: k.box, Issuer: issuerURL, Now: clk.now, Refresh: time.Hour})
	get := func() string {
		t.Helper()
		tok, err := iss.Token(t.Context(), "t", "u", "https://agent.example/card")
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	first := get()
	clk.advance(identity.TokenLifetime - time.Minute - time.Second)
	if get() != first {
		t.Error("a token with more than a minute left was signed again")
	}
	clk.advance(2 * time.Second)
	if get() == first {
		t.Error("a token with less than a minute left was sent again")
	}
}

func TestRotate_new_key_signs_old_stays_published_until_its_tokens_expire(t *testing.T) {
	t.Parallel()
	k := newKeyDB(t)
	clk := newClock()
	admin := k.issuer(clk.now)                                                                             // console-api
	replica := identity.New(identity.Options{Keys: k.st, Secrets: k.box, Issuer: issuerURL, Now: clk.now}) // a connector
	jwks := serveJWKS(t, admin)
	const card = "https://agent.example/card"
	ctx := t.Context()
	old, err := replica.Token(ctx, "t", "u", card)
	if err != nil {
		t.Fatal(err)
	}
	oldKID := headerKID(t, old)
	newKID, err := admin.Rotate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if newKID == oldKID {
		t.Fatal("Rotate kept the key")
	}
	if _, err := identitytest.VerifyCaller(ctx, http.DefaultClient, jwks, issuerURL, card, old); err != nil {
		t.Errorf("a token of the retired key no longer verifies: %v", err)
	}
	// The replica follows within its refresh (5s): its cached token was of the old key.
	clk.advance(6 * time.Second)
	fresh, err := replica.Token(ctx, "t", "u", card)
	if err != nil {
		t.Fatal(err)
	}
	if got := headerKID(t, fresh); got != newKID {
		t.Errorf("after the refresh the replica signs with %q, want the new key %q", got, newKID)
	}
	if _, err := identitytest.VerifyCaller(ctx, http.DefaultClient, jwks, issuerURL, card, fresh); err != nil {
		t.Errorf("a token of the new key does not verify: %v", err)
	}
	if kids := publishedKIDs(t, admin); len(kids) != 2 || kids[0] != newKID || kids[1] != oldKID {
		t.Errorf("JWKS kids = %v, want [%s %s]", kids, newKID, oldKID)
	}
	// Once every token of the old key has expired, it is no longer published, and the next
	// rotation deletes it.
	clk.advance(admin.Retention())
	if kids := publishedKIDs(t, admin); len(kids) != 1 || kids[0] != newKID {
		t.Errorf("JWKS kids after the retention = %v, want [%s]", kids, newKID)
	}
	if _, err := admin.Rotate(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := k.pool.QueryRow(ctx, `select count(*) from identity_keys where kid = $1`, oldKID).Scan(&n); err != nil || n != 0 {
		t.Errorf("old key rows after the next rotation = %d, %v; want 0", n, err)
	}
}

func TestSigningKey_is_sealed_in_the_database(t *testing.T) {
	t.Parallel()
	k := newKeyDB(t)
	iss := k.issuer(nil)
	if _, err := iss.Token(t.Context(), "t", "u", "https://agent.example/card"); err != nil {
		t.Fatal(err)
	}
	var sealed connector.Sealed
	var kid, jwk string
	if err := k.pool.QueryRow(t.Context(), `select kid, private_key_ciphertext, private_key_key_id, public_jwk::text from identity_keys`).
		Scan(&kid, &sealed.Ciphertext, &sealed.KeyID, &jwk); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(jwk, `"d"`) {
		t.Errorf("the public JWK holds a private part: %s", jwk)
	}
	der, err := k.box.Open("identity-key:"+kid, sealed)
	if err != nil {
		t.Fatalf("the stored key does not open as the signing key of its kid: %v", err)
	}
	if _, err := x509.ParsePKCS8PrivateKey(der); err != nil {
		t.Errorf("the sealed key is no PKCS #8 key: %v", err)
	}
	// The associated data binds it to its kid: under another name it does not open.
	if _, err := k.box.Open("identity-pairwise", sealed); err == nil {
		t.Error("the sealed signing key opened under another name")
	}
}

func headerKID(t testing.TB, tok string) string {
	t.Helper()
	parsed, err := jwt.ParseSigned(tok, []jose.SignatureAlgorithm{identity.Algorithm})
	if err != nil || len(parsed.Headers) != 1 {
		t.Fatalf("parse token: %v", err)
	}
	return parsed.Headers[0].KeyID
}

// claimsOf reads the claims without verifying (the verifying tests use identitytest).
func claimsOf(t testing.TB, tok string) map[string]any {
	t.Helper()
	parsed, err := jwt.ParseSigned(tok, []jose.SignatureAlgorithm{identity.Algorithm})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := parsed.UnsafeClaimsWithoutVerification(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func publishedKIDs(t testing.TB, iss *identity.Issuer) []string {
	t.Helper()
	set, err := iss.JWKS(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var kids []string
	for _, k := range set.Keys {
		kids = append(kids, k.KeyID)
	}
	return kids
}

func TestToken_without_issuer_is_ErrNoIssuer(t *testing.T) {
	t.Parallel()
	iss := identity.New(identity.Options{})
	if _, err := iss.Token(t.Context(), "t", "secret-user-id", "https://a/card"); err != identity.ErrNoIssuer || strings.Contains(err.Error(), "secret-user-id") {
		t.Errorf("err = %v, want ErrNoIssuer without the user id", err)
	}
}

// BenchmarkToken_cached is the turn path's cost of the header once a token is cached.
func BenchmarkToken_cached(b *testing.B) {
	k := newKeyDB(b)
	iss := k.issuer(nil)
	ctx := context.Background()
	if _, err := iss.Token(ctx, "t", "u", "https://agent.example/card"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := iss.Token(ctx, "t", "u", "https://agent.example/card"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkToken_signed is the cost without the cache: a new user on every call.
func BenchmarkToken_signed(b *testing.B) {
	k := newKeyDB(b)
	iss := k.issuer(nil)
	ctx := context.Background()
	if _, err := iss.Token(ctx, "t", "u", "https://agent.example/card"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := iss.Token(ctx, "t", "user-"+string(rune('a'+i%26))+time.Now().String(), "https://agent.example/card"); err != nil {
			b.Fatal(err)
		}
	}
}
