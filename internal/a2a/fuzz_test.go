package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// FuzzSSEReader feeds arbitrary bytes to the SSE reader: it must never panic, never return an
// event larger than its limit, and split the input the same way whether it arrives whole or one
// byte at a time.
func FuzzSSEReader(f *testing.F) {
	for _, seed := range []string{
		guideSSE,
		"data: a\r\n\r\ndata: b\r\rdata:c\n\n",
		"\xEF\xBB\xBF: keep-alive\n\nid: 1\nevent: ping\ndata: now\n\nretry: 10\n",
		"data: {\"a\":\ndata: 1}\n\ndata: tail-without-blank-line",
		"event: error\ndata: {\"code\":-32603,\"message\":\"x\"}\n\n",
		"data\ndata:\ndata:  x\n\n:" + strings.Repeat("c", 300) + "\n",
		"data: " + strings.Repeat("x", 300) + "\n\n",
		"\r\n\r\r\n\n",
	} {
		f.Add([]byte(seed), uint16(64))
	}
	f.Fuzz(func(t *testing.T, input []byte, limit uint16) {
		max := 1 + int(limit%512)
		whole, errWhole := readAllSSE(bytes.NewReader(input), max)
		split, errSplit := readAllSSE(iotest.OneByteReader(bytes.NewReader(input)), max)
		for _, ev := range whole {
			if len(ev.Data) > max {
				t.Fatalf("event of %d bytes with limit %d", len(ev.Data), max)
			}
		}
		if len(whole) != len(split) {
			t.Fatalf("whole input gave %d events, byte by byte %d", len(whole), len(split))
		}
		for i := range whole {
			if whole[i].Type != split[i].Type || !bytes.Equal(whole[i].Data, split[i].Data) {
				t.Fatalf("event %d differs: %+v vs %+v", i, whole[i], split[i])
			}
		}
		var pe *ProtocolError
		switch {
		case errWhole == io.EOF && errSplit == io.EOF:
		case errors.As(errWhole, &pe) && pe.Kind == ProtocolEventTooLarge && errors.As(errSplit, &pe) && pe.Kind == ProtocolEventTooLarge:
		default:
			t.Fatalf("ends differ or unexpected: %v vs %v", errWhole, errSplit)
		}
	})
}

// FuzzDecodeResponse feeds arbitrary bytes to the JSON-RPC response decoder: it must never
// panic, must return exactly one of an event or a typed error naming the method, and an event it
// returns must survive a marshal/decode round trip with the same kind.
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
		ev, err := decodeResponse(MethodMessageStream, data, "req-1")
		if (ev == nil) == (err == nil) {
			t.Fatalf("event %v and error %v", ev, err)
		}
		if err != nil {
			var rpc *RPCError
			var pe *ProtocolError
			if !errors.As(err, &rpc) && !errors.As(err, &pe) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			if !strings.HasPrefix(err.Error(), "a2a message/stream: ") {
				t.Fatalf("message %q does not name the method", err.Error())
			}
			return
		}
		raw, err := json.Marshal(ev)
		if err != nil {
			t.Fatalf("marshal %T: %v", ev, err)
		}
		again, err := DecodeEvent(raw)
		if err != nil {
			t.Fatalf("decode of re-marshalled %s: %v", raw, err)
		}
		if again.EventKind() != ev.EventKind() {
			t.Fatalf("kind %s became %s", ev.EventKind(), again.EventKind())
		}
	})
}

// FuzzDecodeEventV1 feeds arbitrary bytes to the A2A 1.0 result decoder: it must never panic,
// must return exactly one of an event or a *ProtocolError, and an event must come out in the
// neutral spelling (its kind set, no TASK_STATE_ or ROLE_ prefix left).
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
		ev, err := DecodeEventV1(data)
		if (ev == nil) == (err == nil) {
			t.Fatalf("event %v and error %v", ev, err)
		}
		if err != nil {
			var pe *ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T %v, want *ProtocolError", err, err)
			}
			return
		}
		var states []TaskState
		var roles []Role
		switch e := ev.(type) {
		case *Task:
			states = append(states, e.Status.State)
			for _, m := range e.History {
				roles = append(roles, m.Role)
			}
		case *TaskStatusUpdateEvent:
			states = append(states, e.Status.State)
			if e.Status.Message != nil {
				roles = append(roles, e.Status.Message.Role)
			}
		case *Message:
			roles = append(roles, e.Role)
		}
		for _, s := range states {
			if strings.HasPrefix(string(s), "TASK_STATE_") {
				t.Fatalf("state %q left in the 1.0 spelling", s)
			}
		}
		for _, r := range roles {
			if r == "ROLE_USER" || r == "ROLE_AGENT" {
				t.Fatalf("role %q left in the 1.0 spelling", r)
			}
		}
		if ev.EventKind() == "" {
			t.Fatal("event without kind")
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
		params := MessageSendParams{
			Message: Message{Role: RoleUser, MessageID: val, ContextID: key, Parts: Parts{TextPart(text),
				{Kind: PartKindData, Data: raw, Metadata: map[string]any{val: num}}},
				Metadata: map[string]any{key: val, text: []any{num, key}}},
			Metadata: map[string]any{"n": num},
		}
		want, wantErr := json.Marshal(params)
		got, gotErr := v0Dialect{}.encodeParams(OpStreamMessage, &params, "")
		if (wantErr == nil) != (gotErr == nil) || string(want) != string(got) {
			t.Fatalf("got %q, %v\nwant %q, %v", got, gotErr, want, wantErr)
		}
	})
}
