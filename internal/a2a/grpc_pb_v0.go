package a2a

import (
	"encoding/json"
	"fmt"

	a2apbv0 "github.com/a2aproject/a2a-go/a2apb"
	"google.golang.org/protobuf/types/known/structpb"
)

// A2A 0.3's proto messages (a2a-go's a2apb, package a2a.v1) converted straight to and from the
// neutral types, as grpc_pb.go does for 1.0 (whose eventFromPB takes both generations' answers). 0.3's parts differ: a file is a FilePart (URI or
// bytes, mimeType, name) and data a DataPart holding an object; a status carries "final".

func taskFromPBV0(t *a2apbv0.Task) *Task {
	return &Task{
		Kind:      KindTask,
		ID:        t.GetId(),
		ContextID: t.GetContextId(),
		Status:    statusFromPBV0(t.GetStatus()),
		Artifacts: convertAll(t.GetArtifacts(), artifactFromPBV0),
		History:   convertAll(t.GetHistory(), func(m *a2apbv0.Message) Message { return *messageFromPBV0(m) }),
		Metadata:  mapFromPB(t.GetMetadata()),
	}
}

func statusFromPBV0(s *a2apbv0.TaskStatus) TaskStatus {
	out := TaskStatus{State: stateFromPB(int32(s.GetState()), s.GetState().String()), Timestamp: timestampFromPB(s.GetTimestamp())}
	if s.GetUpdate() != nil {
		out.Message = messageFromPBV0(s.GetUpdate())
	}
	return out
}

func messageFromPBV0(m *a2apbv0.Message) *Message {
	return &Message{
		Kind:             KindMessage,
		Role:             roleFromPB(int32(m.GetRole()), m.GetRole().String()),
		Parts:            partsFromPB(m.GetParts(), partFromPBV0),
		MessageID:        m.GetMessageId(),
		ContextID:        m.GetContextId(),
		TaskID:           m.GetTaskId(),
		ReferenceTaskIDs: stringsOrNil(m.GetReferenceTaskIds()),
		Metadata:         mapFromPB(m.GetMetadata()),
		Extensions:       stringsOrNil(m.GetExtensions()),
	}
}

func artifactFromPBV0(a *a2apbv0.Artifact) Artifact {
	return Artifact{
		ArtifactID:  a.GetArtifactId(),
		Name:        a.GetName(),
		Description: a.GetDescription(),
		Parts:       partsFromPB(a.GetParts(), partFromPBV0),
		Metadata:    mapFromPB(a.GetMetadata()),
		Extensions:  stringsOrNil(a.GetExtensions()),
	}
}

func statusUpdateFromPBV0(e *a2apbv0.TaskStatusUpdateEvent) *TaskStatusUpdateEvent {
	return &TaskStatusUpdateEvent{
		Kind:      KindStatusUpdate,
		TaskID:    e.GetTaskId(),
		ContextID: e.GetContextId(),
		Status:    statusFromPBV0(e.GetStatus()),
		Final:     e.GetFinal(),
		Metadata:  mapFromPB(e.GetMetadata()),
	}
}

func artifactUpdateFromPBV0(e *a2apbv0.TaskArtifactUpdateEvent) *TaskArtifactUpdateEvent {
	out := &TaskArtifactUpdateEvent{
		Kind:      KindArtifactUpdate,
		TaskID:    e.GetTaskId(),
		ContextID: e.GetContextId(),
		Append:    e.GetAppend(),
		LastChunk: e.GetLastChunk(),
		Metadata:  mapFromPB(e.GetMetadata()),
	}
	if e.GetArtifact() != nil {
		out.Artifact = artifactFromPBV0(e.GetArtifact())
	}
	return out
}

