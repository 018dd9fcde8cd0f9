package a2av0

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeEvent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		data    string
		want    Event
		wantErr string // "unknown_kind" or "bad_json"
	}{
		{
			name: "task_of_the_platform_guide",
			data: `{"id":"task-1","contextId":"context-1","kind":"task","status":{"state":"completed","timestamp":"2025-07-15T14:50:28.575338Z"},
				"artifacts":[{"artifactId":"a1","parts":[{"kind":"text","text":"今天天气晴，"}]},{"artifactId":"a1","parts":[{"kind":"text","text":"没有雨。"}]}]}`,
			want: &Task{ID: "task-1", ContextID: "context-1", Kind: KindTask,
				Status: TaskStatus{State: TaskStateCompleted, Timestamp: "2025-07-15T14:50:28.575338Z"},
				Artifacts: []Artifact{
					{ArtifactID: "a1", Parts: Parts{TextPart("今天天气晴，")}},
					{ArtifactID: "a1", Parts: Parts{TextPart("没有雨。")}},
				}},
		},
		{
			name: "message",
			data: `{"kind":"message","role":"agent","messageId":"m1","parts":[{"kind":"text","text":"hi"}],"contextId":"c1","taskId":"t1","referenceTaskIds":["t0"],"extensions":["urn:x"],"metadata":{"k":"v"}}`,
			want: &Message{Kind: KindMessage, Role: RoleAgent, MessageID: "m1", Parts: Parts{TextPart("hi")}, ContextID: "c1", TaskID: "t1",
				ReferenceTaskIDs: []string{"t0"}, Extensions: []string{"urn:x"}, Metadata: map[string]any{"k": "v"}},
		},
		{
			name: "status_update_with_question",
			data: `{"kind":"status-update","taskId":"t1","contextId":"c1","final":false,"status":{"state":"input-required","message":{"kind":"message","role":"agent","messageId":"m2","parts":[{"kind":"text","text":"Which city?"}]}}}`,
			want: &TaskStatusUpdateEvent{Kind: KindStatusUpdate, TaskID: "t1", ContextID: "c1",
				Status: TaskStatus{State: TaskStateInputRequired, Message: &Message{Kind: KindMessage, Role: RoleAgent, MessageID: "m2", Parts: Parts{TextPart("Which city?")}}}},
		},
		{
			name: "artifact_update_with_metadata",
			data: `{"kind":"artifact-update","taskId":"t1","contextId":"c1","append":true,"lastChunk":true,"artifact":{"artifactId":"a","parts":[{"kind":"text","text":"x"}],"metadata":{"commands":[1]}}}`,
			want: &TaskArtifactUpdateEvent{Kind: KindArtifactUpdate, TaskID: "t1", ContextID: "c1", Append: true, LastChunk: true,
				Artifact: Artifact{ArtifactID: "a", Parts: Parts{TextPart("x")}, Metadata: map[string]any{"commands": []any{1.0}}}},
		},
		{
			name: "unknown_fields_of_a2a_0_3_are_ignored",
			data: `{"kind":"task","id":"t","contextId":"c","status":{"state":"working","extra":1},"pushNotificationConfig":{},"future":[1,2]}`,
			want: &Task{Kind: KindTask, ID: "t", ContextID: "c", Status: TaskStatus{State: TaskStateWorking}},
		},
		{
			name: "no_kind_artifact_shape",
			data: `{"taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[]}}`,
			want: &TaskArtifactUpdateEvent{Kind: KindArtifactUpdate, TaskID: "t", ContextID: "c", Artifact: Artifact{ArtifactID: "a", Parts: Parts{}}},
		},
		{
			name: "no_kind_status_with_task_id_is_status_update",
			data: `{"taskId":"t","contextId":"c","status":{"state":"completed"},"final":true}`,
			want: &TaskStatusUpdateEvent{Kind: KindStatusUpdate, TaskID: "t", ContextID: "c", Status: TaskStatus{State: TaskStateCompleted}, Final: true},
		},
		{
			name: "no_kind_status_with_id_is_task",
			data: `{"id":"t","contextId":"c","status":{"state":"submitted"}}`,
			want: &Task{Kind: KindTask, ID: "t", ContextID: "c", Status: TaskStatus{State: TaskStateSubmitted}},
		},
		{
			name: "no_kind_message_shape",
			data: `{"messageId":"m","role":"agent","parts":[{"text":"inferred text part"}]}`,
			want: &Message{Kind: KindMessage, MessageID: "m", Role: RoleAgent, Parts: Parts{TextPart("inferred text part")}},
		},
		{
			name: "parts_of_unknown_kind_are_skipped",
			data: `{"kind":"message","messageId":"m","role":"agent","parts":[{"kind":"video","url":"x"},{"kind":"text","text":"a"},{"metadata":{}},
				{"kind":"data","data":{"k":1}},{"kind":"file","file":{"name":"f.png","mimeType":"image/png","uri":"https://x/f.png"}}]}`,
			want: &Message{Kind: KindMessage, MessageID: "m", Role: RoleAgent, Parts: Parts{
				TextPart("a"),
				{Kind: PartKindData, Data: json.RawMessage(`{"k":1}`)},
				{Kind: PartKindFile, File: &FileContent{Name: "f.png", MimeType: "image/png", URI: "https://x/f.png"}},
			}},
		},
		{name: "unknown_kind", data: `{"kind":"push-notification","id":"t","status":{}}`, wantErr: "unknown_kind"},
		{name: "no_kind_unknown_shape", data: `{"hello":"world"}`, wantErr: "unknown_kind"},
		{name: "not_an_object", data: `[1,2]`, wantErr: "bad_json"},
		{name: "wrong_field_type", data: `{"kind":"task","id":"t","status":{"state":7}}`, wantErr: "bad_json"},
		{name: "truncated", data: `{"kind":"task"`, wantErr: "bad_json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := DecodeEvent([]byte(tt.data))
			if tt.wantErr != "" {
				var de *DecodeError
				if !errors.As(err, &de) || de.UnknownKind != (tt.wantErr == "unknown_kind") {
					t.Fatalf("err = %v, want DecodeError %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeEvent: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("event (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMarshal_fills_kinds_and_required_fields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		v    any
		want string
	}{
		{
			name: "message_gets_kind_and_text_part",
			v:    Message{Role: RoleUser, MessageID: "m", Parts: Parts{TextPart("")}},
			want: `{"kind":"message","role":"user","parts":[{"kind":"text","text":""}],"messageId":"m"}`,
		},
		{
			name: "message_without_parts_has_empty_array",
			v:    Message{Role: RoleUser, MessageID: "m"},
			want: `{"kind":"message","role":"user","parts":[],"messageId":"m"}`,
		},
		{
			name: "send_params_with_configuration",
			v: MessageSendParams{
				Message:       Message{Role: RoleUser, MessageID: "m", ContextID: "c", TaskID: "t", Metadata: map[string]any{"chatId": "x"}},
				Configuration: &MessageSendConfiguration{AcceptedOutputModes: []string{"text/plain"}, Blocking: new(true)},
			},
			want: `{"message":{"kind":"message","role":"user","parts":[],"messageId":"m","contextId":"c","taskId":"t","metadata":{"chatId":"x"}},"configuration":{"acceptedOutputModes":["text/plain"],"blocking":true}}`,
		},
		{
			name: "task_and_events_get_kinds",
			v: []Event{
				&Task{ID: "t", ContextID: "c", Status: TaskStatus{State: TaskStateWorking}},
				&TaskStatusUpdateEvent{TaskID: "t", ContextID: "c", Status: TaskStatus{State: TaskStateCompleted}, Final: true},
				&TaskArtifactUpdateEvent{TaskID: "t", ContextID: "c", Artifact: Artifact{ArtifactID: "a"}},
			},
			want: `[{"id":"t","contextId":"c","kind":"task","status":{"state":"working"}},` +
				`{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"completed"},"final":true},` +
				`{"kind":"artifact-update","taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[]}}]`,
		},
		{
			name: "data_and_file_parts",
			v:    Parts{{Kind: PartKindData, Data: json.RawMessage(`{"a":1}`)}, {Kind: PartKindFile, File: &FileContent{URI: "https://x"}}},
			want: `[{"kind":"data","data":{"a":1}},{"kind":"file","file":{"uri":"https://x"}}]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("JSON (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTaskState_IsTerminal(t *testing.T) {
	t.Parallel()
	terminal := []TaskState{TaskStateCompleted, TaskStateFailed, TaskStateCanceled, TaskStateRejected}
	for _, s := range []TaskState{TaskStateSubmitted, TaskStateWorking, TaskStateInputRequired, TaskStateAuthRequired,
		TaskStateCompleted, TaskStateFailed, TaskStateCanceled, TaskStateRejected, TaskStateUnknown, "something-new"} {
		if got, want := s.IsTerminal(), slices.Contains(terminal, s); got != want {
			t.Errorf("%s.IsTerminal() = %v, want %v", s, got, want)
		}
	}
}
