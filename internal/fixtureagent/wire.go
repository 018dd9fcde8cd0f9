package fixtureagent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// The agent's own JSON shapes. They are written here rather than borrowed from internal/a2a so
// that a bug in the connector's codec is not mirrored by the agent it is tested against. The
// structs below are the A2A 0.2.5/0.3 wire; v1.go turns their JSON into the A2A 1.0 wire.

// state is a task state as A2A 0.2.5/0.3 spells it.
type state string

const (
	stateSubmitted     state = "submitted"
	stateWorking       state = "working"
	stateInputRequired state = "input-required"
	stateAuthRequired  state = "auth-required"
	stateCompleted     state = "completed"
	stateFailed        state = "failed"
	stateCanceled      state = "canceled"
	stateRejected      state = "rejected"
	stateUnknown       state = "unknown"
)

func (s state) interrupted() bool { return s == stateInputRequired || s == stateAuthRequired }

func (s state) terminal() bool {
	switch s {
	case stateCompleted, stateFailed, stateCanceled, stateRejected:
		return true
	}
	return false
}

// JSON-RPC error codes the agent answers with.
const (
	codeInternalError        = -32603
	codeMethodNotFound       = -32601
	codeTaskNotFound         = -32001
	codeUnsupportedOperation = -32004
	codeVersionNotSupported  = -32009
	// codeExtensionSupportRequired is A2A 1.0's; the 0.x face sends it too (HTTPErrorDetails).
	codeExtensionSupportRequired = -32008
)

// Object kinds of the 0.x wire, the "kind" discriminator.
const (
	kindTask           = "task"
	kindMessage        = "message"
	kindStatusUpdate   = "status-update"
	kindArtifactUpdate = "artifact-update"
)

type wirePart struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
}

func textParts(text string) []wirePart { return []wirePart{{Kind: "text", Text: text}} }

type wireMessage struct {
	Kind      string         `json:"kind"`
	Role      string         `json:"role"`
	Parts     []wirePart     `json:"parts"`
	MessageID string         `json:"messageId"`
	ContextID string         `json:"contextId,omitempty"`
	TaskID    string         `json:"taskId,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

type wireStatus struct {
	State     state        `json:"state"`
	Message   *wireMessage `json:"message,omitempty"`
	Timestamp string       `json:"timestamp,omitempty"`
}

type wireArtifact struct {
	ArtifactID string         `json:"artifactId"`
	Name       string         `json:"name,omitempty"`
	Parts      []wirePart     `json:"parts"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

type wireTask struct {
	ID        string         `json:"id"`
	ContextID string         `json:"contextId"`
	Kind      string         `json:"kind"`
	Status    wireStatus     `json:"status"`
	Artifacts []wireArtifact `json:"artifacts,omitempty"`
	History   []wireMessage  `json:"history,omitempty"`
}

type wireStatusUpdate struct {
	Kind      string     `json:"kind"`
	TaskID    string     `json:"taskId"`
	ContextID string     `json:"contextId"`
	Status    wireStatus `json:"status"`
	Final     bool       `json:"final"`
}

type wireArtifactUpdate struct {
	Kind      string       `json:"kind"`
	TaskID    string       `json:"taskId"`
	ContextID string       `json:"contextId"`
	Artifact  wireArtifact `json:"artifact"`
	Append    bool         `json:"append,omitempty"`
	LastChunk bool         `json:"lastChunk,omitempty"`
}

type wireError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	// Data is only sent on the 1.0 wire: a list of google.rpc.ErrorInfo-like objects, as the
	// 1.0 SDKs send it.
	Data []map[string]any `json:"data,omitempty"`
}

// Event builders.

func agentMessage(id, taskID, contextID, text string) *wireMessage {
	return &wireMessage{Kind: kindMessage, Role: "agent", MessageID: id, TaskID: taskID, ContextID: contextID, Parts: textParts(text)}
}

func taskOf(t *task, st state) wireTask {
	return wireTask{ID: t.id, ContextID: t.contextID, Kind: kindTask, Status: wireStatus{State: st}}
}

func submitted(t *task) wireTask { return taskOf(t, stateSubmitted) }

func status(t *task, st state, text string, final bool) wireStatusUpdate {
	ev := wireStatusUpdate{Kind: kindStatusUpdate, TaskID: t.id, ContextID: t.contextID, Status: wireStatus{State: st}, Final: final}
	if text != "" {
		ev.Status.Message = statusMessage(t, st, text)
	}
	return ev
}

func statusMessage(t *task, st state, text string) *wireMessage {
	return agentMessage("s-"+t.id+"-"+string(st), t.id, t.contextID, text)
}

func chunk(t *task, text string, appendIt, last bool) wireArtifactUpdate {
	ev := wireArtifactUpdate{Kind: kindArtifactUpdate, TaskID: t.id, ContextID: t.contextID, Append: appendIt, LastChunk: last,
		Artifact: wireArtifact{ArtifactID: "a-" + t.id, Parts: textParts(text)}}
	if last {
		// Where agents put device commands: the last artifact's metadata.
		ev.Artifact.Metadata = map[string]any{"command": "flash"}
	}
	return ev
}

func guideTask(t *task) wireTask {
	const id = "c3fee4d5-7234-48a1-8d2c-cfb715c5ce9e"
	return wireTask{ID: t.id, ContextID: t.contextID, Kind: kindTask,
		Status: wireStatus{State: stateCompleted, Timestamp: "2025-07-15T14:50:28.575338Z"},
		Artifacts: []wireArtifact{
			{ArtifactID: id, Parts: textParts("今天天气晴，")},
			{ArtifactID: id, Parts: textParts("没有雨。"), Metadata: map[string]any{"command": "none"}},
		}}
}

// mustJSON marshals v, which is always one of the types above.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("fixtureagent: marshal %T: %v", v, err))
	}
	return b
}

// Parsing what the client sent, both generations: 0.x parts carry "kind", 1.0 parts do not.

type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

type messageParams struct {
	Message struct {
		MessageID string         `json:"messageId"`
		TaskID    string         `json:"taskId"`
		ContextID string         `json:"contextId"`
		Metadata  map[string]any `json:"metadata"`
		Parts     []struct {
			Text *string `json:"text"`
		} `json:"parts"`
		// Content is Parts as A2A 0.3's proto names it (its HTTP+JSON binding).
		Content []struct {
			Text *string `json:"text"`
		} `json:"content"`
	} `json:"message"`
	Tenant string `json:"tenant"`
}

type idParams struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
}

// decodeParams fills the message or task fields of rec from its params.
func decodeParams(rec *Request) {
	switch rec.Op {
	case OpSend, OpStream:
		var p messageParams
		if json.Unmarshal(rec.Params, &p) != nil {
			return
		}
		m := p.Message
		rec.MessageID, rec.TaskID, rec.ContextID, rec.Metadata, rec.Tenant = m.MessageID, m.TaskID, m.ContextID, m.Metadata, p.Tenant
		var text strings.Builder
		for _, part := range append(m.Parts, m.Content...) {
			if part.Text != nil {
				text.WriteString(*part.Text)
			}
		}
		rec.Text = text.String()
	case OpGet, OpCancel, OpResubscribe:
		var p idParams
		if json.Unmarshal(rec.Params, &p) == nil {
			rec.TaskID, rec.Tenant = p.ID, p.Tenant
		}
	}
}

// idOrNull is the id to answer with: JSON-RPC wants null when the request's id is unknown.
func idOrNull(id json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(id)) == 0 {
		return json.RawMessage("null")
	}
	return id
}
