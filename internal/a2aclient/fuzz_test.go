package a2aclient

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/a2a-connector/a2a-connector/internal/a2a"

	"github.com/a2a-connector/a2a-connector/internal/a2a/a2av0"
)

// FuzzDecodeResponse feeds arbitrary bytes to the JSON-RPC response decoder: it must never
// panic, must return exactly one of an event or a typed error naming the method, and an event it
// returns must survive a round trip through the 0.x wire objects with the same type.
func FuzzDecodeResponse(f *testing.F) {
	for _, seed := range []string{
		rTask,
		rCompleted,
		`{"jsonrpc":"2.0","id":"req-1","result":{"kind":"message","messageId":"m","role":"agent","parts":[{"kind":"text","text":"hi"},{"kind":"file","file":{"uri":"u"}},{"kind":"data","data":[1]},{"kind":"x"}]}}`,
		`{"jsonrpc":"2.0","id":"req-1","result":{"taskId":"t","artifact":{"artifactId":"a","parts":[{"text":"no kind"}]},"append":true}}`,
		`{"jsonrpc":"2.0","id":"req-1","result":{"id":"t","status":{"state":"input-required","message":{"messageId":"q","parts":[]}}}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","data":"x"}}`,
		`{"jsonrpc":"2.0","id":"req-1","error":{"code":"-32001.0","message":"x"}}`,
		`{"jsonrpc":"1.0","id":"req-1","result":{}}`,
		`{"jsonrpc":"2.0","id":7,"result":{}}`,
		`[]`, `null`, `"x"`, `{}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := decodeResponse(a2av0.MethodMessageStream, data, "req-1")
		if (ev == nil) == (err == nil) {
			t.Fatalf("event %v and error %v", ev, err)
		}
		if err != nil {
			var rpc *a2a.RPCError
			var pe *a2a.ProtocolError
			if !errors.As(err, &rpc) && !errors.As(err, &pe) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			if !strings.HasPrefix(err.Error(), "a2a message/stream: ") {
				t.Fatalf("message %q does not name the method", err.Error())
			}
			return
		}
		raw, err := json.Marshal(v0Result(ev))
		if err != nil {
			t.Fatalf("marshal %T: %v", ev, err)
		}
		again, err := decodeEventV0(raw)
		if err != nil {
			t.Fatalf("decode of re-marshalled %s: %v", raw, err)
		}
		if eventName(again) != eventName(ev) {
			t.Fatalf("%s became %s", eventName(ev), eventName(again))
		}
	})
}

// FuzzDecodeEventV1 feeds arbitrary bytes to the A2A 1.0 result decoder: it must never panic,
// must return exactly one of an event or a *ProtocolError, and an event must come out in the
// spec's spelling (no 0.x state or role, no 0.3 CANCELLED left).
func FuzzDecodeEventV1(f *testing.F) {
	for _, seed := range []string{v1Task, v1Working, v1Chunk1, v1Chunk2, v1AskQuestion, v1MessageReply,
		`{"task":{"id":"t","status":{"state":"TASK_STATE_FOO"},"history":[{"role":"ROLE_USER","parts":[{"text":"x"}]}]}}`,
		`{"message":{"parts":[{"raw":"AA=="},{"url":""},{"data":null},{}]}}`,
		`{"statusUpdate":null,"artifactUpdate":{"artifact":{"parts":null}}}`,
	} {
		var env Response
		if json.Unmarshal([]byte(seed), &env) == nil && len(env.Result) > 0 {
			seed = string(env.Result)
		}
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := a2a.DecodeEventV1(data)
		if (ev == nil) == (err == nil) {
			t.Fatalf("event %v and error %v", ev, err)
		}
		if err != nil {
			var pe *a2a.ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T %v, want *ProtocolError", err, err)
			}
			return
		}
		var states []a2a.TaskState
		var roles []a2a.Role
		switch e := ev.(type) {
		case *a2a.Task:
			states = append(states, e.Status.State)
			for _, m := range e.History {
				roles = append(roles, m.Role)
			}
		case *a2a.TaskStatusUpdateEvent:
			states = append(states, e.Status.State)
			if e.Status.Message != nil {
				roles = append(roles, e.Status.Message.Role)
			}
		case *a2a.Message:
			roles = append(roles, e.Role)
		}
		for _, s := range states {
			if _, isV0 := a2a.StateOfV0(string(s)); isV0 || s == "TASK_STATE_CANCELLED" {
				t.Fatalf("state %q left in another spelling", s)
			}
		}
		for _, r := range roles {
			if r == "user" || r == "agent" {
				t.Fatalf("role %q left in the 0.x spelling", r)
			}
		}
		if eventName(ev) == "nothing" {
			t.Fatalf("event of type %T", ev)
		}
	})
}

// FuzzEncodeSendParams checks that the 0.x params of message/send and message/stream, written by
// hand when they can be (appendSendParams), are encoding/json's bytes for any text, metadata
// string or number and raw data part, and that what encoding/json refuses still fails.
func FuzzEncodeSendParams(f *testing.F) {
	f.Add("Hello <b>&</b>\u2028", "k", "v\xff", 1.5, []byte(`{ "a" : "<\u2028>" }`))
	f.Add("", "", "", 1e21, []byte(`[1, 2.50]`))
	f.Fuzz(func(t *testing.T, text, key, val string, num float64, raw []byte) {
		params := a2a.SendMessageRequest{
			Message: a2a.Message{Role: a2a.RoleUser, MessageID: val, ContextID: key, Parts: a2a.Parts{a2a.TextPart(text),
				{Kind: a2a.PartData, Data: raw, Metadata: map[string]any{val: num}}},
				Metadata: map[string]any{key: val, text: []any{num, key}}},
			Metadata: map[string]any{"n": num},
		}
		want, wantErr := json.Marshal(sendParamsToV0(&params))
		got, gotErr := v0Dialect{}.encodeParams(OpStreamMessage, &params, "")
		if (wantErr == nil) != (gotErr == nil) || string(want) != string(got) {
			t.Fatalf("got %q, %v\nwant %q, %v", got, gotErr, want, wantErr)
		}
	})
}
