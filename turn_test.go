package connector_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	connector "github.com/a2a-connector/a2a-connector"
)

// The engine's contract documents every code a Final may carry, in the table's order, and no
// other: a code added to the table and not to connector.proto (or the reverse) fails here.
func TestTurnErrorCodes_are_the_ones_connector_proto_documents(t *testing.T) {
	proto, err := os.ReadFile("api/proto/connector/v1/connector.proto")
	if err != nil {
		t.Fatal(err)
	}
	_, msg, ok := strings.Cut(string(proto), "\nmessage TurnError {")
	if !ok {
		t.Fatal("connector.proto has no message TurnError")
	}
	msg, _, _ = strings.Cut(msg, "\n}")
	var documented []string
	for _, m := range regexp.MustCompile(`(?m)^\s*//\s+- "([a-z_]+)":`).FindAllStringSubmatch(msg, -1) {
		documented = append(documented, m[1])
	}
	var inFinal []string
	for _, c := range connector.TurnErrorCodes() {
		if c.InFinal {
			inFinal = append(inFinal, c.Code)
		}
	}
	if diff := cmp.Diff(inFinal, documented); diff != "" {
		t.Errorf("TurnError.code in connector.proto (-table +proto):\n%s", diff)
	}
}

// docs/faults.md says which fault ends a turn with which code: every code it names is one of
// the table's, and every code of the table is named there.
func TestTurnErrorCodes_are_the_ones_faults_md_names(t *testing.T) {
	doc, err := os.ReadFile("docs/faults.md")
	if err != nil {
		t.Fatal(err)
	}
	var known []string
	for _, c := range connector.TurnErrorCodes() {
		known = append(known, c.Code)
	}
	// "FAILED · `timeout`", "CANCELED · `canceled`": the outcome and its error.code.
	for _, m := range regexp.MustCompile("· `([a-z_]+)`").FindAllStringSubmatch(string(doc), -1) {
		if !slices.Contains(known, m[1]) {
			t.Errorf("docs/faults.md names error.code %q, which is not in connector.TurnErrorCodes", m[1])
		}
	}
	for _, c := range known {
		if !strings.Contains(string(doc), "· `"+c+"`") {
			t.Errorf("docs/faults.md names no fault that ends a turn with %q", c)
		}
	}
}

func TestTurnErrorCodes_are_distinct(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range connector.TurnErrorCodes() {
		if seen[c.Code] || c.Code == "" || c.Meaning == "" {
			t.Errorf("code %q: empty or listed twice", c.Code)
		}
		seen[c.Code] = true
	}
}
