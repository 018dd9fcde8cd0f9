package a2av0

import (
	"bytes"
	"encoding/json"
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/a2a-connector/a2a-connector/internal/a2a/internal/onepass"
)

// Object kinds: the values of the "kind" discriminator on the wire.
const (
	KindTask           = "task"
	KindMessage        = "message"
	KindStatusUpdate   = "status-update"
	KindArtifactUpdate = "artifact-update"
)

// Part kinds.
const (
	PartKindText = "text"
	PartKindFile = "file"
	PartKindData = "data"
)

// Role says who sent a Message.
type Role string

// Roles defined by A2A.
const (
	RoleUser  Role = "user"
	RoleAgent Role = "agent"
)

// TaskState is the lifecycle state of a Task.
type TaskState string

// Task states of A2A 0.2.5 and 0.3.
const (
	TaskStateSubmitted     TaskState = "submitted"
	TaskStateWorking       TaskState = "working"
	TaskStateInputRequired TaskState = "input-required"
	TaskStateAuthRequired  TaskState = "auth-required"
	TaskStateCompleted     TaskState = "completed"
	TaskStateFailed        TaskState = "failed"
	TaskStateCanceled      TaskState = "canceled"
	TaskStateRejected      TaskState = "rejected"
	TaskStateUnknown       TaskState = "unknown"
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

// Message is one communication turn between client and agent.
type Message struct {
	// Kind is "message"; Marshal fills it in when empty.
	Kind             string         `json:"kind"`
	Role             Role           `json:"role"`
	Parts            Parts          `json:"parts"`
	MessageID        string         `json:"messageId"`
	ContextID        string         `json:"contextId,omitempty"`
	TaskID           string         `json:"taskId,omitempty"`
	ReferenceTaskIDs []string       `json:"referenceTaskIds,omitempty"`
	Metadata         map[string]any `json:"metadata,omitempty"`
	Extensions       []string       `json:"extensions,omitempty"`
}

// MarshalJSON writes the message with its kind and a non-null parts array, both required by the
// schema.
func (m Message) MarshalJSON() ([]byte, error) {
	type plain Message
	if m.Kind == "" {
		m.Kind = KindMessage
	}
	if m.Parts == nil {
		m.Parts = Parts{}
	}
	return json.Marshal(plain(m))
}

// MarshalJSONTo is MarshalJSON for the encoder requests are written with (newRequest): it writes
// into that encoder instead of returning bytes the caller would scan again. Same bytes.
func (m Message) MarshalJSONTo(enc *jsontext.Encoder) error {
	type plain Message
	if m.Kind == "" {
		m.Kind = KindMessage
	}
	if m.Parts == nil {
		m.Parts = Parts{}
	}
	return jsonv2.MarshalEncode(enc, plain(m))
}

// Parts is the content of a Message or Artifact. Decoding skips parts of a kind this package does
// not know (and parts with neither kind nor a recognisable field) instead of failing, so a newer
// agent's parts cannot break a turn.
type Parts []Part

// UnmarshalJSONFrom decodes the parts from the decoder the whole event is read with, one by one
// (one pass; see Part), and drops the ones of unknown kind. It takes precedence over
// UnmarshalJSON in go-json-experiment, also in its v1 mode.
func (ps *Parts) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	out, err := onepass.List(dec, func(w *partWire) (Part, bool) {
		p := w.part()
		return p, p.Kind != ""
	})
	if err == nil {
		*ps = out
	}
	return err
}

// UnmarshalJSON decodes each part on its own and drops the ones of unknown kind.
func (ps *Parts) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*ps = nil
		return nil
	}
	// One pass into the wire form of every part, not a RawMessage per part decoded again.
	var wire []partWire
	if err := jsonv1.Unmarshal(data, &wire); err != nil {
		return err
	}
	*ps = partsOf(wire)
	return nil
}

func partsOf(wire []partWire) Parts {
	out := make(Parts, 0, len(wire))
	for i := range wire {
		if p := wire[i].part(); p.Kind != "" {
			out = append(out, p)
		}
	}
	return out
}

