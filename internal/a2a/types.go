package a2a

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/a2a-connector/a2a-connector/internal/a2a/internal/onepass"
)

// The core model: A2A 1.0's objects (a2a.proto's messages) as plain Go types named after the
// spec. Every generation and binding converts to and from them: the 1.0 JSON is their JSON
// (the tags below), 0.x JSON goes through package a2av0 (the client's 0.x dialect), the protos field
// by field (package pbconv). Callers above the wire see only these.

// Role says who sent a Message.
type Role string

// Roles of A2A 1.0.
const (
	RoleUnspecified Role = "ROLE_UNSPECIFIED"
	RoleUser        Role = "ROLE_USER"
	RoleAgent       Role = "ROLE_AGENT"
)

// TaskState is the lifecycle state of a Task.
type TaskState string

// Task states of A2A 1.0. A state an agent sends that A2A does not define keeps its spelling,
// so that it can be reported.
const (
	TaskStateUnspecified   TaskState = "TASK_STATE_UNSPECIFIED"
	TaskStateSubmitted     TaskState = "TASK_STATE_SUBMITTED"
	TaskStateWorking       TaskState = "TASK_STATE_WORKING"
	TaskStateCompleted     TaskState = "TASK_STATE_COMPLETED"
	TaskStateFailed        TaskState = "TASK_STATE_FAILED"
	TaskStateCanceled      TaskState = "TASK_STATE_CANCELED"
	TaskStateInputRequired TaskState = "TASK_STATE_INPUT_REQUIRED"
	TaskStateRejected      TaskState = "TASK_STATE_REJECTED"
	TaskStateAuthRequired  TaskState = "TASK_STATE_AUTH_REQUIRED"
)

// IsTerminal reports whether s is a state a task never leaves: completed, failed, canceled or
// rejected.
func (s TaskState) IsTerminal() bool {
	switch s {
	case TaskStateCompleted, TaskStateFailed, TaskStateCanceled, TaskStateRejected:
		return true
	}
	return false
}

// IsInterrupted reports whether the task is paused waiting for the client: input-required or
// auth-required.
func (s TaskState) IsInterrupted() bool {
	return s == TaskStateInputRequired || s == TaskStateAuthRequired
}

// canonicalState is the 1.0 state an agent meant: the 0.3 proto's TASK_STATE_CANCELLED is
// canceled, and a 0.x spelling on a 1.0 wire ("completed") is taken as the state it names.
func canonicalState(s TaskState) TaskState {
	if s == "TASK_STATE_CANCELLED" {
		return TaskStateCanceled
	}
	if !strings.HasPrefix(string(s), "TASK_STATE_") {
		if v1, ok := StateOfV0(string(s)); ok {
			return v1
		}
	}
	return s
}

// statesV0 are the 0.x spellings of the states (package a2av0's TaskState values).
var statesV0 = map[string]TaskState{
	"submitted":      TaskStateSubmitted,
	"working":        TaskStateWorking,
	"input-required": TaskStateInputRequired,
	"auth-required":  TaskStateAuthRequired,
	"completed":      TaskStateCompleted,
	"failed":         TaskStateFailed,
	"canceled":       TaskStateCanceled,
	"rejected":       TaskStateRejected,
	"unknown":        TaskStateUnspecified,
}

// StateOfV0 is the 1.0 state of a 0.x state's spelling ("completed", ...); ok is false for a
// spelling 0.x does not define.
func StateOfV0(s string) (state TaskState, ok bool) {
	state, ok = statesV0[s]
	return state, ok
}

// canonicalRole is canonicalState for roles: "agent" and "user" are taken as the 1.0 roles.
func canonicalRole(r Role) Role {
	switch r {
	case "agent":
		return RoleAgent
	case "user":
		return RoleUser
	}
	return r
}

// Message is one communication turn between client and agent.
type Message struct {
	MessageID        string         `json:"messageId"`
	ContextID        string         `json:"contextId,omitempty"`
	TaskID           string         `json:"taskId,omitempty"`
	Role             Role           `json:"role"`
	Parts            Parts          `json:"parts"`
	Metadata         map[string]any `json:"metadata,omitempty"`
	Extensions       []string       `json:"extensions,omitempty"`
	ReferenceTaskIDs []string       `json:"referenceTaskIds,omitempty"`
}

// PartKind says which member of a Part's content (the proto's oneof) it carries.
type PartKind uint8

// Part kinds. The zero Part is an empty text part.
const (
	PartText PartKind = iota
	// PartRaw is a file carried inline (Part.Raw).
	PartRaw
	// PartURL is a file carried by reference (Part.URL).
	PartURL
	// PartData is structured data (Part.Data).
	PartData
)

