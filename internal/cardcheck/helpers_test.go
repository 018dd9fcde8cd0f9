package cardcheck

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/a2a-connector/a2a-connector/internal/cardcheck/cardchecktest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// pc is a problem as expected.json names it: path and code.
type pc = cardchecktest.PathCode

// skill returns skills[i] of a card map for changing it.
func skill(c map[string]any, i int) map[string]any {
	return c["skills"].([]any)[i].(map[string]any)
}

func checkInvariants(t testing.TB, r Report) {
	t.Helper()
	cardchecktest.CheckProblems(t, r.Valid, r.Problems)
}
