package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// The live console-api publishes the caller-identity keys without a token, with cache headers,
// and the operator rotates them: the new key first, the old one still published.
func TestJWKSAndRotationOnTheLiveConsole(t *testing.T) {
	t.Parallel()
	const admin = "identity-admin-token-4f1c0e9b"
	m := openConsole(t, map[string]string{
		"DATABASE_URL":         testDB.NewDatabase(t).URL,
		"A2AC_SECRET_KEY":      base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{5}, 32)),
		"A2AC_ADMIN_TOKEN":     admin,
		"A2AC_IDENTITY_ISSUER": "https://console.platform.example",
	}, io.Discard)
	base := "http://" + m.Addr()
	kids := func() []string {
		t.Helper()
		resp, err := http.Get(base + "/.well-known/jwks.json")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var set struct {
			Keys []struct{ Kid, Alg, Kty, Crv, D string }
		}
		if err := json.NewDecoder(resp.Body).Decode(&set); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("JWKS: %s %v", resp.Status, err)
		}
		if cc, ct := resp.Header.Get("Cache-Control"), resp.Header.Get("Content-Type"); cc != "public, max-age=60" || ct != "application/jwk-set+json" {
			t.Errorf("JWKS headers: Cache-Control %q, Content-Type %q", cc, ct)
		}
		var out []string
		for _, k := range set.Keys {
			if k.Alg != "ES256" || k.Kty != "EC" || k.Crv != "P-256" || k.D != "" || k.Kid == "" {
				t.Errorf("published key %+v, want a public P-256 ES256 key with a kid", k)
			}
			out = append(out, k.Kid)
		}
		return out
	}
	first := kids()
	if len(first) != 1 {
		t.Fatalf("first JWKS kids = %v, want the one signing key", first)
	}
	rotate := func(token string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/v1/identity/keys/rotate", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	if resp := rotate("not-the-admin-token-000"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("rotate with a wrong token: %s, want 401", resp.Status)
	}
	resp := rotate(admin)
	var out struct {
		SigningKeyID             string
		RetiredKeysPublishedSecs int
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("rotate: %s %v", resp.Status, err)
	}
	if got := kids(); len(got) != 2 || got[0] != out.SigningKeyID || got[1] != first[0] || out.RetiredKeysPublishedSecs < 300 {
		t.Errorf("after the rotation: kids %v, answer %+v; want [new old] and at least 300 s of publication", got, out)
	}
}
