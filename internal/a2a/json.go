package a2a

import (
	"encoding/base64"
	"encoding/json"

	jsonv1 "github.com/go-json-experiment/json/v1"
)

// PartJSONOf is p in 1.0's JSON form: its one content member, then file name, media type and
// metadata.
func PartJSONOf(p *Part) PartJSON {
	w := PartJSON{Filename: p.Filename, MediaType: p.MediaType, Metadata: p.Metadata}
	switch p.Kind {
	case PartRaw:
		raw := base64.StdEncoding.EncodeToString(p.Raw)
		w.Raw = &raw
	case PartURL:
		url := p.URL
		w.URL = &url
	case PartData:
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

// DecodeEventV1 decodes an A2A 1.0 SendMessage result or stream event ({"task": …},
// {"message": …}, {"statusUpdate": …} or {"artifactUpdate": …}) into an Event. A result with none of the four members is a *ProtocolError of kind
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

// DecodeTaskV1 decodes the bare Task that GetTask and CancelTask return (a {"task": …} wrapper
// is accepted too).
func DecodeTaskV1(data []byte) (Event, error) {
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

// normalizeV1 puts the spellings agents use on the 1.0 wire beside the spec's into the spec's
// (see canonicalState, canonicalRole).
func normalizeV1(ev Event) {
	switch e := ev.(type) {
	case *Task:
		normalizeStatus(&e.Status)
		for i := range e.History {
			e.History[i].Role = canonicalRole(e.History[i].Role)
		}
	case *Message:
		e.Role = canonicalRole(e.Role)
	case *TaskStatusUpdateEvent:
		normalizeStatus(&e.Status)
	}
}

func normalizeStatus(s *TaskStatus) {
	s.State = canonicalState(s.State)
	if s.Message != nil {
		s.Message.Role = canonicalRole(s.Message.Role)
	}
}
