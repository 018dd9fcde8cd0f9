package a2aclient

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/a2a-connector/a2a-connector/internal/a2a"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-connector/a2a-connector/internal/a2a/a2av0"
)

// v0Result is result as a 0.x agent writes it: events and tasks of the core model become
// a2av0's objects; anything else is returned as it is.
func v0Result(result any) any {
	switch r := result.(type) {
	case a2a.Task:
		return taskToV0(&r)
	case *a2a.Task:
		return taskToV0(r)
	case a2a.Message:
		return messageToV0(&r)
	case *a2a.Message:
		return messageToV0(r)
	case *a2a.TaskStatusUpdateEvent:
		return &a2av0.TaskStatusUpdateEvent{Kind: a2av0.KindStatusUpdate, TaskID: r.TaskID, ContextID: r.ContextID,
			Status: statusToV0(r.Status), Final: r.Status.State.IsTerminal() || r.Status.State.IsInterrupted(), Metadata: r.Metadata}
	case *a2a.TaskArtifactUpdateEvent:
		return &a2av0.TaskArtifactUpdateEvent{Kind: a2av0.KindArtifactUpdate, TaskID: r.TaskID, ContextID: r.ContextID,
			Artifact: artifactToV0(r.Artifact), Append: r.Append, LastChunk: r.LastChunk, Metadata: r.Metadata}
	}
	return result
}

func taskToV0(t *a2a.Task) *a2av0.Task {
	w := &a2av0.Task{Kind: a2av0.KindTask, ID: t.ID, ContextID: t.ContextID, Status: statusToV0(t.Status), Metadata: t.Metadata}
	for _, a := range t.Artifacts {
		w.Artifacts = append(w.Artifacts, artifactToV0(a))
	}
	for i := range t.History {
		w.History = append(w.History, messageToV0(&t.History[i]))
	}
	return w
}

func statusToV0(s a2a.TaskStatus) a2av0.TaskStatus {
	w := a2av0.TaskStatus{State: stateToV0(s.State), Timestamp: s.Timestamp}
	if s.Message != nil {
		m := messageToV0(s.Message)
		w.Message = &m
	}
	return w
}

func stateToV0(s a2a.TaskState) a2av0.TaskState {
	for _, v0 := range []a2av0.TaskState{a2av0.TaskStateSubmitted, a2av0.TaskStateWorking, a2av0.TaskStateInputRequired, a2av0.TaskStateAuthRequired,
		a2av0.TaskStateCompleted, a2av0.TaskStateFailed, a2av0.TaskStateCanceled, a2av0.TaskStateRejected, a2av0.TaskStateUnknown} {
		if v1, _ := a2a.StateOfV0(string(v0)); v1 == s {
			return v0
		}
	}
	return a2av0.TaskState(s)
}

func artifactToV0(a a2a.Artifact) a2av0.Artifact {
	w := a2av0.Artifact{ArtifactID: a.ArtifactID, Name: a.Name, Description: a.Description, Metadata: a.Metadata, Extensions: a.Extensions,
		Parts: a2av0.Parts{}}
	for i := range a.Parts {
		w.Parts = append(w.Parts, partToV0(&a.Parts[i]))
	}
	return w
}

