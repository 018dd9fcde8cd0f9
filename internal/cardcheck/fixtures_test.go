package cardcheck

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/a2a-connector/a2a-connector/internal/cardcheck/cardchecktest"
)

// TestInsecureFixtureAllowedWhenHTTPAllowed: invalid/insecure-url.json is invalid only because
// plain http is not allowed (fixtures README).
func TestInsecureFixtureAllowedWhenHTTPAllowed(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(cardchecktest.FixturesDir(t), "invalid", "insecure-url.json"))
	if err != nil {
		t.Fatal(err)
	}
	rep := New(Options{AllowInsecureHTTP: true}).Check(raw)
	if !rep.Valid {
		t.Errorf("with AllowInsecureHTTP the card is invalid: %+v", rep.Problems)
	}
	if rep.Profile.EndpointURL != "http://plain.example.com/a2a" {
		t.Errorf("EndpointURL = %q", rep.Profile.EndpointURL)
	}
}
