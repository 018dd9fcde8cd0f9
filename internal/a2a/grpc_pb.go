package a2a

import (
	"encoding/json"
	"fmt"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
)

// A2A 1.0's proto messages (a2apb/v1) converted straight to and from the neutral types. The
// gRPC binding used to go through the 1.0 JSON both ways (protojson, then the JSON decoder); that
// round trip was 13 % of the connector's CPU on a gRPC turn. The mapping is the one the JSON
// path made, field for field; grpc_pb_test.go holds the two side by side.

// stateFromPB is the neutral TaskState of a proto enum number. Both generations' protos number
// the states alike (0.3 spells 5 CANCELLED, 1.0 CANCELED): unspecified is "" (protojson left the
// member out), an unknown number keeps its name so that callers can report it.
func stateFromPB(n int32, name string) TaskState {
	switch n {
	case 0:
		return ""
	case 1:
		return TaskStateSubmitted
	case 2:
		return TaskStateWorking
	case 3:
		return TaskStateCompleted
	case 4:
		return TaskStateFailed
	case 5:
		return TaskStateCanceled
	case 6:
		return TaskStateInputRequired
	case 7:
		return TaskStateRejected
	case 8:
		return TaskStateAuthRequired
	}
	return StateFromV1(name)
}

// roleFromPB is the neutral Role of a proto enum number (numbered alike in both generations).
func roleFromPB(n int32, name string) Role {
	switch n {
	case 0:
		return ""
	case 1:
		return RoleUser
	case 2:
		return RoleAgent
	}
	return Role(name)
}

// roleToPB is the proto enum number of a neutral Role: agent, else user (as the JSON wire).
func roleToPB(r Role) int32 {
	if r == RoleAgent {
		return 2
	}
	return 1
}

// eventFromPB converts an answer of the 1.0 A2AService: a SendMessageResponse, a
// StreamResponse or a bare Task (GetTask, CancelTask). ok is false for another message type.
func eventFromPB(m any) (ev Event, ok bool, err error) {
	switch r := m.(type) {
	case *a2apb.Task:
		return taskFromPB(r), true, nil
	case *a2apb.SendMessageResponse:
		switch p := r.GetPayload().(type) {
		case *a2apb.SendMessageResponse_Task:
			return taskFromPB(p.Task), true, nil
		case *a2apb.SendMessageResponse_Message:
			return messageFromPB(p.Message), true, nil
		}
	case *a2apb.StreamResponse:
		switch p := r.GetPayload().(type) {
		case *a2apb.StreamResponse_StatusUpdate:
			return statusUpdateFromPB(p.StatusUpdate), true, nil
		case *a2apb.StreamResponse_ArtifactUpdate:
			return artifactUpdateFromPB(p.ArtifactUpdate), true, nil
		case *a2apb.StreamResponse_Task:
			return taskFromPB(p.Task), true, nil
		case *a2apb.StreamResponse_Message:
			return messageFromPB(p.Message), true, nil
		}
	default:
		return nil, false, nil
	}
	return nil, true, &ProtocolError{Kind: ProtocolUnknownKind, Detail: "result has none of task, message, statusUpdate, artifactUpdate"}
}

func taskFromPB(t *a2apb.Task) *Task {
	out := &Task{
		Kind:      KindTask,
		ID:        t.GetId(),
		ContextID: t.GetContextId(),
		Status:    statusFromPB(t.GetStatus()),
		Metadata:  mapFromPB(t.GetMetadata()),
	}
	if as := t.GetArtifacts(); len(as) > 0 {
		out.Artifacts = make([]Artifact, len(as))
		for i, a := range as {
			out.Artifacts[i] = artifactFromPB(a)
		}
	}
	if hs := t.GetHistory(); len(hs) > 0 {
		out.History = make([]Message, len(hs))
		for i, h := range hs {
			out.History[i] = *messageFromPB(h)
		}
	}
	return out
}

func statusFromPB(s *a2apb.TaskStatus) TaskStatus {
	out := TaskStatus{State: stateFromPB(int32(s.GetState()), s.GetState().String()), Timestamp: timestampFromPB(s.GetTimestamp())}
	if s.GetMessage() != nil {
		out.Message = messageFromPB(s.GetMessage())
	}
	return out
}

func messageFromPB(m *a2apb.Message) *Message {
	return &Message{
		Kind:             KindMessage,
		Role:             roleFromPB(int32(m.GetRole()), m.GetRole().String()),
		Parts:            partsFromPB(m.GetParts()),
		MessageID:        m.GetMessageId(),
		ContextID:        m.GetContextId(),
		TaskID:           m.GetTaskId(),
		ReferenceTaskIDs: stringsOrNil(m.GetReferenceTaskIds()),
		Metadata:         mapFromPB(m.GetMetadata()),
		Extensions:       stringsOrNil(m.GetExtensions()),
	}
}

func artifactFromPB(a *a2apb.Artifact) Artifact {
	return Artifact{
		ArtifactID:  a.GetArtifactId(),
		Name:        a.GetName(),
		Description: a.GetDescription(),
		Parts:       partsFromPB(a.GetParts()),
		Metadata:    mapFromPB(a.GetMetadata()),
		Extensions:  stringsOrNil(a.GetExtensions()),
	}
}