// The 0.x dialect hands the core model to its callers: every 0.x spelling converted.
func TestDecodeEventV0_converts_to_the_core_model(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		data     string
		want     a2a.Event
		wantKind string // ProtocolError kind
	}{
		{
			name: "task_of_the_platform_guide",
			data: `{"id":"task-1","contextId":"context-1","kind":"task","status":{"state":"completed","timestamp":"2025-07-15T14:50:28.575338Z"},
				"artifacts":[{"artifactId":"a1","parts":[{"kind":"text","text":"今天天气晴，"}]}],
				"history":[{"kind":"message","role":"user","messageId":"m0","parts":[{"kind":"text","text":"天气？"}]}]}`,
			want: &a2a.Task{ID: "task-1", ContextID: "context-1",
				Status:    a2a.TaskStatus{State: a2a.TaskStateCompleted, Timestamp: "2025-07-15T14:50:28.575338Z"},
				Artifacts: []a2a.Artifact{{ArtifactID: "a1", Parts: a2a.Parts{a2a.TextPart("今天天气晴，")}}},
				History:   []a2a.Message{{Role: a2a.RoleUser, MessageID: "m0", Parts: a2a.Parts{a2a.TextPart("天气？")}}}},
		},
		{
			name: "status_update_with_question_loses_final",
			data: `{"kind":"status-update","taskId":"t1","contextId":"c1","final":true,"status":{"state":"input-required","message":{"kind":"message","role":"agent","messageId":"m2","parts":[{"kind":"text","text":"Which city?"}]}}}`,
			want: &a2a.TaskStatusUpdateEvent{TaskID: "t1", ContextID: "c1",
				Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: &a2a.Message{Role: a2a.RoleAgent, MessageID: "m2", Parts: a2a.Parts{a2a.TextPart("Which city?")}}}},
		},
		{
			name: "file_and_data_parts",
			data: `{"kind":"message","role":"agent","messageId":"m","parts":[
				{"kind":"file","file":{"name":"a.png","mimeType":"image/png","bytes":"aGk="}},
				{"kind":"file","file":{"name":"b.pdf","uri":"https://x/b.pdf"}},
				{"kind":"data","data":{"k":1},"metadata":{"m":true}}]}`,
			want: &a2a.Message{Role: a2a.RoleAgent, MessageID: "m", Parts: a2a.Parts{
				{Kind: a2a.PartRaw, Raw: []byte("hi"), Filename: "a.png", MediaType: "image/png"},
				{Kind: a2a.PartURL, URL: "https://x/b.pdf", Filename: "b.pdf"},
				{Kind: a2a.PartData, Data: json.RawMessage(`{"k":1}`), Metadata: map[string]any{"m": true}},
			}},
		},
		{
			name: "every_state",
			data: `{"kind":"task","id":"t","contextId":"c","status":{"state":"unknown"}}`,
			want: &a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateUnspecified}},
		},
		{
			name: "a_state_a2a_does_not_define_keeps_its_spelling",
			data: `{"kind":"task","id":"t","contextId":"c","status":{"state":"paused"}}`,
			want: &a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: "paused"}},
		},
		{name: "unknown_kind", data: `{"kind":"push-notification","id":"t","status":{}}`, wantKind: a2a.ProtocolUnknownKind},
		{name: "truncated", data: `{"kind":"task"`, wantKind: a2a.ProtocolBadJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := decodeEventV0([]byte(tt.data))
			if tt.wantKind != "" {
				var pe *a2a.ProtocolError
				if !errors.As(err, &pe) || pe.Kind != tt.wantKind {
					t.Fatalf("err = %v, want ProtocolError %s", err, tt.wantKind)
				}
				return
			}
			if err != nil {
				t.Fatalf("decodeEventV0: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("event (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatesV0_cover_every_state(t *testing.T) {
	t.Parallel()
	for _, s := range []a2a.TaskState{a2a.TaskStateUnspecified, a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateCompleted, a2a.TaskStateFailed,
		a2a.TaskStateCanceled, a2a.TaskStateInputRequired, a2a.TaskStateRejected, a2a.TaskStateAuthRequired} {
		if v0 := stateToV0(s); stateFromV0(v0) != s || string(v0) == string(s) {
			t.Errorf("state %s: 0.x %q, back %s", s, v0, stateFromV0(v0))
		}
	}
}

// A send request goes out in 0.x with every member the model has and 0.x can say.
func TestSendParamsToV0(t *testing.T) {
	t.Parallel()
	got := sendParamsToV0(&a2a.SendMessageRequest{
		Message: a2a.Message{Role: a2a.RoleUser, MessageID: "m", ContextID: "c", TaskID: "t", Parts: a2a.Parts{
			a2a.TextPart("hi"), {Kind: a2a.PartRaw, Raw: []byte("hi"), Filename: "a.txt", MediaType: "text/plain"}, {Kind: a2a.PartURL, URL: "https://x/y"}, {Kind: a2a.PartData}}},
		Configuration: &a2a.SendMessageConfiguration{AcceptedOutputModes: []string{"text/plain"}, HistoryLength: new(2)},
		Metadata:      map[string]any{"k": "v"},
	})
	want := &a2av0.MessageSendParams{
		Message: a2av0.Message{Kind: a2av0.KindMessage, Role: a2av0.RoleUser, MessageID: "m", ContextID: "c", TaskID: "t", Parts: a2av0.Parts{
			a2av0.TextPart("hi"),
			{Kind: a2av0.PartKindFile, File: &a2av0.FileContent{Name: "a.txt", MimeType: "text/plain", Bytes: "aGk="}},
			{Kind: a2av0.PartKindFile, File: &a2av0.FileContent{URI: "https://x/y"}},
			{Kind: a2av0.PartKindData, Data: json.RawMessage(`{}`)},
		}},
		Configuration: &a2av0.MessageSendConfiguration{AcceptedOutputModes: []string{"text/plain"}, Blocking: new(true), HistoryLength: new(2)},
		Metadata:      map[string]any{"k": "v"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("params (-want +got):\n%s", diff)
	}
}
