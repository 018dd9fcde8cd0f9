package a2aclient

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/a2a-connector/a2a-connector/internal/a2a"

	a2apbv0 "github.com/a2aproject/a2a-go/a2apb"
	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The gRPC binding converts protos straight to the core model; it used to write them as the
// 1.0 JSON (protojson) and decode that. These tests hold the two side by side: the events, and
// the requests, must be the ones the JSON path made.

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// richPBMessage is a 1.0 message with every field set and a part of every content.
func richPBMessage(t *testing.T, role a2apb.Role) *a2apb.Message {
	md := mustStruct(t, map[string]any{"n": 1.5, "s": "<&>", "l": []any{true, nil, "x"}, "o": map[string]any{"k": "v"}})
	data, _ := structpb.NewValue(map[string]any{"b": 1, "a": []any{true, nil}})
	return &a2apb.Message{
		MessageId: "m-1", ContextId: "c-1", TaskId: "t-1", Role: role,
		Parts: []*a2apb.Part{
			{Content: &a2apb.Part_Text{Text: "héllo <b>"}, Metadata: md},
			{Content: &a2apb.Part_Raw{Raw: []byte{0, 1, 2, 250}}, Filename: "a.bin", MediaType: "application/octet-stream"},
			{Content: &a2apb.Part_Url{Url: "https://x.example/a.png"}, Filename: "a.png", MediaType: "image/png"},
			{Content: &a2apb.Part_Data{Data: data}},
			{Content: &a2apb.Part_Data{Data: structpb.NewNullValue()}}, // dropped: data null
			{Filename: "nothing"}, // dropped: no content
			{Content: &a2apb.Part_Text{Text: ""}, MediaType: "text/plain"},
		},
		Metadata:         md,
		Extensions:       []string{"https://ext.example/v1"},
		ReferenceTaskIds: []string{"t-0"},
	}
}

func richPBTask(t *testing.T) *a2apb.Task {
	return &a2apb.Task{
		Id: "t-1", ContextId: "c-1",
		Status: &a2apb.TaskStatus{State: a2apb.TaskState_TASK_STATE_INPUT_REQUIRED, Message: richPBMessage(t, a2apb.Role_ROLE_AGENT),
			Timestamp: &timestamppb.Timestamp{Seconds: 1700000000, Nanos: 120000000}},
		Artifacts: []*a2apb.Artifact{{ArtifactId: "a-1", Name: "n", Description: "d", Parts: richPBMessage(t, 0).Parts,
			Metadata: &structpb.Struct{}, Extensions: []string{"e"}}, {ArtifactId: "a-2"}},
		History:  []*a2apb.Message{richPBMessage(t, a2apb.Role_ROLE_USER), {MessageId: "m-2"}},
		Metadata: mustStruct(t, map[string]any{"k": "v"}),
	}
}

// viaJSON is what the gRPC binding made of m before: its 1.0 JSON, decoded.
func viaJSON(t *testing.T, op Op, m proto.Message) a2a.Event {
	t.Helper()
	data, err := protojson.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := call{d: v1Dialect{}, op: op, method: "m"}.decodeREST(data)
	if err != nil {
		t.Fatalf("JSON path: %v", err)
	}
	return ev
}

// compactData rewrites the data parts' raw JSON compactly (protojson spaces its output at
// random), so that events compare by content.
func compactData(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			compactData(v.Elem())
		}
	case reflect.Struct:
		if p, ok := v.Addr().Interface().(*a2a.Part); ok && len(p.Data) > 0 {
			var x any
			if err := json.Unmarshal(p.Data, &x); err == nil {
				p.Data, _ = json.Marshal(x)
			}
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				compactData(v.Field(i))
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			compactData(v.Index(i))
		}
	}
}

func sameEvent(t *testing.T, got, want a2a.Event) {
	t.Helper()
	g, w := reflect.ValueOf(&got).Elem(), reflect.ValueOf(&want).Elem()
	compactData(g)
	compactData(w)
	if !reflect.DeepEqual(got, want) {
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		t.Errorf("event\n got %T %s\nwant %T %s", got, gj, want, wj)
	}
}

