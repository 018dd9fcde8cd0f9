package cardcheck

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	connector "github.com/a2a-connector/a2a-connector"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fixturesDir finds the shared agent-card fixtures: $A2AC_FIXTURES_DIR when set, else the copy
// in internal/cardfetch's testdata (so a clean clone works on its own; cardfetch serves them
// through the real fetch path), else the shared folder beside the repo.
func fixturesDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("A2AC_FIXTURES_DIR"); d != "" {
		return d
	}
	for _, d := range []string{
		filepath.Join("..", "cardfetch", "testdata", "fixtures"),
		filepath.Join("..", "..", "..", "shared", "fixtures", "cards"),
	} {
		if _, err := os.Stat(filepath.Join(d, "expected.json")); err == nil {
			return d
		}
	}
	t.Fatal("agent-card fixtures not found: set A2AC_FIXTURES_DIR or restore internal/cardfetch/testdata/fixtures")
	return ""
}

// pc is a problem as expected.json names it: path and code.
type pc struct {
	Path string `json:"path"`
	Code string `json:"code"`
}

func pcs(problems []connector.Problem, sev connector.Severity) []pc {
	out := []pc{}
	for _, p := range problems {
		if p.Severity == sev {
			out = append(out, pc{p.Path, p.Code})
		}
	}
	sortPCs(out)
	return out
}

func sortPCs(s []pc) {
	slices.SortFunc(s, func(a, b pc) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Code, b.Code)
	})
}

// baseCard is a valid card the table tests change one thing in.
func baseCard() map[string]any {
	return map[string]any{
		"name":               "Test agent",
		"description":        "Answers test questions.",
		"url":                "https://agent.example.com/a2a",
		"version":            "1.0.0",
		"protocolVersion":    "0.2.5",
		"capabilities":       map[string]any{"streaming": true},
		"defaultInputModes":  []any{"text/plain"},
		"defaultOutputModes": []any{"text/plain"},
		"skills": []any{
			map[string]any{"id": "s1", "name": "Skill one", "description": "Does one thing.", "tags": []any{"demo"}},
		},
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// card is baseCard changed by mutate, as JSON.
func card(mutate func(c map[string]any)) []byte {
	c := baseCard()
	if mutate != nil {
		mutate(c)
	}
	return mustJSON(c)
}

// skill returns skills[i] of a card map for changing it.
func skill(c map[string]any, i int) map[string]any {
	return c["skills"].([]any)[i].(map[string]any)
}

func checkInvariants(t testing.TB, r Report) {
	t.Helper()
	if r.Valid != !connector.HasErrors(r.Problems) {
		t.Errorf("Valid = %v but HasErrors = %v", r.Valid, connector.HasErrors(r.Problems))
	}
	seenWarning := false
	for _, p := range r.Problems {
		if p.Code == "" || p.Message == "" {
			t.Errorf("problem without code or message: %+v", p)
		}
		switch p.Severity {
		case connector.SeverityError:
			if seenWarning {
				t.Errorf("error %+v comes after a warning", p)
			}
		case connector.SeverityWarning:
			seenWarning = true
		default:
			t.Errorf("problem with severity %q: %+v", p.Severity, p)
		}
	}
}
