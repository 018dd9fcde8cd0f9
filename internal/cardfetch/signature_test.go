package cardfetch

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/cardcheck/cardchecktest"
)

const signerDir = "testdata/signer"

// signCard signs card with @a2a-js/sdk 1.3.0's generateAgentCardSignature (testdata/signer),
// its protected header naming jku and kid, and returns the signed card and the public JWKS.
func signCard(t *testing.T, card []byte, jku, kid string) (signed, jwks []byte) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node not found: CI must install Node.js and npm for the card signature tests")
		}
		t.Skipf("node not found (%v): install Node.js >= 20 and npm to run the card signature tests", err)
	}
	installSigner(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "sign.mjs", jku, kid)
	cmd.Dir = signerDir
	cmd.Stdin = bytes.NewReader(card)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node sign.mjs: %v\n%s", err, stderr.String())
	}
	var res struct {
		JWKS          json.RawMessage `json:"jwks"`
		Signed        json.RawMessage `json:"signed"`
		VerifiedBySDK bool            `json:"verifiedBySdk"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("sign.mjs output: %v\n%s", err, out)
	}
	if !res.VerifiedBySDK {
		t.Fatal("the SDK does not verify its own signature")
	}
	return res.Signed, res.JWKS
}

var signerInstall sync.Mutex

// installSigner runs npm ci in testdata/signer once per checkout of its lock file.
func installSigner(t *testing.T) {
	t.Helper()
	signerInstall.Lock()
	defer signerInstall.Unlock()
	lock, err := os.ReadFile(filepath.Join(signerDir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	stamp := filepath.Join(signerDir, "node_modules", ".a2ac-lock")
	if b, err := os.ReadFile(stamp); err == nil && bytes.Equal(b, lock) {
		return
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("npm not found: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error")
	cmd.Dir = signerDir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", signerDir, err, out)
	}
	if err := os.WriteFile(stamp, lock, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCardSignatures: cards signed by @a2a-js/sdk's own signing helper verify; tampered copies
// are refused at signatures[0] signature_invalid; a key that cannot be had is a warning.
func TestCardSignatures(t *testing.T) {
	t.Parallel()
	card, err := os.ReadFile(filepath.Join(cardchecktest.FixturesDir(t), "valid", "bearer-1.0.json"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	var mu sync.Mutex
	srv, client := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		b, ok := files[r.URL.Path]
		mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	}))
	signed, jwks := signCard(t, card, srv.URL+"/jwks.json", "card-key-1")
	tampered := bytes.Replace(signed, []byte("Answers billing questions"), []byte("Answers billing questionz"), 1)
	unknownKid, _ := signCard(t, card, srv.URL+"/jwks.json", "not-in-the-set")
	blockedJku, _ := signCard(t, card, "https://169.254.169.254/jwks.json", "card-key-1")
	// Whitespace and member order of the served card do not matter: the payload is canonical.
	var reordered map[string]any
	if err := json.Unmarshal(signed, &reordered); err != nil {
		t.Fatal(err)
	}
	pretty, _ := json.MarshalIndent(reordered, "", "    ")

	mu.Lock()
	files["/jwks.json"] = jwks
	files["/signed.json"] = signed
	files["/pretty.json"] = pretty
	files["/tampered.json"] = tampered
	files["/unknown-kid.json"] = unknownKid
	files["/blocked-jku.json"] = blockedJku
	files["/unsigned.json"] = card
	mu.Unlock()

	f := New(Options{Client: client})
	for _, c := range []struct {
		path      string
		want      connector.CardSignature
		valid     bool
		errors    []pc
		warnings  []pc
		noMessage string
	}{
		{path: "/signed.json", want: connector.CardSignature{Status: "verified", KeyID: "card-key-1"}, valid: true},
		{path: "/pretty.json", want: connector.CardSignature{Status: "verified", KeyID: "card-key-1"}, valid: true},
		{path: "/tampered.json", want: connector.CardSignature{Status: "invalid", KeyID: "card-key-1"}, errors: []pc{{"signatures[0]", "signature_invalid"}}},
		{path: "/unknown-kid.json", want: connector.CardSignature{Status: "unverifiable", KeyID: "not-in-the-set"}, valid: true, warnings: []pc{{"signatures[0]", "signature_unverifiable"}}},
		{path: "/blocked-jku.json", want: connector.CardSignature{Status: "unverifiable", KeyID: "card-key-1"}, valid: true, warnings: []pc{{"signatures[0]", "signature_unverifiable"}}},
		{path: "/unsigned.json", want: connector.CardSignature{Status: "unsigned"}, valid: true},
	} {
		t.Run(strings.TrimPrefix(c.path, "/"), func(t *testing.T) {
			_, rep, err := f.FetchAndValidate(t.Context(), srv.URL+c.path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, rep.Profile.CardSignature); diff != "" {
				t.Errorf("CardSignature (-want +got):\n%s", diff)
			}
			if rep.Valid != c.valid {
				t.Errorf("Valid = %v, want %v; problems %+v", rep.Valid, c.valid, rep.Problems)
			}
			wantErrs := c.errors
			if wantErrs == nil {
				wantErrs = []pc{}
			}
			if diff := cmp.Diff(wantErrs, cardchecktest.PathCodes(rep.Problems, connector.SeverityError)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			gotWarn := cardchecktest.PathCodes(rep.Problems, connector.SeverityWarning)
			for _, w := range c.warnings {
				if !slices.Contains(gotWarn, w) {
					t.Errorf("warning %+v missing; got %+v", w, gotWarn)
				}
			}
		})
	}
}