func TestEventFromPB_is_what_the_JSON_path_made(t *testing.T) {
	task := richPBTask(t)
	for _, tc := range []struct {
		name string
		op   Op
		m    proto.Message
	}{
		{"task", OpGetTask, task},
		{"empty task", OpCancelTask, &a2apb.Task{Id: "t"}},
		{"send task", OpSendMessage, &a2apb.SendMessageResponse{Payload: &a2apb.SendMessageResponse_Task{Task: task}}},
		{"send message", OpSendMessage, &a2apb.SendMessageResponse{Payload: &a2apb.SendMessageResponse_Message{Message: richPBMessage(t, a2apb.Role_ROLE_AGENT)}}},
		{"stream task", OpStreamMessage, &a2apb.StreamResponse{Payload: &a2apb.StreamResponse_Task{Task: task}}},
		{"stream message", OpStreamMessage, &a2apb.StreamResponse{Payload: &a2apb.StreamResponse_Message{Message: &a2apb.Message{MessageId: "m"}}}},
		{"status", OpStreamMessage, &a2apb.StreamResponse{Payload: &a2apb.StreamResponse_StatusUpdate{StatusUpdate: &a2apb.TaskStatusUpdateEvent{
			TaskId: "t", ContextId: "c", Status: &a2apb.TaskStatus{State: a2apb.TaskState_TASK_STATE_CANCELED, Timestamp: &timestamppb.Timestamp{Seconds: 1}},
			Metadata: mustStruct(t, map[string]any{"x": 1})}}}},
		{"status without status", OpSubscribeToTask, &a2apb.StreamResponse{Payload: &a2apb.StreamResponse_StatusUpdate{StatusUpdate: &a2apb.TaskStatusUpdateEvent{TaskId: "t"}}}},
		{"artifact", OpStreamMessage, &a2apb.StreamResponse{Payload: &a2apb.StreamResponse_ArtifactUpdate{ArtifactUpdate: &a2apb.TaskArtifactUpdateEvent{
			TaskId: "t", ContextId: "c", Artifact: task.Artifacts[0], Append: true, LastChunk: true}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := call{op: tc.op, method: "m"}.grpcDecode(tc.m, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			sameEvent(t, got, viaJSON(t, tc.op, tc.m))
		})
	}
	for state := range a2apb.TaskState_name {
		m := &a2apb.Task{Id: "t", Status: &a2apb.TaskStatus{State: a2apb.TaskState(state)}}
		got, _ := call{op: OpGetTask}.grpcDecode(m, 1<<20)
		sameEvent(t, got, viaJSON(t, OpGetTask, m))
	}
}

func TestEventFromPB_errors(t *testing.T) {
	cl := call{op: OpStreamMessage, method: "SendStreamingMessage"}
	var pe *a2a.ProtocolError
	if _, err := cl.grpcDecode(&a2apb.StreamResponse{}, 1<<20); !asProtocol(err, &pe) || pe.Kind != a2a.ProtocolUnknownKind || pe.Method != cl.method {
		t.Errorf("empty answer: %v", err)
	}
	if _, err := cl.grpcDecode(richPBTask(t), 10); !asProtocol(err, &pe) || pe.Kind != a2a.ProtocolEventTooLarge {
		t.Errorf("large answer: %v", err)
	}
}

func asProtocol(err error, pe **a2a.ProtocolError) bool {
	p, ok := err.(*a2a.ProtocolError)
	*pe = p
	return ok
}

// The 0.3 proto, converted: what the JSON path made of it where that was right (text, enums,
// final), and its own file and data parts, which the JSON path read wrongly (a FilePart's URI and
// bytes were lost, a DataPart's object came wrapped in {"data": …}, canceled read "cancelled").
func TestEventFromPBV0(t *testing.T) {
	st := &a2apbv0.TaskStatusUpdateEvent{TaskId: "t", ContextId: "c", Status: &a2apbv0.TaskStatus{
		State: a2apbv0.TaskState_TASK_STATE_INPUT_REQUIRED, Timestamp: &timestamppb.Timestamp{Seconds: 2, Nanos: 5},
		Update: &a2apbv0.Message{MessageId: "m", Role: a2apbv0.Role_ROLE_AGENT, Parts: []*a2apbv0.Part{{Part: &a2apbv0.Part_Text{Text: "q?"}}}}}}
	m := &a2apbv0.StreamResponse{Payload: &a2apbv0.StreamResponse_StatusUpdate{StatusUpdate: st}}
	got, err := call{op: OpStreamMessage}.grpcDecode(m, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	sameEvent(t, got, viaJSON(t, OpStreamMessage, m))

	msg := &a2apbv0.SendMessageResponse{Payload: &a2apbv0.SendMessageResponse_Msg{Msg: &a2apbv0.Message{MessageId: "m", Parts: []*a2apbv0.Part{
		{Part: &a2apbv0.Part_File{File: &a2apbv0.FilePart{Name: "a.png", MimeType: "image/png", File: &a2apbv0.FilePart_FileWithUri{FileWithUri: "https://x/a.png"}}}},
		{Part: &a2apbv0.Part_File{File: &a2apbv0.FilePart{File: &a2apbv0.FilePart_FileWithBytes{FileWithBytes: []byte("hi")}}}},
		{Part: &a2apbv0.Part_Data{Data: &a2apbv0.DataPart{Data: mustStruct(t, map[string]any{"k": "<v>"})}}},
	}}}}
	got, err = call{op: OpSendMessage}.grpcDecode(msg, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	want := a2a.Parts{
		{Kind: a2a.PartURL, URL: "https://x/a.png", Filename: "a.png", MediaType: "image/png"},
		{Kind: a2a.PartRaw, Raw: []byte("hi")},
		{Kind: a2a.PartData, Data: json.RawMessage(`{"k":"<v>"}`)},
	}
	if parts := got.(*a2a.Message).Parts; !reflect.DeepEqual(parts, want) {
		t.Errorf("parts\n got %+v\nwant %+v", parts, want)
	}
	cancel := &a2apbv0.Task{Id: "t", Status: &a2apbv0.TaskStatus{State: a2apbv0.TaskState_TASK_STATE_CANCELLED}}
	if got, _ := (call{op: OpCancelTask}).grpcDecode(cancel, 1<<20); got.(*a2a.Task).Status.State != a2a.TaskStateCanceled {
		t.Errorf("0.3 CANCELLED read as %q", got.(*a2a.Task).Status.State)
	}
}

// viaJSONRequest is the request the gRPC binding built before: the 1.0 JSON params read with
// protojson into the request message.
func viaJSONRequest(t *testing.T, cl call, params any, tenant string, into proto.Message) proto.Message {
	t.Helper()
	body, err := v1Dialect{}.encodeParams(cl.op, params, tenant)
	if err != nil {
		t.Fatal(err)
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, into); err != nil {
		t.Fatal(err)
	}
	return into
}

func TestGRPCRequest_is_what_the_JSON_path_made(t *testing.T) {
	bin := typicalStreamParams()
	bin.Message.Parts = append(bin.Message.Parts, a2a.Part{Kind: a2a.PartRaw, Raw: []byte{0, 1, 2, 0xfa}, Filename: "b"},
		a2a.Part{Kind: a2a.PartData, Data: json.RawMessage(`[1,"x"]`)}, a2a.Part{Kind: a2a.PartRaw}, a2a.Part{Kind: a2a.PartURL})
	for _, tc := range []struct {
		name   string
		op     Op
		params any
		into   proto.Message
	}{
		{"stream", OpStreamMessage, typicalStreamParams(), &a2apb.SendMessageRequest{}},
		{"send, more parts", OpSendMessage, bin, &a2apb.SendMessageRequest{}},
		{"send, bare", OpSendMessage, &a2a.SendMessageRequest{Message: a2a.Message{MessageID: "m", Role: a2a.RoleAgent}, Configuration: &a2a.SendMessageConfiguration{}}, &a2apb.SendMessageRequest{}},
		{"get", OpGetTask, a2a.GetTaskRequest{ID: "t", HistoryLength: new(0)}, &a2apb.GetTaskRequest{}},
		{"cancel", OpCancelTask, a2a.CancelTaskRequest{ID: "t", Metadata: map[string]any{"why": "<user>"}}, &a2apb.CancelTaskRequest{}},
		{"subscribe", OpSubscribeToTask, a2a.SubscribeToTaskRequest{ID: "t"}, &a2apb.SubscribeToTaskRequest{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := call{op: tc.op}
			got, err := grpcRequest(cl, tc.params, "tn")
			if err != nil {
				t.Fatal(err)
			}
			if want := viaJSONRequest(t, cl, tc.params, "tn", tc.into); !proto.Equal(got, want) {
				t.Errorf("request\n got %v\nwant %v", got, want)
			}
		})
	}
	// Values structpb does not take go through their JSON, as on the other bindings.
	odd := &a2a.SendMessageRequest{Message: a2a.Message{MessageID: "m", Metadata: map[string]any{"tags": []string{"a"}, "bad": "a\xffb", "n": json.Number("1.50")}}}
	got, err := grpcRequest(call{op: OpSendMessage}, odd, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := viaJSONRequest(t, call{op: OpSendMessage}, odd, "", &a2apb.SendMessageRequest{}); !proto.Equal(got, want) {
		t.Errorf("odd metadata\n got %v\nwant %v", got, want)
	}
}

func TestGRPCRequestV0(t *testing.T) {
	p := &a2a.SendMessageRequest{Message: a2a.Message{MessageID: "m", ContextID: "c", Parts: a2a.Parts{
		a2a.TextPart("hi"),
		{Kind: a2a.PartURL, URL: "https://x/a", Filename: "a", MediaType: "image/png"},
		{Kind: a2a.PartData, Data: json.RawMessage(`{"k":1}`)},
	}}, Configuration: &a2a.SendMessageConfiguration{HistoryLength: new(2)}}
	got, err := grpcRequest(call{op: OpSendMessage, grpcV0: true}, p, "ignored")
	if err != nil {
		t.Fatal(err)
	}
	want := &a2apbv0.SendMessageRequest{
		Request: &a2apbv0.Message{MessageId: "m", ContextId: "c", Role: a2apbv0.Role_ROLE_USER, Parts: []*a2apbv0.Part{
			{Part: &a2apbv0.Part_Text{Text: "hi"}},
			{Part: &a2apbv0.Part_File{File: &a2apbv0.FilePart{Name: "a", MimeType: "image/png", File: &a2apbv0.FilePart_FileWithUri{FileWithUri: "https://x/a"}}}},
			{Part: &a2apbv0.Part_Data{Data: &a2apbv0.DataPart{Data: mustStruct(t, map[string]any{"k": 1})}}},
		}},
		Configuration: &a2apbv0.SendMessageConfiguration{HistoryLength: 2, Blocking: true},
	}
	if !proto.Equal(got, want) {
		t.Errorf("request\n got %v\nwant %v", got, want)
	}
	if got, _ := grpcRequest(call{op: OpCancelTask, grpcV0: true}, a2a.CancelTaskRequest{ID: "t"}, ""); !proto.Equal(got, &a2apbv0.CancelTaskRequest{Name: "tasks/t"}) {
		t.Errorf("cancel: %v", got)
	}
}

// BenchmarkGRPCDecode is the cost of turning one streamed artifact chunk into an Event, straight
// from the proto and (for comparison) through its JSON as the binding did before.
func BenchmarkGRPCDecode(b *testing.B) {
	m := &a2apb.StreamResponse{Payload: &a2apb.StreamResponse_ArtifactUpdate{ArtifactUpdate: &a2apb.TaskArtifactUpdateEvent{
		TaskId: "task-1", ContextId: "ctx-1", Append: true,
		Artifact: &a2apb.Artifact{ArtifactId: "a-1", Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: string(bytes.Repeat([]byte("word "), 12))}}}},
	}}}
	cl := call{op: OpStreamMessage, method: "SendStreamingMessage", d: v1Dialect{}}
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cl.grpcDecode(m, 1<<20); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("via-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			data, _ := protojson.Marshal(m)
			if _, err := cl.decodeREST(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkGRPCRequest is the cost of building a typical SendStreamingMessage request, straight
// into the proto and (for comparison) through the 1.0 JSON as the binding did before.
func BenchmarkGRPCRequest(b *testing.B) {
	params := typicalStreamParams()
	cl := call{op: OpStreamMessage}
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := grpcRequest(cl, params, "tn"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("via-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			body, err := v1Dialect{}.encodeParams(cl.op, params, "tn")
			if err != nil {
				b.Fatal(err)
			}
			if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, &a2apb.SendMessageRequest{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
