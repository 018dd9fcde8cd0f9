package cardfetch

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/a2a-connector/a2a-connector/internal/cardcheck/cardchecktest"
	"github.com/a2a-connector/a2a-connector/internal/reqauth"
)

// TestFetchAuth: a card URL that answers 401 without credentials is fetched again with them
// (as Google's card endpoints need); an open card never sees them.
func TestFetchAuth(t *testing.T) {
	t.Parallel()
	card, err := os.ReadFile(filepath.Join(cardchecktest.FixturesDir(t), "valid", "bearer-1.0.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sawAuth atomic.Int32
	srv, client := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			sawAuth.Add(1)
		}
		if r.URL.Path != "/private.json" && r.URL.Path != "/open.json" {
			http.NotFound(w, r)
			return
		}
		if r.URL.Path == "/private.json" && r.Header.Get("Authorization") != "Bearer t0ken" {
			http.Error(w, "sign in", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(card)
	}))
	f := New(Options{Client: client})
	var asked atomic.Int32
	auth := func(context.Context) (reqauth.Func, error) {
		asked.Add(1)
		return reqauth.Header(http.Header{"Authorization": {"Bearer t0ken"}}), nil
	}

	if _, _, err := f.FetchAndValidateAuth(t.Context(), srv.URL+"/private.json", nil); err == nil {
		t.Fatal("a card behind authentication was fetched without credentials")
	}
	got, rep, err := f.FetchAndValidateAuth(t.Context(), srv.URL+"/private.json", auth)
	if err != nil || !rep.Valid || got.ResolvedURL != srv.URL+"/private.json" {
		t.Fatalf("with credentials: %v, valid %v, problems %+v", err, rep.Valid, rep.Problems)
	}
	if asked.Load() != 1 {
		t.Errorf("auth asked %d times, want 1", asked.Load())
	}
	before := sawAuth.Load()
	if _, _, err := f.FetchAndValidateAuth(t.Context(), srv.URL+"/open.json", auth); err != nil {
		t.Fatal(err)
	}
	if sawAuth.Load() != before || asked.Load() != 1 {
		t.Error("an open card was sent the credentials")
	}
}