func statusUpdateFromPB(e *a2apb.TaskStatusUpdateEvent) *TaskStatusUpdateEvent {
	return &TaskStatusUpdateEvent{
		Kind:      KindStatusUpdate,
		TaskID:    e.GetTaskId(),
		ContextID: e.GetContextId(),
		Status:    statusFromPB(e.GetStatus()),
		Metadata:  mapFromPB(e.GetMetadata()),
	}
}

func artifactUpdateFromPB(e *a2apb.TaskArtifactUpdateEvent) *TaskArtifactUpdateEvent {
	out := &TaskArtifactUpdateEvent{
		Kind:      KindArtifactUpdate,
		TaskID:    e.GetTaskId(),
		ContextID: e.GetContextId(),
		Append:    e.GetAppend(),
		LastChunk: e.GetLastChunk(),
		Metadata:  mapFromPB(e.GetMetadata()),
	}
	if e.GetArtifact() != nil {
		out.Artifact = artifactFromPB(e.GetArtifact())
	}
	return out
}

// partsFromPB keeps nil for no parts and drops parts without content, as Parts' decoding does.
func partsFromPB(ps []*a2apb.Part) Parts {
	if len(ps) == 0 {
		return nil
	}
	out := make(Parts, 0, len(ps))
	for _, p := range ps {
		if q := partFromPB(p); q.Kind != "" {
			out = append(out, q)
		}
	}
	return out
}

// partFromPB is the neutral Part of a 1.0 part; Kind is empty for one without content.
func partFromPB(p *a2apb.Part) Part {
	out := Part{Metadata: mapFromPB(p.GetMetadata())}
	switch c := p.GetContent().(type) {
	case *a2apb.Part_Text:
		out.Kind, out.Text = PartKindText, c.Text
	case *a2apb.Part_Raw:
		out.Kind = PartKindFile
		out.File = &FileContent{Name: p.GetFilename(), MimeType: p.GetMediaType(), Bytes: bytesFromPB(c.Raw)}
	case *a2apb.Part_Url:
		out.Kind = PartKindFile
		out.File = &FileContent{Name: p.GetFilename(), MimeType: p.GetMediaType(), URI: c.Url}
	case *a2apb.Part_Data:
		if out.Data = rawFromPB(c.Data); out.Data != nil {
			out.Kind = PartKindData
		}
	}
	return out
}

// sendRequestToPB is the 1.0 SendMessageRequest of params. Like the JSON dialect, it sends no
// returnImmediately (its default is the blocking send) and a configuration only when it says
// something.
func sendRequestToPB(p *MessageSendParams, tenant string) (*a2apb.SendMessageRequest, error) {
	m, err := messageToPB(&p.Message)
	if err != nil {
		return nil, err
	}
	r := &a2apb.SendMessageRequest{Tenant: tenant, Message: m}
	if c := p.Configuration; c != nil && (len(c.AcceptedOutputModes) > 0 || c.HistoryLength != nil) {
		r.Configuration = &a2apb.SendMessageConfiguration{AcceptedOutputModes: c.AcceptedOutputModes}
		if c.HistoryLength != nil {
			n, err := int32Of(*c.HistoryLength)
			if err != nil {
				return nil, err
			}
			r.Configuration.HistoryLength = &n
		}
	}
	if r.Metadata, err = structToPB(p.Metadata); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	return r, nil
}

func messageToPB(m *Message) (*a2apb.Message, error) {
	out := &a2apb.Message{
		MessageId:        m.MessageID,
		ContextId:        m.ContextID,
		TaskId:           m.TaskID,
		Role:             a2apb.Role(roleToPB(m.Role)),
		Parts:            make([]*a2apb.Part, 0, len(m.Parts)),
		Extensions:       m.Extensions,
		ReferenceTaskIds: m.ReferenceTaskIDs,
	}
	for i := range m.Parts {
		p, err := partToPB(&m.Parts[i])
		if err != nil {
			return nil, fmt.Errorf("part %d: %w", i, err)
		}
		out.Parts = append(out.Parts, p)
	}
	var err error
	if out.Metadata, err = structToPB(m.Metadata); err != nil {
		return nil, fmt.Errorf("message metadata: %w", err)
	}
	return out, nil
}

// partToPB is the 1.0 part of a neutral one (see v1PartOf, the same mapping for JSON).
func partToPB(p *Part) (*a2apb.Part, error) {
	md, err := structToPB(p.Metadata)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	out := &a2apb.Part{Metadata: md}
	switch p.Kind {
	case PartKindFile:
		f := p.File
		if f == nil {
			break
		}
		out.Filename, out.MediaType = f.Name, f.MimeType
		if f.Bytes != "" && f.URI != "" {
			return nil, fmt.Errorf("file part has both bytes and a URI")
		}
		switch {
		case f.URI != "":
			out.Content = &a2apb.Part_Url{Url: f.URI}
		case f.Bytes != "":
			b, err := bytesToPB(f.Bytes)
			if err != nil {
				return nil, err
			}
			out.Content = &a2apb.Part_Raw{Raw: b}
		}
	case PartKindData:
		raw := p.Data
		if len(raw) == 0 {
			raw = json.RawMessage("{}")
		}
		v, err := valueToPB(raw)
		if err != nil {
			return nil, fmt.Errorf("data: %w", err)
		}
		out.Content = &a2apb.Part_Data{Data: v}
	default:
		out.Content = &a2apb.Part_Text{Text: p.Text}
	}
	return out, nil
}
