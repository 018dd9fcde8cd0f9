package fixtureagent_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Handlers that hold a request open (slow streams, hung headers) must all return when the agent
// closes, and no client connection may outlive its test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
