package a2a

import (
	"encoding/json"
	"fmt"
	jsonv1 "github.com/go-json-experiment/json/v1"
	"net/http"
	"strings"
)

// v1Dialect is A2A 1.0 (the spec's a2a.proto in its JSON form, as the official SDKs speak it).
// Requests are written from dedicated wire structs; results are decoded into the neutral types,
// whose JSON names 1.0 kept, and then normalized (enums, kinds), so that everything past the
// Client is the same for both wires.
type v1Dialect struct{}

func (v1Dialect) method(op Op) string {
	switch op {
	case OpSendMessage:
		return MethodSendMessage
	case OpStreamMessage:
		return MethodSendStreamingMessage
	case OpGetTask:
		return MethodGetTask
	case OpCancelTask:
		return MethodCancelTask
	default:
		return MethodSubscribeToTask
	}
}

func (v1Dialect) header(h http.Header) {
	h.Set(VersionHeader, "1.0")
	// Servers of either generation read one of the two names; sending both costs a header.
	if ext := h.Get(LegacyExtensionsHeader); ext != "" && h.Get(ExtensionsHeader) == "" {
		h.Set(ExtensionsHeader, ext)
	}
}

type v1SendParams struct {
	Message       v1Message      `json:"message"`
	Configuration *v1SendConfig  `json:"configuration,omitempty"`
	Metadata      map[string]any `json:"metadata,omitempty"`
	Tenant        string         `json:"tenant,omitempty"`
}

// v1SendConfig has no returnImmediately: its default (false) is the blocking send the
// connector wants, and MessageSendConfiguration.Blocking has no other meaning on this wire.
type v1SendConfig struct {
	AcceptedOutputModes []string `json:"acceptedOutputModes,omitempty"`
	HistoryLength       *int     `json:"historyLength,omitempty"`
}

type v1Message struct {
	MessageID        string         `json:"messageId"`
	ContextID        string         `json:"contextId,omitempty"`
	TaskID           string         `json:"taskId,omitempty"`
	Role             string         `json:"role"`
	Parts            []v1Part       `json:"parts"`
	Metadata         map[string]any `json:"metadata,omitempty"`
	Extensions       []string       `json:"extensions,omitempty"`
	ReferenceTaskIDs []string       `json:"referenceTaskIds,omitempty"`
}

