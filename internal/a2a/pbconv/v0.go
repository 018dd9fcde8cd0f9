package pbconv

import (
	"encoding/json"
	"fmt"

	"github.com/a2a-connector/a2a-connector/internal/a2a"

	a2apbv0 "github.com/a2aproject/a2a-go/a2apb"
	"google.golang.org/protobuf/types/known/structpb"
)

// A2A 0.3's proto messages (a2a-go's a2apb, package a2a.v1) converted straight to and from the
// core model, as v1.go does for 1.0 (whose EventFromPB takes both generations' answers). 0.3's parts differ: a file is a FilePart (URI or
// bytes, mimeType, name) and data a DataPart holding an object; a status carries "final" (which the model has no use for).

func taskFromPBV0(t *a2apbv0.Task) *a2a.Task {
	return &a2a.Task{
		ID:        t.GetId(),
		ContextID: t.GetContextId(),
		Status:    statusFromPBV0(t.GetStatus()),
		Artifacts: convertAll(t.GetArtifacts(), artifactFromPBV0),
		History:   convertAll(t.GetHistory(), func(m *a2apbv0.Message) a2a.Message { return *messageFromPBV0(m) }),
		Metadata:  mapFromPB(t.GetMetadata()),
	}
}

func statusFromPBV0(s *a2apbv0.TaskStatus) a2a.TaskStatus {
	out := a2a.TaskStatus{State: stateFromPB(int32(s.GetState()), s.GetState().String()), Timestamp: timestampFromPB(s.GetTimestamp())}
	if s.GetUpdate() != nil {
		out.Message = messageFromPBV0(s.GetUpdate())
	}
	return out
}

func messageFromPBV0(m *a2apbv0.Message) *a2a.Message {
	return &a2a.Message{
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

func artifactFromPBV0(a *a2apbv0.Artifact) a2a.Artifact {
	return a2a.Artifact{
		ArtifactID:  a.GetArtifactId(),
		Name:        a.GetName(),
		Description: a.GetDescription(),
		Parts:       partsFromPB(a.GetParts(), partFromPBV0),
		Metadata:    mapFromPB(a.GetMetadata()),
		Extensions:  stringsOrNil(a.GetExtensions()),
	}
}

func statusUpdateFromPBV0(e *a2apbv0.TaskStatusUpdateEvent) *a2a.TaskStatusUpdateEvent {
	return &a2a.TaskStatusUpdateEvent{
		TaskID:    e.GetTaskId(),
		ContextID: e.GetContextId(),
		Status:    statusFromPBV0(e.GetStatus()),
		Metadata:  mapFromPB(e.GetMetadata()),
	}
}

func artifactUpdateFromPBV0(e *a2apbv0.TaskArtifactUpdateEvent) *a2a.TaskArtifactUpdateEvent {
	out := &a2a.TaskArtifactUpdateEvent{
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

// partFromPBV0 is the Part of a 0.3 part; ok is false for one without content.
func partFromPBV0(p *a2apbv0.Part) (out a2a.Part, ok bool) {
	out = a2a.Part{Metadata: mapFromPB(p.GetMetadata())}
	switch c := p.GetPart().(type) {
	case *a2apbv0.Part_Text:
		out.Kind, out.Text = a2a.PartText, c.Text
	case *a2apbv0.Part_File:
		out.Filename, out.MediaType = c.File.GetName(), c.File.GetMimeType()
		switch fc := c.File.GetFile().(type) {
		case *a2apbv0.FilePart_FileWithUri:
			out.Kind, out.URL = a2a.PartURL, fc.FileWithUri
		case *a2apbv0.FilePart_FileWithBytes:
			out.Kind, out.Raw = a2a.PartRaw, fc.FileWithBytes
		default:
			out.Kind = a2a.PartRaw
		}
	case *a2apbv0.Part_Data:
		d := c.Data.GetData()
		if d == nil {
			return a2a.Part{}, false
		}
		out.Kind, out.Data = a2a.PartData, rawFromPB(structpb.NewStructValue(d))
	default:
		return a2a.Part{}, false
	}
	return out, true
}

// SendRequestToPBV0 is the 0.3 SendMessageRequest of a send: a configuration whenever there is
// one, with blocking unless it asks to return immediately. 0.3's proto has blocking (1.0's has
// returnImmediately instead): without it, a configuration reads as non-blocking to @a2a-js and
// a2a-python, which then answer at once.
func SendRequestToPBV0(p *a2a.SendMessageRequest) (*a2apbv0.SendMessageRequest, error) {
	m, err := messageToPBV0(&p.Message)
	if err != nil {
		return nil, err
	}
	r := &a2apbv0.SendMessageRequest{Request: m}
	if c := p.Configuration; c != nil {
		r.Configuration = &a2apbv0.SendMessageConfiguration{AcceptedOutputModes: c.AcceptedOutputModes, Blocking: !c.ReturnImmediately}
		if c.HistoryLength != nil {
			if r.Configuration.HistoryLength, err = Int32Of(*c.HistoryLength); err != nil {
				return nil, err
			}
		}
	}
	if r.Metadata, err = StructToPB(p.Metadata); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	return r, nil
}

func messageToPBV0(m *a2a.Message) (*a2apbv0.Message, error) {
	parts, md, err := messageContentToPB(m, partToPBV0)
	if err != nil {
		return nil, err
	}
	return &a2apbv0.Message{MessageId: m.MessageID, ContextId: m.ContextID, TaskId: m.TaskID, Role: a2apbv0.Role(roleToPB(m.Role)),
		Parts: parts, Metadata: md, Extensions: m.Extensions, ReferenceTaskIds: m.ReferenceTaskIDs}, nil
}

// partToPBV0 is the 0.3 part of a Part. Data that is not an object (0.3's DataPart holds only
// objects) is sent as an empty object rather than failing the turn; a text part's file name and
// media type have no place in 0.3.
func partToPBV0(p *a2a.Part) (*a2apbv0.Part, error) {
	md, err := StructToPB(p.Metadata)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	out := &a2apbv0.Part{Metadata: md}
	switch p.Kind {
	case a2a.PartRaw:
		out.Part = &a2apbv0.Part_File{File: &a2apbv0.FilePart{Name: p.Filename, MimeType: p.MediaType,
			File: &a2apbv0.FilePart_FileWithBytes{FileWithBytes: p.Raw}}}
	case a2a.PartURL:
		out.Part = &a2apbv0.Part_File{File: &a2apbv0.FilePart{Name: p.Filename, MimeType: p.MediaType,
			File: &a2apbv0.FilePart_FileWithUri{FileWithUri: p.URL}}}
	case a2a.PartData:
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
