package a2aclient

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-connector/a2a-connector/internal/a2a/a2av0"
)

func TestPlainResult(t *testing.T) {
	for _, tc := range []struct {
		data, id, want string
	}{
		{`{"jsonrpc":"2.0","id":"req-1","result":{"kind":"task"}}`, "req-1", `{"kind":"task"}`},
		{`{"id":"req-1","jsonrpc":"2.0","result":{"a":1} }` + "\r\n", "req-1", `{"a":1} `},
		{`{"jsonrpc":"2.0","id":"req-1","result":{},"error":{}}`, "req-1", `{},"error":{}`},
		{`{"jsonrpc":"2.0","id":"req-2","result":{}}`, "req-1", ""},
		{`{"jsonrpc":"2.0","id":"req-1","result":null}`, "req-1", ""},
		{`{"jsonrpc":"2.0","id":"req-1","result":[]}`, "req-1", ""},
		{`{"jsonrpc":"2.0","id":"req-1","result":{}`, "req-1", `{`}, // unchecked: does not decode
		{`{"jsonrpc": "2.0", "id": "req-1", "result": {}}`, "req-1", ""},
		{` {"jsonrpc":"2.0","id":"req-1","result":{}}`, "req-1", ""},
		{`{"jsonrpc":"2.0","id":"a\"b","result":{}}`, `a"b`, ""},
		{`{"jsonrpc":"2.0","id":"é","result":{}}`, "é", ""},
		{`{"jsonrpc":"2.0","id":"","result":{}}`, "", `{}`},
		{`{"jsonrpc":"2.0","id":"req-1","result":`, "req-1", ""},
	} {
		if got := string(plainResult([]byte(tc.data), tc.id)); got != tc.want {
			t.Errorf("plainResult(%s, %q) = %q, want %q", tc.data, tc.id, got, tc.want)
		}
	}
}

// onePassSeeds are results that state their kind, and ones built to make the one-pass decoding
// guess wrong.
var onePassSeeds = []string{
	rTask, rCompleted, v1Task, v1Working, v1Chunk1, v1Chunk2, v1AskQuestion, v1MessageReply,
	`{"jsonrpc":"2.0","id":"req-1","result":{"kind":"artifact-update","taskId":"t","contextId":"c","artifact":{"artifactId":"a-1","parts":[{"kind":"text","text":"x"},{"kind":"file","file":{"uri":"u"}},{"kind":"data","data":[1]},{"kind":"x"}]},"append":true}}`,
	`{"id":"req-1","jsonrpc":"2.0","result":{"contextId":"c","final":false,"kind":"status-update","status":{"message":{"kind":"message","messageId":"m","parts":[{"kind":"text","text":"?"}],"role":"agent"},"state":"input-required"},"taskId":"t"}}`,
	`{"jsonrpc":"2.0","id":"req-1","result":{"kind":"task","id":"t","status":{},"kind":null,"taskId":"x"}}`,
	`{"jsonrpc":"2.0","id":"req-1","result":{"kind":"task","kind":"message","messageId":"m","parts":[]}}`,
	`{"jsonrpc":"2.0","id":"req-1","result":{"KIND":"task","id":"t","Kind":"status-update","status":{}}}`,
	`{"jsonrpc":"2.0","id":"req-1","result":{"status":{"message":{"kind":"message"}},"kind": "status-update","taskId":"t"}}`,
	`{"jsonrpc":"2.0","id":"req-1","result":{"kind":"message","messageId":"m","parts":[{"kind":5}]}}`,
	`{"jsonrpc":"2.0","id":"req-1","result":{"kind":"message","messageId":"m"},"error":{"code":1,"message":"x"}}`,
	`{"jsonrpc":"2.0","id":"req-1","result":{"kind":"message","messageId":"m"},"result":null}`,
	`{"jsonrpc":"2.0","id":"req-1","result":{"kind":"message","metadata":{"kind":"task"}}}`,
	`{"jsonrpc":"2.0","id":"req-1","result":{"task":{"id":"t"},"statusUpdate":{"status":{"state":"TASK_STATE_WORKING"}}}}`,
}

// The one-pass decoding (plainResult) may only take a shortcut to the event the two passes make
// (a2av0's guess of the kind is checked against its probe in that package).
func TestOnePass_agrees_with_two_passes(t *testing.T) {
	for _, s := range onePassSeeds {
		checkOnePass(t, []byte(s))
	}
}

func FuzzOnePass(f *testing.F) {
	for _, s := range onePassSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkOnePass(t, data) })
}

func checkOnePass(t *testing.T, data []byte) {
	t.Helper()
	for _, cl := range []call{
		{d: v0Dialect{}, op: OpStreamMessage, method: a2av0.MethodMessageStream, id: "req-1"},
		{d: v1Dialect{}, op: OpStreamMessage, method: MethodSendStreamingMessage, id: "req-1"},
		{d: v1Dialect{}, op: OpGetTask, method: MethodGetTask, id: "req-1"},
	} {
		got, gotErr := cl.decode(data)
		want, wantErr := cl.decodeTwoPass(data)
		if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
			t.Errorf("%s %s: error %v, two passes %v", cl.method, data, gotErr, wantErr)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s %s: event differs from the two passes' (-want +got):\n%s", cl.method, data, d)
		}
	}
}

func TestIDMatches(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
		ok        bool
	}{
		{`"req-1"`, "req-1", true},
		{`"\u0072eq-1"`, "req-1", true},
		{`"REQ-1"`, "req-1", false},
		{`"req-1 "`, "req-1", false},
		{`7`, "7", false},
		{`null`, "", true}, // null leaves the string empty
		{`""`, "", true},
		{`"é"`, "é", true},
		{`"a\"b"`, `a"b`, true},
		{`"a\ufffdb"`, "a\xffb", false},
	} {
		if got := idMatches([]byte(tc.raw), tc.want); got != tc.ok {
			t.Errorf("idMatches(%s, %q) = %v, want %v", tc.raw, tc.want, got, tc.ok)
		}
	}
}