// Part is one piece of content: text, a file or structured data, told apart by Kind.
type Part struct {
	// Kind is PartKindText, PartKindFile or PartKindData. A part decoded without "kind" gets
	// the kind its fields imply (text, then file, then data).
	Kind string
	// Text is the content of a text part.
	Text string
	// File is the content of a file part.
	File *FileContent
	// Data is the raw JSON of a data part (an object per the schema; kept raw so that agents
	// sending arrays or scalars do not fail the whole answer).
	Data     json.RawMessage
	Metadata map[string]any
}

// FileContent is a file carried inline (Bytes, base64) or by reference (URI).
type FileContent struct {
	Name     string `json:"name,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	Bytes    string `json:"bytes,omitempty"`
	URI      string `json:"uri,omitempty"`
}

// TextPart returns a text Part.
func TextPart(text string) Part { return Part{Kind: PartKindText, Text: text} }

type partWire struct {
	Kind     string          `json:"kind"`
	Text     *string         `json:"text,omitempty"`
	File     *FileContent    `json:"file,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
	Metadata map[string]any  `json:"metadata,omitempty"`
	// The A2A 1.0 file forms (no kind, no file object): read only.
	Raw       *string `json:"raw,omitempty"`
	URL       *string `json:"url,omitempty"`
	MediaType string  `json:"mediaType,omitempty"`
	Filename  string  `json:"filename,omitempty"`
}

// MarshalJSON writes only the fields of the part's kind; a part without Kind is written as text.
func (p Part) MarshalJSON() ([]byte, error) {
	w, err := p.wire()
	if err != nil {
		return nil, err
	}
	return json.Marshal(w)
}

// MarshalJSONTo is MarshalJSON for the encoder requests are written with (see Message).
func (p Part) MarshalJSONTo(enc *jsontext.Encoder) error {
	w, err := p.wire()
	if err != nil {
		return err
	}
	return jsonv2.MarshalEncode(enc, w)
}

// wire is the wire form of p: only the fields of its kind.
func (p Part) wire() (partWire, error) {
	w := partWire{Kind: p.Kind, Metadata: p.Metadata}
	switch p.Kind {
	case PartKindFile:
		w.File = p.File
		if w.File == nil {
			w.File = &FileContent{}
		}
	case PartKindData:
		w.Data = p.Data
		if len(w.Data) == 0 {
			w.Data = json.RawMessage("{}")
		}
	case "", PartKindText:
		w.Kind = PartKindText
		w.Text = &p.Text
	default:
		return partWire{}, fmt.Errorf("a2a: marshal part: unknown kind %q", p.Kind)
	}
	return w, nil
}

// UnmarshalJSON decodes a part of any kind, with or without "kind" (A2A 1.0 parts have none:
// {"text"}, {"raw"}, {"url"} or {"data"}). An unknown kind leaves Kind empty (Parts drops such
// parts) rather than failing.
func (p *Part) UnmarshalJSON(data []byte) error {
	var w partWire
	if err := jsonv1.Unmarshal(data, &w); err != nil {
		return err
	}
	*p = w.part()
	return nil
}

// UnmarshalJSONFrom is UnmarshalJSON reading from the decoder of the enclosing value, so that
// the part is scanned once: with UnmarshalJSON the decoder first scans the part to hand over its
// bytes, which the method then parses again.
func (p *Part) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	dec.PeekKind()
	depth, start := onepass.Start(dec)
	var w partWire
	if err := jsonv2.UnmarshalDecode(dec, &w, jsonv1.DefaultOptionsV1()); err != nil {
		return onepass.NestedError(depth, start, "partWire", err)
	}
	*p = w.part()
	return nil
}

// part is the Part w stands for; its Kind is empty when the kind is unknown.
func (w partWire) part() Part {
	p := Part{Metadata: w.Metadata}
	kind := w.Kind
	if kind == "" {
		switch {
		case w.Text != nil:
			kind = PartKindText
		case w.File != nil:
			kind = PartKindFile
		case len(w.Data) > 0 && !bytes.Equal(w.Data, []byte("null")):
			kind = PartKindData
		case w.Raw != nil || w.URL != nil:
			kind = PartKindFile
			w.File = &FileContent{Name: w.Filename, MimeType: w.MediaType}
			if w.Raw != nil {
				w.File.Bytes = *w.Raw
			}
			if w.URL != nil {
				w.File.URI = *w.URL
			}
		}
	}
	switch kind {
	case PartKindText:
		if w.Text != nil {
			p.Text = *w.Text
		}
	case PartKindFile:
		p.File = w.File
	case PartKindData:
		p.Data = w.Data
	default:
		return p
	}
	p.Kind = kind
	return p
}

