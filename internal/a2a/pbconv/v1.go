package pbconv

import (
	"cmp"
	"encoding/json"
	"fmt"

	"github.com/a2a-connector/a2a-connector/internal/a2a"

	a2apbv0 "github.com/a2aproject/a2a-go/a2apb"
	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// A2A 1.0's proto messages (a2apb/v1) converted straight to and from the core model. The
// gRPC binding used to go through the 1.0 JSON both ways (protojson, then the JSON decoder); that
// round trip was 13 % of the connector's CPU on a gRPC turn. The mapping is the one the JSON
// path made, field for field; grpc_pb_test.go holds the two side by side.

// stateFromPB is the TaskState of a proto enum number. Both generations' protos number the
// states alike (0.3 spells 5 CANCELLED, 1.0 CANCELED): unspecified is "" (as the JSON that leaves
// the member out), an unknown number keeps its name so that callers can report it.
func stateFromPB(n int32, name string) a2a.TaskState {
	switch n {
	case 0:
		return ""
	case 1:
		return a2a.TaskStateSubmitted
	case 2:
		return a2a.TaskStateWorking
	case 3:
		return a2a.TaskStateCompleted
	case 4:
		return a2a.TaskStateFailed
	case 5:
		return a2a.TaskStateCanceled
	case 6:
		return a2a.TaskStateInputRequired
	case 7:
		return a2a.TaskStateRejected
	case 8:
		return a2a.TaskStateAuthRequired
	}
	return a2a.TaskState(name)
}

// roleFromPB is the Role of a proto enum number (numbered alike in both generations).
func roleFromPB(n int32, name string) a2a.Role {
	switch n {
	case 0:
		return ""
	case 1:
		return a2a.RoleUser
	case 2:
		return a2a.RoleAgent
	}
	return a2a.Role(name)
}

// roleToPB is the proto enum number of a Role: agent, else user (as the JSON wire).
func roleToPB(r a2a.Role) int32 {
	if r == a2a.RoleAgent {
		return 2
	}
	return 1
}

// EventFromPB converts an answer of either generation's A2AService: a SendMessageResponse, a
// StreamResponse or a bare Task (GetTask, CancelTask). ok is false for another message type.
// An answer with no payload is a *ProtocolError, as its JSON was.
func EventFromPB(m any) (ev a2a.Event, ok bool, err error) {
	switch r := m.(type) {
	case *a2apb.Task:
		ev = taskFromPB(r)
	case *a2apb.SendMessageResponse:
		ev = cmp.Or(ifSet(r.GetTask(), taskFromPB), ifSet(r.GetMessage(), messageFromPB))
	case *a2apb.StreamResponse:
		// The most specific payload first, as the JSON decoder picks among several members.
		ev = cmp.Or(ifSet(r.GetStatusUpdate(), statusUpdateFromPB), ifSet(r.GetArtifactUpdate(), artifactUpdateFromPB),
			ifSet(r.GetTask(), taskFromPB), ifSet(r.GetMessage(), messageFromPB))
	case *a2apbv0.Task:
		ev = taskFromPBV0(r)
	case *a2apbv0.SendMessageResponse:
		ev = cmp.Or(ifSet(r.GetTask(), taskFromPBV0), ifSet(r.GetMsg(), messageFromPBV0))
	case *a2apbv0.StreamResponse:
		ev = cmp.Or(ifSet(r.GetStatusUpdate(), statusUpdateFromPBV0), ifSet(r.GetArtifactUpdate(), artifactUpdateFromPBV0),
			ifSet(r.GetTask(), taskFromPBV0), ifSet(r.GetMsg(), messageFromPBV0))
	default:
		return nil, false, nil
	}
	if ev == nil {
		return nil, true, &a2a.ProtocolError{Kind: a2a.ProtocolUnknownKind, Detail: "result has none of task, message, statusUpdate, artifactUpdate"}
	}
	return ev, true, nil
}

// ifSet converts a oneof payload that is set; nil (no Event) when it is not.
func ifSet[P any, E a2a.Event](p *P, convert func(*P) E) a2a.Event {
	if p == nil {
		return nil
	}
	return convert(p)
}

// convertAll converts each element; nil for none, as a decoded JSON object without the member.
func convertAll[P, T any](ps []P, convert func(P) T) []T {
	if len(ps) == 0 {
		return nil
	}
	out := make([]T, len(ps))
	for i, p := range ps {
		out[i] = convert(p)
	}
	return out
}

func taskFromPB(t *a2apb.Task) *a2a.Task {
	return &a2a.Task{
		ID:        t.GetId(),
		ContextID: t.GetContextId(),
		Status:    statusFromPB(t.GetStatus()),
		Artifacts: convertAll(t.GetArtifacts(), artifactFromPB),
		History:   convertAll(t.GetHistory(), func(m *a2apb.Message) a2a.Message { return *messageFromPB(m) }),
		Metadata:  mapFromPB(t.GetMetadata()),
	}
}

func statusFromPB(s *a2apb.TaskStatus) a2a.TaskStatus {
	out := a2a.TaskStatus{State: stateFromPB(int32(s.GetState()), s.GetState().String()), Timestamp: timestampFromPB(s.GetTimestamp())}
	if s.GetMessage() != nil {
		out.Message = messageFromPB(s.GetMessage())
	}
	return out
}

func messageFromPB(m *a2apb.Message) *a2a.Message {
	return &a2a.Message{
		Role:             roleFromPB(int32(m.GetRole()), m.GetRole().String()),
		Parts:            partsFromPB(m.GetParts(), partFromPB),
		MessageID:        m.GetMessageId(),
		ContextID:        m.GetContextId(),
		TaskID:           m.GetTaskId(),
		ReferenceTaskIDs: stringsOrNil(m.GetReferenceTaskIds()),
		Metadata:         mapFromPB(m.GetMetadata()),
		Extensions:       stringsOrNil(m.GetExtensions()),
	}
}

func artifactFromPB(a *a2apb.Artifact) a2a.Artifact {
	return a2a.Artifact{
		ArtifactID:  a.GetArtifactId(),
		Name:        a.GetName(),
		Description: a.GetDescription(),
		Parts:       partsFromPB(a.GetParts(), partFromPB),
		Metadata:    mapFromPB(a.GetMetadata()),
		Extensions:  stringsOrNil(a.GetExtensions()),
	}
}

func statusUpdateFromPB(e *a2apb.TaskStatusUpdateEvent) *a2a.TaskStatusUpdateEvent {
	return &a2a.TaskStatusUpdateEvent{
		TaskID:    e.GetTaskId(),
		ContextID: e.GetContextId(),
		Status:    statusFromPB(e.GetStatus()),
		Metadata:  mapFromPB(e.GetMetadata()),
	}
}

func artifactUpdateFromPB(e *a2apb.TaskArtifactUpdateEvent) *a2a.TaskArtifactUpdateEvent {
	out := &a2a.TaskArtifactUpdateEvent{
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

// partsFromPB converts parts of either generation: nil for none, and parts without content
// dropped, as Parts' decoding does.
func partsFromPB[P any](ps []P, convert func(P) (a2a.Part, bool)) a2a.Parts {
	if len(ps) == 0 {
		return nil
	}
	out := make(a2a.Parts, 0, len(ps))
	for _, p := range ps {
		if q, ok := convert(p); ok {
			out = append(out, q)
		}
	}
	return out
}

// partFromPB is the Part of a 1.0 part; ok is false for one without content.
func partFromPB(p *a2apb.Part) (out a2a.Part, ok bool) {
	out = a2a.Part{Filename: p.GetFilename(), MediaType: p.GetMediaType(), Metadata: mapFromPB(p.GetMetadata())}
	switch c := p.GetContent().(type) {
	case *a2apb.Part_Text:
		out.Kind, out.Text = a2a.PartText, c.Text
	case *a2apb.Part_Raw:
		out.Kind, out.Raw = a2a.PartRaw, c.Raw
	case *a2apb.Part_Url:
		out.Kind, out.URL = a2a.PartURL, c.Url
	case *a2apb.Part_Data:
		if out.Data = rawFromPB(c.Data); out.Data == nil {
			return a2a.Part{}, false
		}
		out.Kind = a2a.PartData
	default:
		return a2a.Part{}, false
	}
	return out, true
}

// SendRequestToPB is the 1.0 SendMessageRequest of a send. Like the JSON dialect, it sends a
// configuration only when it says something.
func SendRequestToPB(p *a2a.SendMessageRequest, tenant string) (*a2apb.SendMessageRequest, error) {
	m, err := messageToPB(&p.Message)
	if err != nil {
		return nil, err
	}
	r := &a2apb.SendMessageRequest{Tenant: tenant, Message: m}
	if c := p.Configuration; c != nil && (len(c.AcceptedOutputModes) > 0 || c.HistoryLength != nil || c.ReturnImmediately) {
		r.Configuration = &a2apb.SendMessageConfiguration{AcceptedOutputModes: c.AcceptedOutputModes, ReturnImmediately: c.ReturnImmediately}
		if c.HistoryLength != nil {
			n, err := Int32Of(*c.HistoryLength)
			if err != nil {
				return nil, err
			}
			r.Configuration.HistoryLength = &n
		}
	}
	if r.Metadata, err = StructToPB(p.Metadata); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	return r, nil
}

func messageToPB(m *a2a.Message) (*a2apb.Message, error) {
	parts, md, err := messageContentToPB(m, partToPB)
	if err != nil {
		return nil, err
	}
	return &a2apb.Message{MessageId: m.MessageID, ContextId: m.ContextID, TaskId: m.TaskID, Role: a2apb.Role(roleToPB(m.Role)),
		Parts: parts, Metadata: md, Extensions: m.Extensions, ReferenceTaskIds: m.ReferenceTaskIDs}, nil
}

// messageContentToPB converts a message's parts (with either generation's partToPB) and its
// metadata.
func messageContentToPB[P any](m *a2a.Message, partToPB func(*a2a.Part) (P, error)) ([]P, *structpb.Struct, error) {
	parts := make([]P, 0, len(m.Parts))
	for i := range m.Parts {
		p, err := partToPB(&m.Parts[i])
		if err != nil {
			return nil, nil, fmt.Errorf("part %d: %w", i, err)
		}
		parts = append(parts, p)
	}
	md, err := StructToPB(m.Metadata)
	if err != nil {
		return nil, nil, fmt.Errorf("message metadata: %w", err)
	}
	return parts, md, nil
}

// partToPB is the 1.0 part of a Part (see PartJSONOf, the same mapping for JSON).
func partToPB(p *a2a.Part) (*a2apb.Part, error) {
	md, err := StructToPB(p.Metadata)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	out := &a2apb.Part{Metadata: md, Filename: p.Filename, MediaType: p.MediaType}
	switch p.Kind {
	case a2a.PartRaw:
		out.Content = &a2apb.Part_Raw{Raw: p.Raw}
	case a2a.PartURL:
		out.Content = &a2apb.Part_Url{Url: p.URL}
	case a2a.PartData:
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
