package a2aclient

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/a2a-connector/a2a-connector/internal/a2a"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// typicalStreamParams is a message/stream as the connector sends it: a text part, a file and a
// data part, and metadata with the kinds of values tenants put there (HTML-ish and non-ASCII
// text, numbers, nested objects, a list, null).
func typicalStreamParams() *a2a.SendMessageRequest {
	return &a2a.SendMessageRequest{
		Message: a2a.Message{
			Role: a2a.RoleUser, MessageID: "8d0e6a53-2b1c-4f7e-9a41-0c5d3e2f1b7a", ContextID: "ctx-1", TaskID: "task-1",
			Parts: a2a.Parts{
				a2a.TextPart("今天天气怎么样? <b>Tom & \"Jerry\"</b>\u2028\n"),
				{Kind: a2a.PartURL, URL: "https://x.example/a.png?a=1&b=2", Filename: "a.png", MediaType: "image/png"},
				{Kind: a2a.PartData, Data: json.RawMessage("{ \"b\": 1, \"a\": [true, null], \"h\": \"<&>\u2028\\u00e9\" }"), Metadata: map[string]any{"k": "v"}},
			},
			ReferenceTaskIDs: []string{"t-0"},
			Metadata: map[string]any{
				"chatId": "chat-9", "user": map[string]any{"name": "Zoë", "id": 42, "score": 0.1, "big": 1e21, "tiny": 1e-7},
				"tags": []any{"a", 1.5, false, nil}, "html": "<script>&</script>",
			},
			Extensions: []string{"https://ext.example/v1"},
		},
		Configuration: &a2a.SendMessageConfiguration{AcceptedOutputModes: []string{"text/plain", "application/json"}, ReturnImmediately: true, HistoryLength: new(3)},
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
	body, err := io.ReadAll(req.Body)
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
			`{"jsonrpc":"2.0","id":"req-1","method":"SendStreamingMessage","params":{"message":{"messageId":"8d0e6a53-2b1c-4f7e-9a41-0c5d3e2f1b7a","contextId":"ctx-1","taskId":"task-1","role":"ROLE_USER","parts":[{"text":"今天天气怎么样? \u003cb\u003eTom \u0026 \"Jerry\"\u003c/b\u003e\u2028\n"},{"url":"https://x.example/a.png?a=1\u0026b=2","filename":"a.png","mediaType":"image/png"},{"data":{"b":1,"a":[true,null],"h":"\u003c\u0026\u003e\u2028\u00e9"},"metadata":{"k":"v"}}],"metadata":{"chatId":"chat-9","html":"\u003cscript\u003e\u0026\u003c/script\u003e","tags":["a",1.5,false,null],"user":{"big":1e+21,"id":42,"name":"Zoë","score":0.1,"tiny":1e-7}},"extensions":["https://ext.example/v1"],"referenceTaskIds":["t-0"]},"configuration":{"acceptedOutputModes":["text/plain","application/json"],"historyLength":3,"returnImmediately":true},"metadata":{"a":2,"turn":"t-1","z":1},"tenant":"tn"}}`},
		{"v0 minimal", WireV0, OpSendMessage, &a2a.SendMessageRequest{Message: a2a.Message{MessageID: "m", Metadata: map[string]any{"bad": "a\xffb", "n": json.Number("1.50")}}}, "",
			`{"jsonrpc":"2.0","id":"req-1","method":"message/send","params":{"message":{"kind":"message","role":"user","parts":[],"messageId":"m","metadata":{"bad":"a\ufffdb","n":1.50}}}}`},
		{"v0 get", WireV0, OpGetTask, a2a.GetTaskRequest{ID: "t", HistoryLength: new(0)}, "",
			`{"jsonrpc":"2.0","id":"req-1","method":"tasks/get","params":{"id":"t","historyLength":0}}`},
		{"v1 cancel", WireV1, OpCancelTask, a2a.CancelTaskRequest{ID: "t", Metadata: map[string]any{"why": "<user>"}}, "tn",
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

// marshalBody must give encoding/json's bytes for any params: random messages with metadata of
// every JSON-ish kind (strings with HTML characters, U+2028, U+FFFD and invalid UTF-8, floats
// that switch notation, json.Number, nested maps and lists, raw data parts), and the errors'
// cases (NaN, invalid raw JSON) fail in both. On the 0.x wire the params are the 0.x objects the
// core model's request converts to (sendParamsToV0).
// Which fields the hand-written writers cover is checked by reflection (encode_parity_test.go);
// this test is about values.
func TestMarshalBody_gives_the_bytes_of_encoding_json(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	goodStrs := []string{"", "a", "<b>&amp;</b>", "\u2028\u2029", "Zoë 今天", `"\/` + "\t\n\x00\x1f", "é", "\u007f", "\b\f\r\u00a0"}
	badStrs := []string{"\ufffd", "a\xffb", "\xed\xa0\x80"} // taken to encoding/json
	str := func() string {
		if r.IntN(40) == 0 {
			return badStrs[r.IntN(len(badStrs))]
		}
		return goodStrs[r.IntN(len(goodStrs))]
	}
	nums := []float64{0, -0, 1, -1.5, 0.1, 1e20, 1e21, 123456789e13, 1e-6, 1e-7, 5e-324, math.MaxFloat64, 3.0000000000000004}
	var value func(depth int) any
	value = func(depth int) any {
		switch n := r.IntN(10); {
		case n == 0 && depth < 3:
			m := map[string]any{}
			for range r.IntN(4) {
				m[str()] = value(depth + 1)
			}
			return m
		case n == 1 && depth < 3:
			var l []any
			for range r.IntN(4) {
				l = append(l, value(depth+1))
			}
			return l
		case n == 2:
			return nums[r.IntN(len(nums))]
		case n == 3:
			return json.Number([]string{"1", "-0.5e3", "", "1.50"}[r.IntN(4)])
		case n == 4:
			return r.IntN(2) == 0
		case n == 5:
			return nil
		case n == 6:
			return []any{r.Int64(), r.IntN(100) - 50, []string{str()}, []string(nil), map[string]any(nil), []any(nil), map[string]any{}, []any{}}[r.IntN(8)]
		default:
			return str()
		}
	}
	metadata := func() map[string]any {
		if r.IntN(3) == 0 {
			return nil
		}
		if r.IntN(20) == 0 {
			return map[string]any{} // empty: omitted like nil
		}
		m, _ := value(2).(map[string]any)
		if m == nil {
			m = map[string]any{"k": value(1)}
		}
		return m
	}
	raws := []string{`{}`, `{ "a" : [1, 2.50, "<&>\u2028` + "\u2028\xff" + `"] }`, `{"b":[true, {"c" : "d"}]}`, `[true]`, `"s"`, `{"a":}`, ``, `null`}
	part := func() a2a.Part {
		switch r.IntN(5) {
		case 0:
			return a2a.Part{Kind: a2a.PartURL, URL: str(), Filename: str(), Metadata: metadata()}
		case 1:
			return a2a.Part{Kind: a2a.PartData, Data: json.RawMessage(raws[r.IntN(len(raws))])}
		case 2:
			return a2a.Part{Kind: a2a.PartRaw, Raw: []byte(str()), MediaType: str()}
		default:
			return a2a.Part{Kind: a2a.PartText, Text: str(), Metadata: metadata()}
		}
	}
	strs := func() []string {
		switch r.IntN(4) {
		case 0:
			return nil
		case 1:
			return []string{} // empty: omitted like nil
		default:
			return []string{str(), str()}[:1+r.IntN(2)]
		}
	}
	optInt := func() *int {
		if r.IntN(2) == 0 {
			return nil
		}
		return new(r.IntN(20) - 5)
	}
	config := func() *a2a.SendMessageConfiguration {
		if r.IntN(3) == 0 {
			return nil
		}
		return &a2a.SendMessageConfiguration{AcceptedOutputModes: strs(), HistoryLength: optInt(), ReturnImmediately: r.IntN(2) == 0}
	}
	fast, byHand := 0, 0 // cases written by go-json-experiment; by appendSendParams
	for i := range 3000 {
		m := a2a.Message{Role: []a2a.Role{a2a.RoleUser, a2a.RoleAgent, ""}[r.IntN(3)], MessageID: str(),
			ContextID: str(), TaskID: str(), ReferenceTaskIDs: strs(), Metadata: metadata(), Extensions: strs()}
		for range r.IntN(4) {
			m.Parts = append(m.Parts, part())
		}
		params := a2a.SendMessageRequest{Message: m, Configuration: config(), Metadata: metadata()}
		if i%50 == 0 {
			params.Metadata = map[string]any{"nan": math.NaN()}
		}
		v1In := params
		v1In.Configuration = nil // the 1.0 wire maps it (pinned above); want below has none
		v1Params, v1Err := v1Dialect{}.encodeParams(OpStreamMessage, &v1In, "")
		v0Params := sendParamsToV0(&params)
		for _, tc := range []struct {
			v         any
			got       []byte
			gotErr    error
			viaV1Wire bool
		}{
			{v: v0Params},
			{v: &params, viaV1Wire: true, got: v1Params, gotErr: v1Err},
		} {
			want, wantErr := json.Marshal(tc.v)
			if tc.viaV1Wire {
				w := v1SendParams{Message: v1MessageOf(&params.Message), Metadata: params.Metadata}
				want, wantErr = json.Marshal(w)
			} else {
				tc.got, tc.gotErr = marshalBody(tc.v)
			}
			if b, err := jsonv2.Marshal(tc.v, jsonv1.DefaultOptionsV1(), marshalBodyOptions); !tc.viaV1Wire && err == nil && !bytes.Contains(b, replacementChar) {
				fast++
			}
			if (wantErr == nil) != (tc.gotErr == nil) || string(want) != string(tc.got) {
				t.Fatalf("case %d (1.0 wire %v):\n got %q, %v\nwant %q, %v", i, tc.viaV1Wire, tc.got, tc.gotErr, want, wantErr)
			}
			if tc.viaV1Wire {
				continue
			}
			// The 0.x wire writes these params by hand when it can (appendSendParams): the
			// same bytes, and what it cannot write goes to marshalBody, errors included.
			got, gotErr := v0Dialect{}.encodeParams(OpStreamMessage, &params, "")
			if (wantErr == nil) != (gotErr == nil) || string(want) != string(got) {
				t.Fatalf("case %d (0.x wire params):\n got %q, %v\nwant %q, %v", i, got, gotErr, want, wantErr)
			}
			if b, ok := appendSendParams(nil, v0Params); ok {
				byHand++
				if string(b) != string(want) {
					t.Fatalf("case %d (by hand):\n got %q\nwant %q", i, b, want)
				}
			}
		}
	}
	if byHand < 1000 {
		t.Errorf("only %d of 3000 cases were written by hand", byHand)
	}
	t.Logf("%d of 3000 cases were written by hand", byHand)
	if fast < 1000 {
		t.Errorf("only %d of 3000 cases took the go-json-experiment path", fast)
	}
	t.Logf("%d of 3000 cases took the go-json-experiment path", fast)
}
