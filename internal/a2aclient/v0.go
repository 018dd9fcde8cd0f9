package a2aclient

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/a2a-connector/a2a-connector/internal/a2a"

	"github.com/a2a-connector/a2a-connector/internal/a2a/a2av0"
)

// v0Dialect is A2A 0.2.5/0.3 over JSON-RPC: requests and answers are package a2av0's wire
// structs, converted from and to the core model here.
type v0Dialect struct{}

func (v0Dialect) method(op Op) string {
	switch op {
	case OpSendMessage:
		return a2av0.MethodMessageSend
	case OpStreamMessage:
		return a2av0.MethodMessageStream
	case OpGetTask:
		return a2av0.MethodTasksGet
	case OpCancelTask:
		return a2av0.MethodTasksCancel
	case OpGetExtendedAgentCard:
		return a2av0.MethodGetExtendedCard
	default:
		return a2av0.MethodTasksResubscribe
	}
}

func (v0Dialect) header(http.Header) {}

func (v0Dialect) encodeParams(_ Op, params any, _ string) ([]byte, error) {
	switch p := params.(type) {
	case *a2a.SendMessageRequest:
		w := sendParamsToV0(p)
		// The params of every turn: written by hand (appendSendParams), same bytes.
		size := 1024
		for i := range w.Message.Parts {
			size += len(w.Message.Parts[i].Text)
		}
		if b, ok := appendSendParams(make([]byte, 0, size), w); ok {
			return b, nil
		}
		return marshalBody(w)
	case a2a.GetTaskRequest:
		return marshalBody(a2av0.TaskQueryParams{ID: p.ID, HistoryLength: p.HistoryLength})
	case a2a.CancelTaskRequest:
		return marshalBody(a2av0.TaskIDParams{ID: p.ID, Metadata: p.Metadata})
	case a2a.SubscribeToTaskRequest:
		return marshalBody(a2av0.TaskIDParams{ID: p.ID})
	case extendedCardParams:
		return []byte("{}"), nil
	default:
		return nil, fmt.Errorf("a2a: no A2A 0.x params for %T", params)
	}
}

func (v0Dialect) decodeResult(_ Op, result []byte) (a2a.Event, error) {
	return decodeEventV0(result)
}

// decodeEventV0 decodes a 0.x JSON-RPC result (a2av0.DecodeEvent) into the core model; its
// errors are *ProtocolError without a method.
func decodeEventV0(data []byte) (a2a.Event, error) {
	ev, err := a2av0.DecodeEvent(data)
	if err != nil {
		kind := a2a.ProtocolBadJSON
		if de, ok := err.(*a2av0.DecodeError); ok {
			if de.UnknownKind {
				kind = a2a.ProtocolUnknownKind
			}
			return nil, &a2a.ProtocolError{Kind: kind, Detail: de.Detail, Err: de.Err}
		}
		return nil, &a2a.ProtocolError{Kind: kind, Detail: err.Error(), Err: err}
	}
	return eventFromV0(ev), nil
}

// eventFromV0 converts a 0.x event into the core model.
func eventFromV0(ev a2av0.Event) a2a.Event {
	switch e := ev.(type) {
	case *a2av0.Task:
		return taskFromV0(e)
	case *a2av0.Message:
		m := messageFromV0(e)
		return &m
	case *a2av0.TaskStatusUpdateEvent:
		return &a2a.TaskStatusUpdateEvent{TaskID: e.TaskID, ContextID: e.ContextID, Status: statusFromV0(&e.Status), Metadata: e.Metadata}
	case *a2av0.TaskArtifactUpdateEvent:
		return &a2a.TaskArtifactUpdateEvent{TaskID: e.TaskID, ContextID: e.ContextID, Artifact: artifactFromV0(&e.Artifact),
			Append: e.Append, LastChunk: e.LastChunk, Metadata: e.Metadata}
	}
	return nil
}

func taskFromV0(t *a2av0.Task) *a2a.Task {
	out := &a2a.Task{ID: t.ID, ContextID: t.ContextID, Status: statusFromV0(&t.Status), Metadata: t.Metadata}
	if t.Artifacts != nil {
		out.Artifacts = make([]a2a.Artifact, len(t.Artifacts))
		for i := range t.Artifacts {
			out.Artifacts[i] = artifactFromV0(&t.Artifacts[i])
		}
	}
	if t.History != nil {
		out.History = make([]a2a.Message, len(t.History))
		for i := range t.History {
			out.History[i] = messageFromV0(&t.History[i])
		}
	}
	return out
}

func statusFromV0(s *a2av0.TaskStatus) a2a.TaskStatus {
	out := a2a.TaskStatus{State: stateFromV0(s.State), Timestamp: s.Timestamp}
	if s.Message != nil {
		m := messageFromV0(s.Message)
		out.Message = &m
	}
	return out
}

