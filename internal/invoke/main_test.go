package invoke_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine has an owner: stream timers, background cancels and HTTP connections must all
// be gone when the tests end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