// Part is one piece of content: exactly one of text, raw bytes, a URL and data, as Kind says,
// with an optional media type, file name and metadata.
type Part struct {
	Kind PartKind
	Text string
	Raw  []byte
	URL  string
	// Data is the raw JSON of a data part (any JSON value in 1.0; kept raw so that it costs
	// nothing to carry and an agent's odd value cannot fail the answer).
	Data      json.RawMessage
	Filename  string
	MediaType string
	Metadata  map[string]any
}

// TextPart returns a text Part.
func TextPart(text string) Part { return Part{Kind: PartText, Text: text} }

// Parts is the content of a Message or Artifact. Decoding skips parts with no content this
// package knows instead of failing, so a newer agent's parts cannot break a turn.
type Parts []Part

// Task is a stateful unit of work at the agent.
type Task struct {
	ID        string         `json:"id"`
	ContextID string         `json:"contextId"`
	Status    TaskStatus     `json:"status"`
	Artifacts []Artifact     `json:"artifacts,omitempty"`
	History   []Message      `json:"history,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// TaskStatus is a task's state at a point in time.
type TaskStatus struct {
	State TaskState `json:"state"`
	// Message is where agents often put the question of an input-required state.
	Message *Message `json:"message,omitempty"`
	// Timestamp is kept as sent (RFC 3339 per the spec): a malformed timestamp must not fail a
	// turn, and nothing here computes with it.
	Timestamp string `json:"timestamp,omitempty"`
}

// Artifact is output an agent produced for a task.
type Artifact struct {
	ArtifactID  string         `json:"artifactId"`
	Name        string         `json:"name,omitempty"`
	Description string         `json:"description,omitempty"`
	Parts       Parts          `json:"parts"`
	Metadata    map[string]any `json:"metadata,omitempty"`
	Extensions  []string       `json:"extensions,omitempty"`
}

// TaskStatusUpdateEvent reports a task's new status during a stream. (0.x's "final" flag is not
// part of the model: servers disagree on when they set it, and a stream's end is decided by the
// state.)
type TaskStatusUpdateEvent struct {
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Status    TaskStatus     `json:"status"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// TaskArtifactUpdateEvent carries a whole artifact or a chunk of one during a stream.
type TaskArtifactUpdateEvent struct {
	TaskID    string   `json:"taskId"`
	ContextID string   `json:"contextId"`
	Artifact  Artifact `json:"artifact"`
	// Append true adds the parts to the artifact with the same ArtifactID; false replaces it.
	Append bool `json:"append,omitempty"`
	// LastChunk true says the artifact is complete.
	LastChunk bool           `json:"lastChunk,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// SendMessageRequest is the request of SendMessage and SendStreamingMessage. The tenant is the
// Endpoint's: bindings put it in different places.
type SendMessageRequest struct {
	Message       Message
	Configuration *SendMessageConfiguration
	Metadata      map[string]any
}

// SendMessageConfiguration tunes a send.
type SendMessageConfiguration struct {
	AcceptedOutputModes []string
	// HistoryLength nil leaves the agent its default.
	HistoryLength *int
	// ReturnImmediately false (the default) asks the agent to answer SendMessage only when the
	// task is final or interrupted (agents may still answer earlier); 0.x calls it blocking.
	ReturnImmediately bool
}

// GetTaskRequest is the request of GetTask.
type GetTaskRequest struct {
	ID string
	// HistoryLength nil leaves the agent its default.
	HistoryLength *int
}

// CancelTaskRequest is the request of CancelTask.
type CancelTaskRequest struct {
	ID       string
	Metadata map[string]any
}

// SubscribeToTaskRequest is the request of SubscribeToTask.
type SubscribeToTaskRequest struct {
	ID string
}

// Event is an answer of SendMessage, SendStreamingMessage or SubscribeToTask: exactly one of
// *Task, *Message, *TaskStatusUpdateEvent or *TaskArtifactUpdateEvent. Callers switch on the
// type:
//
//	switch e := ev.(type) {
//	case *a2a.Task: ...
//	case *a2a.Message: ...
//	case *a2a.TaskStatusUpdateEvent: ...
//	case *a2a.TaskArtifactUpdateEvent: ...
//	}
type Event interface{ isEvent() }

func (*Task) isEvent()                    {}
func (*Message) isEvent()                 {}
func (*TaskStatusUpdateEvent) isEvent()   {}
func (*TaskArtifactUpdateEvent) isEvent() {}

// MarshalJSON writes the message with a non-null parts array, which the schema requires.
func (m Message) MarshalJSON() ([]byte, error) {
	type plain Message
	if m.Parts == nil {
		m.Parts = Parts{}
	}
	return json.Marshal(plain(m))
}

// MarshalJSON writes a non-null parts array.
func (a Artifact) MarshalJSON() ([]byte, error) {
	type plain Artifact
	if a.Parts == nil {
		a.Parts = Parts{}
	}
	return json.Marshal(plain(a))
}

// PartJSON is a part in 1.0's JSON form. The 0.x forms ("kind", a "file" object) are read too,
// since some agents mix them into the 1.0 wire.
type PartJSON struct {
	Text      *string         `json:"text,omitempty"`
	Raw       *string         `json:"raw,omitempty"`
	URL       *string         `json:"url,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
	Metadata  map[string]any  `json:"metadata,omitempty"`
	// Read only: 0.x's discriminator and file object.
	Kind string        `json:"kind,omitempty"`
	File *partFileJSON `json:"file,omitempty"`
}

type partFileJSON struct {
	Name     string `json:"name"`
	MimeType string `json:"mimeType"`
	Bytes    string `json:"bytes"`
	URI      string `json:"uri"`
}

// MarshalJSON writes the part's one content member, then its file name, media type and
// metadata (PartJSONOf).
func (p Part) MarshalJSON() ([]byte, error) { return json.Marshal(PartJSONOf(&p)) }

// part is the Part w stands for; ok is false when it has no content this package knows.
func (w *PartJSON) part() (p Part, ok bool) {
	p = Part{Filename: w.Filename, MediaType: w.MediaType, Metadata: w.Metadata}
	if w.Kind != "" || w.File != nil {
		return w.partV0(p)
	}
	switch {
	case w.Text != nil:
		p.Kind, p.Text = PartText, *w.Text
	case w.Raw != nil:
		p.Kind, p.Raw = PartRaw, DecodeBase64(*w.Raw)
	case w.URL != nil:
		p.Kind, p.URL = PartURL, *w.URL
	case present(w.Data):
		p.Kind, p.Data = PartData, w.Data
	default:
		return Part{}, false
	}
	return p, true
}

// partV0 reads a part in 0.x's form.
func (w *PartJSON) partV0(p Part) (Part, bool) {
	kind := w.Kind
	if kind == "" {
		kind = "file"
	}
	switch kind {
	case "text":
		if w.Text != nil {
			p.Text = *w.Text
		}
		return p, true
	case "data":
		p.Kind, p.Data = PartData, w.Data
		return p, true
	case "file":
		if w.File == nil {
			w.File = &partFileJSON{}
		}
		p.Filename, p.MediaType = cmpOr(p.Filename, w.File.Name), cmpOr(p.MediaType, w.File.MimeType)
		if w.File.URI != "" && w.File.Bytes == "" {
			p.Kind, p.URL = PartURL, w.File.URI
			return p, true
		}
		p.Kind, p.Raw = PartRaw, DecodeBase64(w.File.Bytes)
		return p, true
	}
	return Part{}, false
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// DecodeBase64 decodes the bytes of a file part in any of base64's spellings agents use; bytes
// that are no base64 at all are kept as they came (the part stays a file part, and nothing here
// reads its bytes).
func DecodeBase64(s string) []byte {
	for _, enc := range [...]*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b
		}
	}
	return []byte(s)
}

