package cardfetch

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/cardcheck/cardchecktest"
)

// TestFetchExtended: the extended card is asked for with the credentials, by the method of the
// interface's generation, and its skills come back.
func TestFetchExtended(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(cardchecktest.FixturesDir(t), "valid", "bearer-1.0.json"))
	if err != nil {
		t.Fatal(err)
	}
	var card map[string]any
	if err := json.Unmarshal(raw, &card); err != nil {
		t.Fatal(err)
	}
	card["skills"] = append(card["skills"].([]any), map[string]any{"id": "refund", "name": "Refunds", "description": "Refunds an invoice.", "tags": []any{"billing"}})
	srv, client := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Method string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		if r.Header.Get("Authorization") != "Bearer t0ken" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		if req.Method != "GetExtendedAgentCard" && req.Method != "agent/getAuthenticatedExtendedCard" {
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": 1, "error": map[string]any{"code": -32601, "message": "no"}})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": 1, "result": card})
	}))
	f := New(Options{Client: client})
	for _, v := range []string{"1.0", "0.3.0"} {
		p := connector.CardProfile{EndpointURL: srv.URL + "/a2a", ProtocolVersion: v}
		skills, err := f.FetchExtended(t.Context(), p, http.Header{"Authorization": {"Bearer t0ken"}})
		if err != nil || len(skills) != 2 || skills[1].ID != "refund" {
			t.Errorf("%s: skills %+v, err %v", v, skills, err)
		}
		if _, err := f.FetchExtended(t.Context(), p, nil); err == nil {
			t.Errorf("%s: the extended card came without credentials", v)
		}
	}
}
