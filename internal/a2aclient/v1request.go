package a2aclient

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/a2a-connector/a2a-connector/internal/a2a"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

type v1SendParams struct {
	Message       v1Message      `json:"message"`
	Configuration *v1SendConfig  `json:"configuration,omitempty"`
	Metadata      map[string]any `json:"metadata,omitempty"`
	Tenant        string         `json:"tenant,omitempty"`
}

type v1SendConfig struct {
	AcceptedOutputModes []string `json:"acceptedOutputModes,omitempty"`
	HistoryLength       *int     `json:"historyLength,omitempty"`
	ReturnImmediately   bool     `json:"returnImmediately,omitempty"`
}

type v1Message struct {
	MessageID        string         `json:"messageId"`
	ContextID        string         `json:"contextId,omitempty"`
	TaskID           string         `json:"taskId,omitempty"`
	Role             string         `json:"role"`
	Parts            []a2a.PartJSON `json:"parts"`
	Metadata         map[string]any `json:"metadata,omitempty"`
	Extensions       []string       `json:"extensions,omitempty"`
	ReferenceTaskIDs []string       `json:"referenceTaskIds,omitempty"`
}

type v1TaskParams struct {
	ID            string         `json:"id"`
	HistoryLength *int           `json:"historyLength,omitempty"`
	Metadata      map[string]any `json:"metadata,omitempty"`
	Tenant        string         `json:"tenant,omitempty"`
}

// encodeParamsV1 writes the params of a 1.0 request (*SendMessageRequest, GetTaskRequest,
// CancelTaskRequest or SubscribeToTaskRequest) with the tenant ("" none) in 1.0's JSON.
func encodeParamsV1(params any, tenant string) ([]byte, error) {
	switch p := params.(type) {
	case *a2a.SendMessageRequest:
		w := v1SendParams{Message: v1MessageOf(&p.Message), Metadata: p.Metadata, Tenant: tenant}
		if c := p.Configuration; c != nil && (len(c.AcceptedOutputModes) > 0 || c.HistoryLength != nil || c.ReturnImmediately) {
			w.Configuration = &v1SendConfig{AcceptedOutputModes: c.AcceptedOutputModes, HistoryLength: c.HistoryLength, ReturnImmediately: c.ReturnImmediately}
		}
		return marshalBody(w)
	case a2a.GetTaskRequest:
		return marshalBody(v1TaskParams{ID: p.ID, HistoryLength: p.HistoryLength, Tenant: tenant})
	case a2a.CancelTaskRequest:
		return marshalBody(v1TaskParams{ID: p.ID, Metadata: p.Metadata, Tenant: tenant})
	case a2a.SubscribeToTaskRequest:
		return marshalBody(v1TaskParams{ID: p.ID, Tenant: tenant})
	default:
		return nil, fmt.Errorf("a2a: no A2A 1.0 params for %T", params)
	}
}

// v1MessageOf is m in the 1.0 JSON as requests are written: the core type's own fields, with
// an unset role written as the user's (the only sender of requests).
func v1MessageOf(m *a2a.Message) v1Message {
	role := a2a.RoleUser
	if m.Role == a2a.RoleAgent {
		role = a2a.RoleAgent
	}
	w := v1Message{
		MessageID:        m.MessageID,
		ContextID:        m.ContextID,
		TaskID:           m.TaskID,
		Role:             string(role),
		Parts:            make([]a2a.PartJSON, 0, len(m.Parts)),
		Metadata:         m.Metadata,
		Extensions:       m.Extensions,
		ReferenceTaskIDs: m.ReferenceTaskIDs,
	}
	for i := range m.Parts {
		w.Parts = append(w.Parts, a2a.PartJSONOf(&m.Parts[i]))
	}
	return w
}

// marshalBody writes request params with the go-json-experiment encoder in its
// encoding/json-compatible mode, which gives the bytes encoding/json gives (the request tests pin
// them) at less cost: Message and Part write into the one encoder (MarshalJSONTo), where
// encoding/json calls their MarshalJSON, which marshals on its own, and then scans and compacts
// that output again.
//
// Two differences are bridged: encoding/json.Number (a string type to go-json-experiment) is
// written as the number it holds, and invalid UTF-8, which encoding/json writes as the escape
// \ufffd and go-json-experiment as the character itself, sends the value to encoding/json (the
// output then has U+FFFD, which valid input hardly ever has).
func marshalBody(v any) ([]byte, error) {
	b, err := jsonv2.Marshal(v, jsonv1.DefaultOptionsV1(), marshalBodyOptions)
	if err != nil || bytes.Contains(b, replacementChar) {
		return json.Marshal(v)
	}
	return b, nil
}

var (
	marshalBodyOptions = jsonv2.WithMarshalers(jsonv2.MarshalToFunc(func(enc *jsontext.Encoder, n json.Number) error {
		return jsonv1.Number(n).MarshalJSONTo(enc)
	}))
	replacementChar = []byte("\uFFFD")
)
