package cardfetch

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzValidate: Validate never panics, whatever the bytes; Valid agrees with the problems; every
// problem is complete; and the card is kept exactly when it was JSON.
func FuzzValidate(f *testing.F) {
	dir := fixturesDir(f)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") || filepath.Base(p) == "expected.json" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f.Add(b)
		return nil
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"skills": [{"id": 1}], "security": [{"k": "x"}, "apiKey", 3], "securitySchemes": {"k": {"type": "apiKey", "in": "header", "name": "K"}}}`))
	f.Add([]byte(`{"capabilities": {"extensions": [{"uri": "` + IntentExtensionEN + `", "params": {"skills": [{"id": "a", "inputSchema": {}}, 1]}}]}, "skills": [{"id": "a", "inputSchema": []}]}`))
	f.Add([]byte(`{"preferredTransport": "GRPC", "additionalInterfaces": [{"transport": "JSONRPC", "url": "http://x"}], "authentication": {"schemes": "Basic"}, "supportedInterfaces": []}`))

	v := New(Options{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		r := v.Validate(raw)
		checkInvariants(t, r)
		invalidJSON := false
		for _, p := range r.Problems {
			invalidJSON = invalidJSON || p.Code == CodeInvalidJSON
		}
		if (r.Card == nil) != invalidJSON {
			t.Errorf("Card kept = %v but invalid_json reported = %v", r.Card != nil, invalidJSON)
		}
		if r.Card != nil && !json.Valid(r.Card) {
			t.Errorf("Card is not JSON: %q", r.Card)
		}
		for _, s := range r.Profile.Skills {
			if s.InputSchema != nil && !json.Valid(s.InputSchema) {
				t.Errorf("InputSchema of %q is not JSON: %q", s.ID, s.InputSchema)
			}
		}
	})
}