// partFromPBV0 is the neutral Part of a 0.3 part; Kind is empty for one without content.
func partFromPBV0(p *a2apbv0.Part) Part {
	out := Part{Metadata: mapFromPB(p.GetMetadata())}
	switch c := p.GetPart().(type) {
	case *a2apbv0.Part_Text:
		out.Kind, out.Text = PartKindText, c.Text
	case *a2apbv0.Part_File:
		f := &FileContent{Name: c.File.GetName(), MimeType: c.File.GetMimeType()}
		switch fc := c.File.GetFile().(type) {
		case *a2apbv0.FilePart_FileWithUri:
			f.URI = fc.FileWithUri
		case *a2apbv0.FilePart_FileWithBytes:
			f.Bytes = bytesFromPB(fc.FileWithBytes)
		}
		out.Kind, out.File = PartKindFile, f
	case *a2apbv0.Part_Data:
		if d := c.Data.GetData(); d != nil {
			out.Kind, out.Data = PartKindData, rawFromPB(structpb.NewStructValue(d))
		}
	}
	return out
}

// sendRequestToPBV0 is the 0.3 SendMessageRequest of params: a configuration only when it says
// something, and blocking when asked. 0.3's proto has blocking (1.0's has returnImmediately
// instead): without it, a configuration reads as non-blocking to @a2a-js and a2a-python, which
// then answer at once.
func sendRequestToPBV0(p *MessageSendParams) (*a2apbv0.SendMessageRequest, error) {
	m, err := messageToPBV0(&p.Message)
	if err != nil {
		return nil, err
	}
	r := &a2apbv0.SendMessageRequest{Request: m}
	blocking := false
	if c := p.Configuration; c != nil && c.Blocking != nil {
		blocking = *c.Blocking
	}
	if c := p.Configuration; c != nil && (len(c.AcceptedOutputModes) > 0 || c.HistoryLength != nil || blocking) {
		r.Configuration = &a2apbv0.SendMessageConfiguration{AcceptedOutputModes: c.AcceptedOutputModes, Blocking: blocking}
		if c.HistoryLength != nil {
			if r.Configuration.HistoryLength, err = int32Of(*c.HistoryLength); err != nil {
				return nil, err
			}
		}
	}
	if r.Metadata, err = structToPB(p.Metadata); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	return r, nil
}

func messageToPBV0(m *Message) (*a2apbv0.Message, error) {
	parts, md, err := messageContentToPB(m, partToPBV0)
	if err != nil {
		return nil, err
	}
	return &a2apbv0.Message{MessageId: m.MessageID, ContextId: m.ContextID, TaskId: m.TaskID, Role: a2apbv0.Role(roleToPB(m.Role)),
		Parts: parts, Metadata: md, Extensions: m.Extensions, ReferenceTaskIds: m.ReferenceTaskIDs}, nil
}

// partToPBV0 is the 0.3 part of a neutral one. Data that is not an object (0.3's DataPart holds
// only objects) is sent as an empty object rather than failing the turn.
func partToPBV0(p *Part) (*a2apbv0.Part, error) {
	md, err := structToPB(p.Metadata)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	out := &a2apbv0.Part{Metadata: md}
	switch p.Kind {
	case PartKindFile:
		fp := &a2apbv0.FilePart{}
		if f := p.File; f != nil {
			fp.Name, fp.MimeType = f.Name, f.MimeType
			switch {
			case f.URI != "":
				fp.File = &a2apbv0.FilePart_FileWithUri{FileWithUri: f.URI}
			case f.Bytes != "":
				b, err := bytesToPB(f.Bytes)
				if err != nil {
					return nil, err
				}
				fp.File = &a2apbv0.FilePart_FileWithBytes{FileWithBytes: b}
			}
		}
		out.Part = &a2apbv0.Part_File{File: fp}
	case PartKindData:
		raw := p.Data
		if len(raw) == 0 {
			raw = json.RawMessage("{}")
		}
		v, err := valueToPB(raw)
		if err != nil {
			return nil, fmt.Errorf("data: %w", err)
		}
		d := &a2apbv0.DataPart{Data: v.GetStructValue()}
		if d.Data == nil {
			d.Data = &structpb.Struct{}
		}
		out.Part = &a2apbv0.Part_Data{Data: d}
	default:
		out.Part = &a2apbv0.Part_Text{Text: p.Text}
	}
	return out, nil
}
