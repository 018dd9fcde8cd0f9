package a2av0

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// guessSeeds are results that state their kind, and ones built to make the one-pass decoding
// guess wrong.
var guessSeeds = []string{
	`{"kind":"task","id":"t","contextId":"c","status":{"state":"working"}}`,
	`{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"completed"},"final":true}`,
	`{"kind":"artifact-update","taskId":"t","contextId":"c","artifact":{"artifactId":"a-1","parts":[{"kind":"text","text":"x"},{"kind":"file","file":{"uri":"u"}},{"kind":"data","data":[1]},{"kind":"x"}]},"append":true}`,
	`{"contextId":"c","final":false,"kind":"status-update","status":{"message":{"kind":"message","messageId":"m","parts":[{"kind":"text","text":"?"}],"role":"agent"},"state":"input-required"},"taskId":"t"}`,
	`{"kind":"task","id":"t","status":{},"kind":null,"taskId":"x"}`,
	`{"kind":"task","kind":"message","messageId":"m","parts":[]}`,
	`{"KIND":"task","id":"t","Kind":"status-update","status":{}}`,
	`{"status":{"message":{"kind":"message"}},"kind": "status-update","taskId":"t"}`,
	`{"kind":"message","messageId":"m","parts":[{"kind":5}]}`,
	`{"kind":"message","metadata":{"kind":"task"}}`,
}

// The one-pass decoding (decodeEventByGuess) may only take a shortcut to the event the probe
// makes.
func TestGuess_agrees_with_the_probe(t *testing.T) {
	for _, s := range guessSeeds {
		checkGuess(t, []byte(s))
	}
}

func FuzzGuess(f *testing.F) {
	for _, s := range guessSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkGuess(t, data) })
}

func checkGuess(t *testing.T, data []byte) {
	t.Helper()
	if ev := decodeEventByGuess(data); ev != nil {
		want, err := decodeEventProbed(data)
		if err != nil {
			t.Errorf("%s: guessed %s, the probe fails: %v", data, ev.EventKind(), err)
		}
		if d := cmp.Diff(want, ev); d != "" {
			t.Errorf("%s: guessed event differs from the probe's (-want +got):\n%s", data, d)
		}
	}
}
