package cardfetch

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/cardcheck/cardchecktest"
)

// expectation is one entry of the fixtures' expected.json.
type expectation struct {
	Valid          *bool  `json:"valid"`
	Streaming      *bool  `json:"streaming"`
	APIKeyRequired *bool  `json:"apiKeyRequired"`
	CredentialKind string `json:"credentialKind"`
	Errors         []pc   `json:"errors"`
	Warnings       []pc   `json:"warnings"`
	FetchError     string `json:"fetchError"`
}

func readExpectations(t *testing.T, dir string) map[string]expectation {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("expected.json: %v", err)
	}
	out := map[string]expectation{}
	for name, v := range raw {
		if name == "_doc" {
			continue
		}
		var e expectation
		if err := json.Unmarshal(v, &e); err != nil {
			t.Fatalf("expected.json %s: %v", name, err)
		}
		out[name] = e
	}
	return out
}

// pendingFixtures are the shared fixtures that expect a capability the connector does not have
// yet, each with the open issue that brings it and the one problem the connector reports for it
// today. Registering such a card must keep failing with exactly that problem, never be accepted
// for an agent no turn could call: the test holds the connector to it, and fails as soon as the
// capability lands, so that the entry is removed and the shared expectation applies.
var pendingFixtures = map[string]struct {
	issue string
	today pc
}{}

// TestFixtures serves the shared card fixtures over real HTTPS on loopback and checks that
// fetching and validating each says exactly what expected.json says (for pendingFixtures: the
// one problem the connector reports until their issue lands).
func TestFixtures(t *testing.T) {
	t.Parallel()
	dir := cardchecktest.FixturesDir(t)
	want := readExpectations(t, dir)
	srv, client := tlsServer(t, http.FileServer(http.Dir(dir)))
	f := New(Options{Client: client})

	for name, exp := range want {
		if p, ok := pendingFixtures[name]; ok {
			refused := false
			exp = expectation{Valid: &refused, Errors: []pc{p.today}}
			t.Logf("%s: the shared fixtures expect it valid; refused until %s lands", name, p.issue)
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, rep, err := f.FetchAndValidate(t.Context(), srv.URL+"/"+name)
			if exp.FetchError != "" {
				var fe *FetchError
				if !errors.As(err, &fe) {
					t.Fatalf("FetchAndValidate error = %v, want a *FetchError of kind %s", err, exp.FetchError)
				}
				if string(fe.Kind) != exp.FetchError {
					t.Errorf("fetch error kind = %s, want %s (%v)", fe.Kind, exp.FetchError, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("FetchAndValidate: %v", err)
			}
			if got.ResolvedURL != srv.URL+"/"+name {
				t.Errorf("ResolvedURL = %q", got.ResolvedURL)
			}
			checkInvariants(t, rep)
			if exp.Valid != nil && rep.Valid != *exp.Valid {
				t.Errorf("Valid = %v, want %v; problems: %+v", rep.Valid, *exp.Valid, rep.Problems)
			}
			wantErrs := slices.Clone(exp.Errors)
			if wantErrs == nil {
				wantErrs = []pc{}
			}
			cardchecktest.SortPathCodes(wantErrs)
			if diff := cmp.Diff(wantErrs, cardchecktest.PathCodes(rep.Problems, connector.SeverityError)); diff != "" {
				t.Errorf("errors (-want +got):\n%s\nall problems: %+v", diff, rep.Problems)
			}
			gotWarn := cardchecktest.PathCodes(rep.Problems, connector.SeverityWarning)
			for _, w := range exp.Warnings {
				if !slices.Contains(gotWarn, w) {
					t.Errorf("warning %+v missing; got %+v", w, gotWarn)
				}
			}
			if exp.Streaming != nil && rep.Profile.Streaming != *exp.Streaming {
				t.Errorf("Streaming = %v, want %v", rep.Profile.Streaming, *exp.Streaming)
			}
			if exp.APIKeyRequired != nil && rep.Profile.APIKeyRequired != *exp.APIKeyRequired {
				t.Errorf("APIKeyRequired = %v, want %v", rep.Profile.APIKeyRequired, *exp.APIKeyRequired)
			}
			if exp.CredentialKind != "" && rep.Profile.CredentialKind != exp.CredentialKind {
				t.Errorf("CredentialKind = %q, want %q", rep.Profile.CredentialKind, exp.CredentialKind)
			}
			if len(rep.Card) == 0 || !json.Valid(rep.Card) {
				t.Errorf("Card = %q, want the card's JSON", rep.Card)
			}
		})
	}
}

// TestFixturesAllListed keeps expected.json and the fixture files in step: a card nobody
// states an expectation for would silently go untested.
func TestFixturesAllListed(t *testing.T) {
	t.Parallel()
	dir := cardchecktest.FixturesDir(t)
	want := readExpectations(t, dir)
	for _, sub := range []string{"valid", "invalid"} {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if _, ok := want[sub+"/"+e.Name()]; !ok {
				t.Errorf("fixture %s/%s has no entry in expected.json", sub, e.Name())
			}
		}
	}
}

// TestTestdataMatchesShared fails when the testdata copy of the fixtures has drifted from the
// shared originals (skipped in a clone without the shared folder).
func TestTestdataMatchesShared(t *testing.T) {
	t.Parallel()
	shared := filepath.Join("..", "..", "..", "shared", "fixtures", "cards")
	if _, err := os.Stat(shared); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("shared fixtures not found at %s: CI checks the testdata copy against them", shared)
		}
		t.Skip("shared fixtures not present beside the repo")
	}
	local := filepath.Join("testdata", "fixtures")
	err := filepath.WalkDir(shared, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(shared, p)
		a, _ := os.ReadFile(p)
		b, err := os.ReadFile(filepath.Join(local, rel))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("testdata/fixtures/%s differs from the shared fixture; refresh with: cp -r %s/. %s/", rel, shared, local)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