// Task is a stateful unit of work at the agent.
type Task struct {
	ID        string `json:"id"`
	ContextID string `json:"contextId"`
	// Kind is "task"; Marshal fills it in when empty.
	Kind      string         `json:"kind"`
	Status    TaskStatus     `json:"status"`
	Artifacts []Artifact     `json:"artifacts,omitempty"`
	History   []Message      `json:"history,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// MarshalJSON writes the task with its kind.
func (t Task) MarshalJSON() ([]byte, error) {
	type plain Task
	if t.Kind == "" {
		t.Kind = KindTask
	}
	return json.Marshal(plain(t))
}

// TaskStatus is a task's state at a point in time.
type TaskStatus struct {
	State TaskState `json:"state"`
	// Message is where agents often put the question of an input-required state.
	Message *Message `json:"message,omitempty"`
	// Timestamp is kept as sent (ISO 8601 per the spec): a malformed timestamp must not fail a
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

// MarshalJSON writes a non-null parts array.
func (a Artifact) MarshalJSON() ([]byte, error) {
	type plain Artifact
	if a.Parts == nil {
		a.Parts = Parts{}
	}
	return json.Marshal(plain(a))
}

// TaskStatusUpdateEvent reports a task's new status during a stream.
type TaskStatusUpdateEvent struct {
	// Kind is "status-update"; Marshal fills it in when empty.
	Kind      string     `json:"kind"`
	TaskID    string     `json:"taskId"`
	ContextID string     `json:"contextId"`
	Status    TaskStatus `json:"status"`
	// Final is the server's claim that this is the last event of the stream. Servers disagree on
	// when they set it; callers should decide by Status.State.
	Final    bool           `json:"final"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// MarshalJSON writes the event with its kind.
func (e TaskStatusUpdateEvent) MarshalJSON() ([]byte, error) {
	type plain TaskStatusUpdateEvent
	if e.Kind == "" {
		e.Kind = KindStatusUpdate
	}
	return json.Marshal(plain(e))
}

// TaskArtifactUpdateEvent carries a whole artifact or a chunk of one during a stream.
type TaskArtifactUpdateEvent struct {
	// Kind is "artifact-update"; Marshal fills it in when empty.
	Kind      string   `json:"kind"`
	TaskID    string   `json:"taskId"`
	ContextID string   `json:"contextId"`
	Artifact  Artifact `json:"artifact"`
	// Append true adds the parts to the artifact with the same ArtifactID; false replaces it.
	Append bool `json:"append,omitempty"`
	// LastChunk true says the artifact is complete.
	LastChunk bool           `json:"lastChunk,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// MarshalJSON writes the event with its kind.
func (e TaskArtifactUpdateEvent) MarshalJSON() ([]byte, error) {
	type plain TaskArtifactUpdateEvent
	if e.Kind == "" {
		e.Kind = KindArtifactUpdate
	}
	return json.Marshal(plain(e))
}

// MessageSendParams are the params of message/send and message/stream.
type MessageSendParams struct {
	Message       Message                   `json:"message"`
	Configuration *MessageSendConfiguration `json:"configuration,omitempty"`
	Metadata      map[string]any            `json:"metadata,omitempty"`
}

// MessageSendConfiguration tunes a send. Pointers distinguish "not sent" from a zero value so
// that the agent's own defaults apply unless the caller decides.
type MessageSendConfiguration struct {
	AcceptedOutputModes []string `json:"acceptedOutputModes,omitempty"`
	// Blocking true asks the agent to answer message/send only when the task is final or
	// interrupted (agents may still answer earlier).
	Blocking      *bool `json:"blocking,omitempty"`
	HistoryLength *int  `json:"historyLength,omitempty"`
}

// TaskQueryParams are the params of tasks/get.
type TaskQueryParams struct {
	ID            string         `json:"id"`
	HistoryLength *int           `json:"historyLength,omitempty"`
	Metadata      map[string]any `json:"metadata,omitempty"`
}

// TaskIDParams are the params of tasks/cancel and tasks/resubscribe.
type TaskIDParams struct {
	ID       string         `json:"id"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// Event is a result of message/send, message/stream or tasks/resubscribe: exactly one of *Task,
// *Message, *TaskStatusUpdateEvent or *TaskArtifactUpdateEvent. Callers switch on the type:
//
//	switch e := ev.(type) {
//	case *a2a.Task: ...
//	case *a2a.Message: ...
//	case *a2a.TaskStatusUpdateEvent: ...
//	case *a2a.TaskArtifactUpdateEvent: ...
//	}
type Event interface {
	// EventKind returns the kind of the event (KindTask, KindMessage, KindStatusUpdate or
	// KindArtifactUpdate), also when the wire object had no "kind" and it was inferred.
	EventKind() string
	isEvent()
}

// EventKind implements Event.
func (*Task) EventKind() string { return KindTask }

// EventKind implements Event.
func (*Message) EventKind() string { return KindMessage }

// EventKind implements Event.
func (*TaskStatusUpdateEvent) EventKind() string { return KindStatusUpdate }

// EventKind implements Event.
func (*TaskArtifactUpdateEvent) EventKind() string { return KindArtifactUpdate }

func (*Task) isEvent()                    {}
func (*Message) isEvent()                 {}
func (*TaskStatusUpdateEvent) isEvent()   {}
func (*TaskArtifactUpdateEvent) isEvent() {}

// eventProbe reads only what is needed to tell the kinds apart, without copying any of it.
type eventProbe struct {
	Kind      *string  `json:"kind"`
	ID        presence `json:"id"`
	TaskID    presence `json:"taskId"`
	MessageID presence `json:"messageId"`
	Status    presence `json:"status"`
	Artifact  presence `json:"artifact"`
	Parts     presence `json:"parts"`
}

// presence records whether a member is there with a value other than null. Unlike a
// json.RawMessage it keeps no copy of the value (the decoder only skips over it).
type presence bool

// UnmarshalJSON implements json.Unmarshaler.
func (p *presence) UnmarshalJSON(data []byte) error {
	*p = presence(!bytes.Equal(data, []byte("null")))
	return nil
}

// UnmarshalJSONFrom skips the value in the decoder of the enclosing object instead of having it
// sliced out for UnmarshalJSON.
func (p *presence) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	*p = presence(dec.PeekKind() != 'n')
	return dec.SkipValue()
}

// DecodeEvent decodes a JSON-RPC result into an Event by its "kind". Without a kind it goes by
// shape: "artifact" → artifact-update; "status" with "taskId" → status-update; "status" with "id"
// → task; "messageId" with "parts" → message. An unknown kind or shape is a *DecodeError with
// UnknownKind; malformed JSON one without. The Kind field of the result is set to the kind
// decided here.
func DecodeEvent(data []byte) (Event, error) {
	if ev := decodeEventByGuess(data); ev != nil {
		return ev, nil
	}
	return decodeEventProbed(data)
}

// decodeEventProbed is DecodeEvent in two passes: the probe finds the kind, then the result is
// decoded as that kind.
func decodeEventProbed(data []byte) (Event, error) {
	var probe eventProbe
	if err := jsonv1.Unmarshal(data, &probe); err != nil {
		return nil, &DecodeError{Detail: "result: " + err.Error(), Err: err}
	}
	kind := ""
	if probe.Kind != nil {
		kind = *probe.Kind
	}
	if kind == "" {
		switch {
		case bool(probe.Artifact):
			kind = KindArtifactUpdate
		case bool(probe.Status && probe.TaskID):
			kind = KindStatusUpdate
		case bool(probe.Status && probe.ID):
			kind = KindTask
		case bool(probe.MessageID && probe.Parts):
			kind = KindMessage
		default:
			return nil, &DecodeError{UnknownKind: true, Detail: "result has no kind and no recognisable shape"}
		}
	}
	var ev Event
	switch kind {
	case KindTask:
		ev = &Task{}
	case KindMessage:
		ev = &Message{}
	case KindStatusUpdate:
		ev = &TaskStatusUpdateEvent{}
	case KindArtifactUpdate:
		ev = &TaskArtifactUpdateEvent{}
	default:
		return nil, &DecodeError{UnknownKind: true, Detail: fmt.Sprintf("result kind %s", quoteShort(kind))}
	}
	if err := jsonv1.Unmarshal(data, ev); err != nil {
		return nil, &DecodeError{Detail: kind + ": " + err.Error(), Err: err}
	}
	switch e := ev.(type) {
	case *Task:
		e.Kind = KindTask
	case *Message:
		e.Kind = KindMessage
	case *TaskStatusUpdateEvent:
		e.Kind = KindStatusUpdate
	case *TaskArtifactUpdateEvent:
		e.Kind = KindArtifactUpdate
	}
	return ev, nil
}

// decodeEventByGuess is DecodeEvent in one pass for results that state their kind, as agents'
// results do: it guesses the kind from the bytes, decodes the result as that kind, and keeps the
// event only when the "kind" it read on the way is the guess. DecodeEvent's probe then finds that
// kind too, so the event is the one decodeEventProbed makes; otherwise (nil) DecodeEvent decodes
// with the probe, also to report errors in its words.
func decodeEventByGuess(data []byte) Event {
	switch guessKind(data) {
	case KindTask:
		w := taskWithKind{Task: &Task{}}
		if jsonv1.Unmarshal(data, &w) == nil && w.Kind != nil && *w.Kind == KindTask {
			w.Task.Kind = KindTask
			return w.Task
		}
	case KindMessage:
		w := messageWithKind{Message: &Message{}}
		if jsonv1.Unmarshal(data, &w) == nil && w.Kind != nil && *w.Kind == KindMessage {
			w.Message.Kind = KindMessage
			return w.Message
		}
	case KindStatusUpdate:
		w := statusUpdateWithKind{TaskStatusUpdateEvent: &TaskStatusUpdateEvent{}}
		if jsonv1.Unmarshal(data, &w) == nil && w.Kind != nil && *w.Kind == KindStatusUpdate {
			w.TaskStatusUpdateEvent.Kind = KindStatusUpdate
			return w.TaskStatusUpdateEvent
		}
	case KindArtifactUpdate:
		w := artifactUpdateWithKind{TaskArtifactUpdateEvent: &TaskArtifactUpdateEvent{}}
		if jsonv1.Unmarshal(data, &w) == nil && w.Kind != nil && *w.Kind == KindArtifactUpdate {
			w.TaskArtifactUpdateEvent.Kind = KindArtifactUpdate
			return w.TaskArtifactUpdateEvent
		}
	}
	return nil
}

// The event types with their "kind" read as eventProbe reads it (a member of the outer struct
// shadows the embedded one's): the last "kind" member wins, and a null one leaves nil.
type (
	taskWithKind struct {
		*Task
		Kind *string `json:"kind"`
	}
	messageWithKind struct {
		*Message
		Kind *string `json:"kind"`
	}
	statusUpdateWithKind struct {
		*TaskStatusUpdateEvent
		Kind *string `json:"kind"`
	}
	artifactUpdateWithKind struct {
		*TaskArtifactUpdateEvent
		Kind *string `json:"kind"`
	}
)

// guessKind returns the event kind data most likely states, without parsing it: a "kind" member
// with the value task, status-update or artifact-update, else message (nested objects state only
// message, text, file or data). "" when there is none. Only a guess: decodeEventByGuess checks it.
func guessKind(data []byte) string {
	guess := ""
	for rest := data; ; {
		i := bytes.Index(rest, []byte(`"kind":`))
		if i < 0 {
			return guess
		}
		rest = bytes.TrimLeft(rest[i+len(`"kind":`):], " ")
		for _, k := range [...]string{KindTask, KindStatusUpdate, KindArtifactUpdate, KindMessage} {
			if len(rest) > len(k)+1 && rest[0] == '"' && string(rest[1:1+len(k)]) == k && rest[1+len(k)] == '"' {
				if k != KindMessage {
					return k
				}
				guess = k
			}
		}
	}
}
