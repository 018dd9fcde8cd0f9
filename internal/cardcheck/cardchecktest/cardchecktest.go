// Package cardchecktest holds what the tests of card handling share (internal/cardcheck judges
// cards, internal/cardfetch fetches them and has them judged): a valid card to change one thing
// in, problems as the path and code pairs the fixtures name, the invariants every report keeps,
// and where the shared fixture cards are. Only tests import it.
package cardchecktest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	connector "github.com/a2a-connector/a2a-connector"
)

// PathCode is a problem as the fixtures' expected.json names it: its path, then its code. It is
// an array so that the tests' long tables can write {"skills[0].id", "required"} without keys
// (vet asks for keys in literals of another package's structs).
type PathCode [2]string

// UnmarshalJSON reads expected.json's {"path": ..., "code": ...}.
func (pc *PathCode) UnmarshalJSON(b []byte) error {
	var v struct {
		Path string `json:"path"`
		Code string `json:"code"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*pc = PathCode{v.Path, v.Code}
	return nil
}

// PathCodes are the problems of severity sev, as sorted PathCodes (never nil).
func PathCodes(problems []connector.Problem, sev connector.Severity) []PathCode {
	out := []PathCode{}
	for _, p := range problems {
		if p.Severity == sev {
			out = append(out, PathCode{p.Path, p.Code})
		}
	}
	SortPathCodes(out)
	return out
}

// SortPathCodes sorts s by path, then code, as PathCodes returns them.
func SortPathCodes(s []PathCode) {
	slices.SortFunc(s, func(a, b PathCode) int {
		if c := strings.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return strings.Compare(a[1], b[1])
	})
}

// WantProblems fails t unless the errors and the warnings among problems are exactly these, in
// any order.
func WantProblems(t testing.TB, problems []connector.Problem, errors, warnings []PathCode) {
	t.Helper()
	for _, c := range []struct {
		what string
		sev  connector.Severity
		want []PathCode
	}{{"errors", connector.SeverityError, errors}, {"warnings", connector.SeverityWarning, warnings}} {
		want := append([]PathCode{}, c.want...)
		SortPathCodes(want)
		if diff := cmp.Diff(want, PathCodes(problems, c.sev)); diff != "" {
			t.Errorf("%s (-want +got):\n%s\nproblems: %+v", c.what, diff, problems)
		}
	}
}

// BaseCard is a valid A2A 0.2.5 card the table tests change one thing in.
func BaseCard() map[string]any {
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

// Card is BaseCard changed by mutate (nil: unchanged), as JSON.
func Card(mutate func(c map[string]any)) []byte {
	c := BaseCard()
	if mutate != nil {
		mutate(c)
	}
	return MustJSON(c)
}

// MustJSON marshals v, which the tests build from maps and slices that always marshal.
func MustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// CheckProblems fails t unless a report's problems keep their invariants: valid exactly when
// none is an error, every problem has a code, a message and a known severity, errors first.
func CheckProblems(t testing.TB, valid bool, problems []connector.Problem) {
	t.Helper()
	if valid != !connector.HasErrors(problems) {
		t.Errorf("Valid = %v but HasErrors = %v", valid, connector.HasErrors(problems))
	}
	seenWarning := false
	for _, p := range problems {
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

// FixturesDir finds the shared agent-card fixtures: $A2AC_FIXTURES_DIR when set, else the copy
// in internal/cardfetch/testdata/fixtures (so a clean clone works on its own; cardfetch serves
// them through the real fetch path), else the shared folder beside the repository.
func FixturesDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("A2AC_FIXTURES_DIR"); d != "" {
		return d
	}
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cardchecktest: cannot locate its own source file")
	}
	internal := filepath.Join(filepath.Dir(self), "..", "..")
	for _, d := range []string{
		filepath.Join(internal, "cardfetch", "testdata", "fixtures"),
		filepath.Join(internal, "..", "..", "shared", "fixtures", "cards"),
	} {
		if _, err := os.Stat(filepath.Join(d, "expected.json")); err == nil {
			return d
		}
	}
	t.Fatal("agent-card fixtures not found: set A2AC_FIXTURES_DIR or restore internal/cardfetch/testdata/fixtures")
	return ""
}
