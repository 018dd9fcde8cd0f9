package a2a

import (
	"context"
	"encoding/json"
	"testing"
)

// typicalStreamParams is a message/stream as the connector sends it: a text part, a file and a
// data part, and metadata with the kinds of values tenants put there (HTML-ish and non-ASCII
// text, numbers, nested objects, a list, null).
func typicalStreamParams() MessageSendParams {
	return MessageSendParams{
		Message: Message{
			Role: RoleUser, MessageID: "8d0e6a53-2b1c-4f7e-9a41-0c5d3e2f1b7a", ContextID: "ctx-1", TaskID: "task-1",
			Parts: Parts{
				TextPart("今天天气怎么样? <b>Tom & \"Jerry\"</b>\u2028\n"),
				{Kind: PartKindFile, File: &FileContent{Name: "a.png", MimeType: "image/png", URI: "https://x.example/a.png?a=1&b=2"}},
				{Kind: PartKindData, Data: json.RawMessage("{ \"b\": 1, \"a\": [true, null], \"h\": \"<&>\u2028\\u00e9\" }"), Metadata: map[string]any{"k": "v"}},
			},
			ReferenceTaskIDs: []string{"t-0"},
			Metadata: map[string]any{
				"chatId": "chat-9", "user": map[string]any{"name": "Zoë", "id": 42, "score": 0.1, "big": 1e21, "tiny": 1e-7},
				"tags": []any{"a", 1.5, false, nil}, "html": "<script>&</script>",
			},
			Extensions: []string{"https://ext.example/v1"},
		},
		Configuration: &MessageSendConfiguration{AcceptedOutputModes: []string{"text/plain", "application/json"}, Blocking: new(false), HistoryLength: new(3)},
		Metadata:      map[string]any{"turn": "t-1", "z": 1, "a": 2},
	}
}

func requestBody(t testing.TB, w Wire, op Op, params any, tenant string) string {
	t.Helper()
	d := dialectOf(w)
	cl := call{d: d, op: op, method: d.method(op), id: "req-1"}
	req, err := newRequest(context.Background(), Endpoint{URL: "http://127.0.0.1:1/", Wire: w, Tenant: tenant}, cl, params, "text/event-stream")
	if err != nil {
		t.Fatal(err)
	}
	body, err := req.BodyBytes()
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// The request bytes are pinned: how they are produced may change, what the agent receives may not.
func TestRequestBody_bytes_are_pinned(t *testing.T) {
	for _, tc := range []struct {
		name   string
		w      Wire
		op     Op
		params any
		tenant string
		want   string
	}{
		{"v0 stream", WireV0, OpStreamMessage, typicalStreamParams(), "",
			`{"jsonrpc":"2.0","id":"req-1","method":"message/stream","params":{"message":{"kind":"message","role":"user","parts":[{"kind":"text","text":"今天天气怎么样? \u003cb\u003eTom \u0026 \"Jerry\"\u003c/b\u003e\u2028\n"},{"kind":"file","file":{"name":"a.png","mimeType":"image/png","uri":"https://x.example/a.png?a=1\u0026b=2"}},{"kind":"data","data":{"b":1,"a":[true,null],"h":"\u003c\u0026\u003e\u2028\u00e9"},"metadata":{"k":"v"}}],"messageId":"8d0e6a53-2b1c-4f7e-9a41-0c5d3e2f1b7a","contextId":"ctx-1","taskId":"task-1","referenceTaskIds":["t-0"],"metadata":{"chatId":"chat-9","html":"\u003cscript\u003e\u0026\u003c/script\u003e","tags":["a",1.5,false,null],"user":{"big":1e+21,"id":42,"name":"Zoë","score":0.1,"tiny":1e-7}},"extensions":["https://ext.example/v1"]},"configuration":{"acceptedOutputModes":["text/plain","application/json"],"blocking":false,"historyLength":3},"metadata":{"a":2,"turn":"t-1","z":1}}}`},
		{"v1 stream", WireV1, OpStreamMessage, typicalStreamParams(), "tn",
			`{"jsonrpc":"2.0","id":"req-1","method":"SendStreamingMessage","params":{"message":{"messageId":"8d0e6a53-2b1c-4f7e-9a41-0c5d3e2f1b7a","contextId":"ctx-1","taskId":"task-1","role":"ROLE_USER","parts":[{"text":"今天天气怎么样? \u003cb\u003eTom \u0026 \"Jerry\"\u003c/b\u003e\u2028\n"},{"url":"https://x.example/a.png?a=1\u0026b=2","filename":"a.png","mediaType":"image/png"},{"data":{"b":1,"a":[true,null],"h":"\u003c\u0026\u003e\u2028\u00e9"},"metadata":{"k":"v"}}],"metadata":{"chatId":"chat-9","html":"\u003cscript\u003e\u0026\u003c/script\u003e","tags":["a",1.5,false,null],"user":{"big":1e+21,"id":42,"name":"Zoë","score":0.1,"tiny":1e-7}},"extensions":["https://ext.example/v1"],"referenceTaskIds":["t-0"]},"configuration":{"acceptedOutputModes":["text/plain","application/json"],"historyLength":3},"metadata":{"a":2,"turn":"t-1","z":1},"tenant":"tn"}}`},
		{"v0 minimal", WireV0, OpSendMessage, MessageSendParams{Message: Message{MessageID: "m", Metadata: map[string]any{"bad": "a\xffb", "n": json.Number("1.50")}}}, "",
			`{"jsonrpc":"2.0","id":"req-1","method":"message/send","params":{"message":{"kind":"message","role":"","parts":[],"messageId":"m","metadata":{"bad":"a\ufffdb","n":1.50}}}}`},
		{"v0 get", WireV0, OpGetTask, TaskQueryParams{ID: "t", HistoryLength: new(0)}, "",
			`{"jsonrpc":"2.0","id":"req-1","method":"tasks/get","params":{"id":"t","historyLength":0}}`},
		{"v1 cancel", WireV1, OpCancelTask, TaskIDParams{ID: "t", Metadata: map[string]any{"why": "<user>"}}, "tn",
			`{"jsonrpc":"2.0","id":"req-1","method":"CancelTask","params":{"id":"t","metadata":{"why":"\u003cuser\u003e"},"tenant":"tn"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := requestBody(t, tc.w, tc.op, tc.params, tc.tenant); got != tc.want {
				t.Errorf("body\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// BenchmarkEncodeRequest is the cost of writing the body of a typical message/stream request.
func BenchmarkEncodeRequest(b *testing.B) {
	for _, w := range []Wire{WireV0, WireV1} {
		b.Run("v"+w.String(), func(b *testing.B) {
			params := typicalStreamParams()
			b.ReportAllocs()
			for b.Loop() {
				requestBody(b, w, OpStreamMessage, params, "")
			}
		})
	}
}
