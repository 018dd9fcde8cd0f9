package cardcheck

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2a-connector/a2a-connector/internal/cardcheck/cardchecktest"
)

// cardHasString reports whether the JSON card holds want as a string value (spaces trimmed).
func cardHasString(raw []byte, want string) bool {
	tree, err := parseJSON(bytes.TrimPrefix(raw, []byte("\xef\xbb\xbf")))
	if err != nil {
		return false
	}
	var walk func(v any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case string:
			return strings.TrimSpace(v) == strings.TrimSpace(want)
		case []any:
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		case map[string]any:
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(tree)
}

// FuzzValidate: Validate never panics, whatever the bytes; Valid agrees with the problems; every
// problem is complete; the card is kept exactly when it was JSON; and a chosen interface is one
// the card lists. The seeds hold both generations: the shared 0.x fixtures, the cards captured
// from @a2a-js/sdk 1.3.0, and 1.0 shapes the 1.0 parser branches on, so mutations reach it.
func FuzzValidate(f *testing.F) {
	for _, dir := range []string{cardchecktest.FixturesDir(f), filepath.Join("testdata", "sdkcards")} {
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
	}
	f.Add(v1Card(nil))
	f.Add(v1Card(func(c map[string]any) {
		c["supportedInterfaces"] = []any{iface("h:1", "GRPC", "1.0"), iface("http://x/0", "JSONRPC", "0.3"), iface("https://x/1", "JSONRPC", "1.0"), iface("https://x/2", "JSONRPC", "2")}
		c["securitySchemes"] = map[string]any{"a": apiKeyV1("header", "K"), "b": map[string]any{"scheme": map[string]any{"$case": "oauth2SecurityScheme", "value": nil}}, "c": map[string]any{"mtlsSecurityScheme": nil, "httpAuthSecurityScheme": 1}}
		c["securityRequirements"] = []any{map[string]any{"schemes": map[string]any{"a": map[string]any{"list": []any{}}, "b": nil}}, map[string]any{"c": []any{}}, map[string]any{"schemes": 1}, map[string]any{}}
		skill(c, 0)["securityRequirements"] = []any{map[string]any{"schemes": map[string]any{"z": map[string]any{"list": 1}}}}
		skill(c, 0)["inputModes"] = []any{}
	}))
	f.Add([]byte(`{"url": "https://x", "protocolVersion": "0.3", "preferredTransport": "GRPC", "supportedInterfaces": [{"url": "https://x", "protocolBinding": "JSONRPC", "protocolVersion": "1.0", "tenant": "t"}], "security": [], "securityRequirements": [{"schemes": {"k": []}}]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"skills": [{"id": 1}], "security": [{"k": "x"}, "apiKey", 3], "securitySchemes": {"k": {"type": "apiKey", "in": "header", "name": "K"}}}`))
	f.Add([]byte(`{"capabilities": {"extensions": [{"uri": "` + IntentExtensionEN + `", "params": {"skills": [{"id": "a", "inputSchema": {}}, 1]}}]}, "skills": [{"id": "a", "inputSchema": []}]}`))
	f.Add([]byte(`{"preferredTransport": "GRPC", "additionalInterfaces": [{"transport": "JSONRPC", "url": "http://x"}], "authentication": {"schemes": "Basic"}, "supportedInterfaces": []}`))

	v := New(Options{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		r := v.Check(raw)
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
		if r.Valid && r.Profile.EndpointURL == "" {
			t.Errorf("a valid card without an endpoint: %s", raw)
		}
		if r.Profile.EndpointURL != "" && !cardHasString(raw, r.Profile.EndpointURL) {
			t.Errorf("EndpointURL %q is not in the card", r.Profile.EndpointURL)
		}
		if fb := r.Profile.Fallback; fb != nil && ((generationOf(fb.ProtocolVersion) == generationOf(r.Profile.ProtocolVersion) &&
			fb.Binding == r.Profile.EndpointBinding) || fb.URL == "") {
			t.Errorf("Fallback %+v is not of another generation or binding than %q %q", fb, r.Profile.ProtocolVersion, r.Profile.EndpointBinding)
		}
		for _, s := range r.Profile.Skills {
			if s.InputSchema != nil && !json.Valid(s.InputSchema) {
				t.Errorf("InputSchema of %q is not JSON: %q", s.ID, s.InputSchema)
			}
		}
	})
}
