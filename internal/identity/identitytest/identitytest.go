// Package identitytest verifies caller-identity tokens as an agent would, for tests: in Go
// with go-jose (the code docs/api.md shows agent developers) and in JavaScript with jose
// (testdata/verifier/verify.mjs, run by Node.js), both from the JWKS fetched over HTTP.
package identitytest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Caller is what a verified token says.
type Caller struct {
	KeyID  string
	Claims jwt.Claims
}

// --- the Go example of docs/api.md ---

// VerifyCaller checks the A2A-Caller-Identity header value of a call: signed (ES256) by a key
// of the platform's JWKS, issued by issuer, for this agent (its card URL), and not expired.
// A verifier that caches the JWKS fetches it again when it meets an unknown kid: the platform
// signs with a new key as soon as it rotates.
func VerifyCaller(ctx context.Context, hc *http.Client, jwksURL, issuer, cardURL, token string) (Caller, error) {
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return Caller{}, fmt.Errorf("caller identity: %w", err)
	}
	if len(tok.Headers) != 1 || tok.Headers[0].KeyID == "" {
		return Caller{}, errors.New("caller identity: no kid")
	}
	kid := tok.Headers[0].KeyID
	set, err := fetchJWKS(ctx, hc, jwksURL)
	if err != nil {
		return Caller{}, err
	}
	keys := set.Key(kid)
	if len(keys) == 0 {
		return Caller{}, fmt.Errorf("caller identity: kid %q not in the JWKS", kid)
	}
	var claims jwt.Claims
	if err := tok.Claims(keys[0].Key, &claims); err != nil {
		return Caller{}, fmt.Errorf("caller identity: %w", err)
	}
	// ValidateWithLeeway checks iss, aud, exp (and nbf, iat) against now, with a minute's
	// leeway for clock skew.
	if err := claims.ValidateWithLeeway(jwt.Expected{Issuer: issuer, AnyAudience: jwt.Audience{cardURL}, Time: time.Now()}, time.Minute); err != nil {
		return Caller{}, fmt.Errorf("caller identity: %w", err)
	}
	if claims.Subject == "" || claims.Expiry == nil || claims.IssuedAt == nil || claims.ID == "" {
		return Caller{}, errors.New("caller identity: sub, exp, iat or jti missing")
	}
	return Caller{KeyID: kid, Claims: claims}, nil
}

func fetchJWKS(ctx context.Context, hc *http.Client, jwksURL string) (jose.JSONWebKeySet, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, jwksURL, nil)
	if err != nil {
		return jose.JSONWebKeySet{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("jwks: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return jose.JSONWebKeySet{}, fmt.Errorf("jwks: %s", resp.Status)
	}
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&set); err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("jwks: %w", err)
	}
	return set, nil
}

// --- end of the example ---

// JSCaller is what verify.mjs printed for a verified token.
type JSCaller struct {
	User    string         `json:"user"`
	KeyID   string         `json:"kid"`
	Payload map[string]any `json:"payload"`
}

// VerifyJS verifies token with npm's jose (testdata/verifier), fetching the JWKS itself. It
// fails the test when Node.js is missing under CI=true, and skips it elsewhere.
func VerifyJS(t testing.TB, jwksURL, issuer, cardURL, token string) (JSCaller, error) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node not found: CI must install Node.js and npm for the caller-identity tests")
		}
		t.Skipf("node not found (%v): install Node.js >= 20 and npm to verify tokens with jose", err)
	}
	dir := verifierDir(t)
	installOnce.Do(func() { installErr = npmCI(dir) })
	if installErr != nil {
		t.Fatal(installErr)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "verify.mjs", jwksURL, issuer, cardURL, token)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return JSCaller{}, fmt.Errorf("node verify.mjs: %w: %s", err, stderr.String())
	}
	var c JSCaller
	if err := json.Unmarshal(out, &c); err != nil {
		t.Fatalf("verify.mjs printed %q: %v", out, err)
	}
	return c, nil
}

var (
	installOnce sync.Once
	installErr  error
)

func verifierDir(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("identitytest: no source path")
	}
	return filepath.Join(filepath.Dir(file), "..", "testdata", "verifier")
}

// npmCI installs the pinned jose unless node_modules already matches the lock file.
func npmCI(dir string) error {
	// Test binaries of several packages may install at once: one at a time, across processes.
	f, err := os.OpenFile(filepath.Join(dir, ".npm-ci.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing releases it anyway
	lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return err
	}
	stamp := filepath.Join(dir, "node_modules", ".a2ac-lock")
	if have, err := os.ReadFile(stamp); err == nil && bytes.Equal(have, lock) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm ci in %s: %w\n%s", dir, err, out)
	}
	return os.WriteFile(stamp, lock, 0o644)
}