// v1Part is a 1.0 part: exactly one of text, raw (base64), url and data, plus optional
// mediaType, filename and metadata.
type v1Part struct {
	Text      *string         `json:"text,omitempty"`
	Raw       string          `json:"raw,omitempty"`
	URL       string          `json:"url,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
	Metadata  map[string]any  `json:"metadata,omitempty"`
}

type v1TaskParams struct {
	ID            string         `json:"id"`
	HistoryLength *int           `json:"historyLength,omitempty"`
	Metadata      map[string]any `json:"metadata,omitempty"`
	Tenant        string         `json:"tenant,omitempty"`
}

func (v1Dialect) encodeParams(op Op, params any, tenant string) ([]byte, error) {
	switch p := params.(type) {
	case *MessageSendParams:
		w := v1SendParams{Message: v1MessageOf(p.Message), Metadata: p.Metadata, Tenant: tenant}
		if c := p.Configuration; c != nil && (len(c.AcceptedOutputModes) > 0 || c.HistoryLength != nil) {
			w.Configuration = &v1SendConfig{AcceptedOutputModes: c.AcceptedOutputModes, HistoryLength: c.HistoryLength}
		}
		return marshalBody(w)
	case TaskQueryParams:
		return marshalBody(v1TaskParams{ID: p.ID, HistoryLength: p.HistoryLength, Tenant: tenant})
	case TaskIDParams:
		w := v1TaskParams{ID: p.ID, Tenant: tenant}
		if op == OpCancelTask {
			w.Metadata = p.Metadata // SubscribeToTask has no metadata
		}
		return marshalBody(w)
	default:
		return nil, fmt.Errorf("a2a: no A2A 1.0 params for %T", params)
	}
}

func v1MessageOf(m Message) v1Message {
	role := "ROLE_USER"
	if m.Role == RoleAgent {
		role = "ROLE_AGENT"
	}
	w := v1Message{
		MessageID:        m.MessageID,
		ContextID:        m.ContextID,
		TaskID:           m.TaskID,
		Role:             role,
		Parts:            make([]v1Part, 0, len(m.Parts)),
		Metadata:         m.Metadata,
		Extensions:       m.Extensions,
		ReferenceTaskIDs: m.ReferenceTaskIDs,
	}
	for _, p := range m.Parts {
		w.Parts = append(w.Parts, v1PartOf(p))
	}
	return w
}

func v1PartOf(p Part) v1Part {
	w := v1Part{Metadata: p.Metadata}
	switch p.Kind {
	case PartKindFile:
		if p.File != nil {
			w.Raw, w.URL, w.Filename, w.MediaType = p.File.Bytes, p.File.URI, p.File.Name, p.File.MimeType
		}
	case PartKindData:
		w.Data = p.Data
		if len(w.Data) == 0 {
			w.Data = json.RawMessage("{}")
		}
	default:
		text := p.Text
		w.Text = &text
	}
	return w
}

// v1Wrapper is a SendMessage result or a stream event: one member names the kind.
type v1Wrapper struct {
	Task           *Task                    `json:"task"`
	Message        *Message                 `json:"message"`
	StatusUpdate   *TaskStatusUpdateEvent   `json:"statusUpdate"`
	ArtifactUpdate *TaskArtifactUpdateEvent `json:"artifactUpdate"`
}

func (v1Dialect) decodeResult(op Op, result []byte) (Event, error) {
	if op == OpGetTask || op == OpCancelTask {
		return decodeV1Task(result)
	}
	return DecodeEventV1(result)
}

// DecodeEventV1 decodes an A2A 1.0 SendMessage result or stream event ({"task": …},
// {"message": …}, {"statusUpdate": …} or {"artifactUpdate": …}) into a neutral Event, with
// enums and kinds in their 0.x spelling (TASK_STATE_INPUT_REQUIRED → "input-required",
// ROLE_AGENT → "agent"). A result with none of the four members is a *ProtocolError of kind
// "unknown_kind"; malformed JSON is "bad_json".
func DecodeEventV1(data []byte) (Event, error) {
	var w v1Wrapper
	if err := jsonv1.Unmarshal(data, &w); err != nil {
		return nil, &ProtocolError{Kind: ProtocolBadJSON, Detail: "result: " + err.Error(), Err: err}
	}
	var ev Event
	// Servers send exactly one member; when a broken one sends several, the most specific wins.
	switch {
	case w.StatusUpdate != nil:
		ev = w.StatusUpdate
	case w.ArtifactUpdate != nil:
		ev = w.ArtifactUpdate
	case w.Task != nil:
		ev = w.Task
	case w.Message != nil:
		ev = w.Message
	default:
		return nil, &ProtocolError{Kind: ProtocolUnknownKind, Detail: "result has none of task, message, statusUpdate, artifactUpdate"}
	}
	normalizeV1(ev)
	return ev, nil
}

// decodeV1Task decodes the bare Task that GetTask and CancelTask return (a {"task": …} wrapper
// is accepted too).
func decodeV1Task(data []byte) (Event, error) {
	var probe struct {
		Task json.RawMessage `json:"task"`
	}
	if err := jsonv1.Unmarshal(data, &probe); err != nil {
		return nil, &ProtocolError{Kind: ProtocolBadJSON, Detail: "result: " + err.Error(), Err: err}
	}
	if present(probe.Task) {
		data = probe.Task
	}
	var t Task
	if err := jsonv1.Unmarshal(data, &t); err != nil {
		return nil, &ProtocolError{Kind: ProtocolBadJSON, Detail: "task: " + err.Error(), Err: err}
	}
	normalizeV1(&t)
	return &t, nil
}

// normalizeV1 rewrites the 1.0 spellings of a decoded event into the neutral (0.x) ones.
func normalizeV1(ev Event) {
	switch e := ev.(type) {
	case *Task:
		e.Kind = KindTask
		normalizeStatus(&e.Status)
		for i := range e.History {
			normalizeMessage(&e.History[i])
		}
	case *Message:
		normalizeMessage(e)
	case *TaskStatusUpdateEvent:
		e.Kind = KindStatusUpdate
		normalizeStatus(&e.Status)
	case *TaskArtifactUpdateEvent:
		e.Kind = KindArtifactUpdate
	}
}

func normalizeStatus(s *TaskStatus) {
	s.State = StateFromV1(string(s.State))
	if s.Message != nil {
		normalizeMessage(s.Message)
	}
}

func normalizeMessage(m *Message) {
	m.Kind = KindMessage
	switch m.Role {
	case "ROLE_AGENT":
		m.Role = RoleAgent
	case "ROLE_USER":
		m.Role = RoleUser
	}
}

// StateFromV1 returns the neutral spelling of an A2A 1.0 task state: TASK_STATE_INPUT_REQUIRED
// becomes "input-required". A value without the prefix is returned as it is; a state A2A does not
// define keeps its (lowercased) name, so that callers can report it.
func StateFromV1(s string) TaskState {
	rest, ok := strings.CutPrefix(s, "TASK_STATE_")
	if !ok {
		return TaskState(s)
	}
	if rest == "CANCELLED" { // the 0.3 proto's spelling (gRPC and HTTP+JSON of 0.3)
		return TaskStateCanceled
	}
	return TaskState(strings.ReplaceAll(strings.ToLower(rest), "_", "-"))
}