// UnmarshalJSON decodes a part in 1.0's form (or 0.x's). A part with no content this package
// knows decodes as an empty text part; in Parts it is dropped.
func (p *Part) UnmarshalJSON(data []byte) error {
	var w PartJSON
	if err := jsonv1.Unmarshal(data, &w); err != nil {
		return err
	}
	*p, _ = w.part()
	return nil
}

// UnmarshalJSONFrom decodes the parts from the decoder the whole event is read with, one by one
// (one pass), and drops the ones with no content this package knows. It takes precedence over
// UnmarshalJSON in go-json-experiment, also in its v1 mode.
func (ps *Parts) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	out, err := onepass.List(dec, (*PartJSON).part)
	if err == nil {
		*ps = out
	}
	return err
}

// UnmarshalJSON decodes each part and drops the ones with no content this package knows.
func (ps *Parts) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*ps = nil
		return nil
	}
	var wire []PartJSON
	if err := jsonv1.Unmarshal(data, &wire); err != nil {
		return err
	}
	out := make(Parts, 0, len(wire))
	for i := range wire {
		if p, ok := wire[i].part(); ok {
			out = append(out, p)
		}
	}
	*ps = out
	return nil
}

func present(r json.RawMessage) bool { return len(r) > 0 && !bytes.Equal(r, []byte("null")) }