func messageFromV0(m *a2av0.Message) a2a.Message {
	return a2a.Message{MessageID: m.MessageID, ContextID: m.ContextID, TaskID: m.TaskID, Role: roleFromV0(m.Role),
		Parts: partsFromV0(m.Parts), Metadata: m.Metadata, Extensions: m.Extensions, ReferenceTaskIDs: m.ReferenceTaskIDs}
}

func artifactFromV0(a *a2av0.Artifact) a2a.Artifact {
	return a2a.Artifact{ArtifactID: a.ArtifactID, Name: a.Name, Description: a.Description, Parts: partsFromV0(a.Parts),
		Metadata: a.Metadata, Extensions: a.Extensions}
}

func partsFromV0(ps a2av0.Parts) a2a.Parts {
	if ps == nil {
		return nil
	}
	out := make(a2a.Parts, len(ps))
	for i := range ps {
		out[i] = partFromV0(&ps[i])
	}
	return out
}

// partFromV0 converts a 0.x part: a file with bytes is a raw part, a file with only a URI a URL
// part.
func partFromV0(p *a2av0.Part) a2a.Part {
	out := a2a.Part{Metadata: p.Metadata}
	switch p.Kind {
	case a2av0.PartKindFile:
		f := p.File
		if f == nil {
			f = &a2av0.FileContent{}
		}
		out.Filename, out.MediaType = f.Name, f.MimeType
		if f.URI != "" && f.Bytes == "" {
			out.Kind, out.URL = a2a.PartURL, f.URI
		} else {
			out.Kind, out.Raw = a2a.PartRaw, a2a.DecodeBase64(f.Bytes)
		}
	case a2av0.PartKindData:
		out.Kind, out.Data = a2a.PartData, p.Data
	default:
		out.Kind, out.Text = a2a.PartText, p.Text
	}
	return out
}

// stateFromV0 is the 1.0 state of a 0.x one; a state 0.x does not define keeps its spelling.
func stateFromV0(s a2av0.TaskState) a2a.TaskState {
	if v1, ok := a2a.StateOfV0(string(s)); ok {
		return v1
	}
	return a2a.TaskState(s)
}

func roleFromV0(r a2av0.Role) a2a.Role {
	switch r {
	case a2av0.RoleAgent:
		return a2a.RoleAgent
	case a2av0.RoleUser:
		return a2a.RoleUser
	case "":
		return a2a.RoleUnspecified
	}
	return a2a.Role(r)
}

// sendParamsToV0 converts a send request into the 0.x params. The 0.x "blocking" is written
// whenever there is a configuration: agents of that generation read a configuration without it
// as non-blocking.
func sendParamsToV0(p *a2a.SendMessageRequest) *a2av0.MessageSendParams {
	w := &a2av0.MessageSendParams{Message: messageToV0(&p.Message), Metadata: p.Metadata}
	if c := p.Configuration; c != nil {
		blocking := !c.ReturnImmediately
		w.Configuration = &a2av0.MessageSendConfiguration{AcceptedOutputModes: c.AcceptedOutputModes, Blocking: &blocking, HistoryLength: c.HistoryLength}
	}
	return w
}

func messageToV0(m *a2a.Message) a2av0.Message {
	w := a2av0.Message{Kind: a2av0.KindMessage, Role: roleToV0(m.Role), MessageID: m.MessageID, ContextID: m.ContextID, TaskID: m.TaskID,
		ReferenceTaskIDs: m.ReferenceTaskIDs, Metadata: m.Metadata, Extensions: m.Extensions, Parts: make(a2av0.Parts, len(m.Parts))}
	for i := range m.Parts {
		w.Parts[i] = partToV0(&m.Parts[i])
	}
	return w
}

func roleToV0(r a2a.Role) a2av0.Role {
	if r == a2a.RoleAgent {
		return a2av0.RoleAgent
	}
	return a2av0.RoleUser
}

func partToV0(p *a2a.Part) a2av0.Part {
	w := a2av0.Part{Metadata: p.Metadata}
	switch p.Kind {
	case a2a.PartRaw:
		w.Kind, w.File = a2av0.PartKindFile, &a2av0.FileContent{Name: p.Filename, MimeType: p.MediaType, Bytes: base64.StdEncoding.EncodeToString(p.Raw)}
	case a2a.PartURL:
		w.Kind, w.File = a2av0.PartKindFile, &a2av0.FileContent{Name: p.Filename, MimeType: p.MediaType, URI: p.URL}
	case a2a.PartData:
		w.Kind, w.Data = a2av0.PartKindData, p.Data
		if len(w.Data) == 0 {
			w.Data = json.RawMessage("{}")
		}
	default:
		w.Kind, w.Text = a2av0.PartKindText, p.Text
	}
	return w
}
