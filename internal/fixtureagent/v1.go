package fixtureagent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// The A2A 1.0 face of the agent. The behaviours build 0.x objects (wire.go); in 1.0 mode each one
// is rewritten here, on its JSON, into the 1.0 shape the SDKs of 2026 send (a2a-go v2.3.1,
// @a2a-js/sdk 1.3.0, the spec's a2a.proto in its JSON mapping):
//
//   - no "kind" anywhere; a SendMessage result and every stream event is a wrapper object with
//     one member: {"task": …}, {"message": …}, {"statusUpdate": …} or {"artifactUpdate": …};
//     GetTask and CancelTask answer a bare Task;
//   - parts are {"text": "…"};
//   - roles are ROLE_USER / ROLE_AGENT, states TASK_STATE_* ("unknown", which 1.0 does not
//     have, becomes TASK_STATE_UNSPECIFIED; a state A2A does not define keeps its name in the
//     same spelling: "sleeping" → TASK_STATE_SLEEPING);
//   - status updates have no "final": the end of the stream ends it.

// ProtocolV1 is the Options.Protocol value of an agent speaking the A2A 1.0 wire.
const ProtocolV1 = "1.0"

// Op is an operation of A2A, whatever the wire generation calls it.
type Op string

// The operations of A2A the agent serves.
const (
	OpSend        Op = "send"
	OpStream      Op = "stream"
	OpGet         Op = "get"
	OpCancel      Op = "cancel"
	OpResubscribe Op = "resubscribe"
)

// Method names per wire generation.
var (
	methodsV0 = map[string]Op{
		"message/send":      OpSend,
		"message/stream":    OpStream,
		"tasks/get":         OpGet,
		"tasks/cancel":      OpCancel,
		"tasks/resubscribe": OpResubscribe,
	}
	methodsV1 = map[string]Op{
		"SendMessage":          OpSend,
		"SendStreamingMessage": OpStream,
		"GetTask":              OpGet,
		"CancelTask":           OpCancel,
		"SubscribeToTask":      OpResubscribe,
	}
)

// versionHeader is the header a 1.0 client names its protocol version in.
const versionHeader = "A2A-Version"

// speaksV1 reports whether an A2A-Version header value asks for 1.x. A missing header means 0.3
// (spec §3.6.2), which a 1.0-only server refuses.
func speaksV1(v string) bool {
	v = strings.TrimSpace(v)
	return v == "1" || strings.HasPrefix(v, "1.")
}

// errorReasons are the google.rpc.ErrorInfo reasons the 1.0 SDKs put in an error's data.
var errorReasons = map[int]string{
	codeInternalError:            "INTERNAL_ERROR",
	codeMethodNotFound:           "METHOD_NOT_FOUND",
	codeTaskNotFound:             "TASK_NOT_FOUND",
	codeUnsupportedOperation:     "UNSUPPORTED_OPERATION",
	codeVersionNotSupported:      "VERSION_NOT_SUPPORTED",
	codeExtensionSupportRequired: "EXTENSION_SUPPORT_REQUIRED",
}

func v1ErrorData(code int) []map[string]any {
	reason, ok := errorReasons[code]
	if !ok {
		reason = "INTERNAL_ERROR"
	}
	return []map[string]any{{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason, "domain": "a2a-protocol.org"}}
}

// v1Wrappers maps a 0.x kind to its 1.0 wrapper member.
var v1Wrappers = map[string]string{
	kindTask:           "task",
	kindMessage:        "message",
	kindStatusUpdate:   "statusUpdate",
	kindArtifactUpdate: "artifactUpdate",
}

// v1Result rewrites the JSON of a 0.x result object (a Task, Message, status-update or
// artifact-update, with its "kind") into the 1.0 shape. wrap says whether it becomes a wrapper
// ({"task": …}: SendMessage results and stream events) or stays bare (GetTask, CancelTask).
func v1Result(v0 []byte, wrap bool) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(v0))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("fixtureagent: v1 result: %w", err)
	}
	kind, _ := obj["kind"].(string)
	member, ok := v1Wrappers[kind]
	if !ok {
		return nil, fmt.Errorf("fixtureagent: v1 result: unknown kind %q", kind)
	}
	var out map[string]any
	switch kind {
	case kindTask:
		out = v1Task(obj)
	case kindMessage:
		out = v1Message(obj)
	case kindStatusUpdate:
		out = v1StatusUpdate(obj)
	case kindArtifactUpdate:
		out = v1ArtifactUpdate(obj)
	}
	if wrap {
		out = map[string]any{member: out}
	}
	return json.Marshal(out)
}

func v1Task(t map[string]any) map[string]any {
	delete(t, "kind")
	if s, ok := t["status"].(map[string]any); ok {
		t["status"] = v1Status(s)
	}
	if as, ok := t["artifacts"].([]any); ok {
		for i, a := range as {
			if m, ok := a.(map[string]any); ok {
				as[i] = v1Artifact(m)
			}
		}
	}
	if hs, ok := t["history"].([]any); ok {
		for i, h := range hs {
			if m, ok := h.(map[string]any); ok {
				hs[i] = v1Message(m)
			}
		}
	}
	return t
}

func v1Status(s map[string]any) map[string]any {
	if st, ok := s["state"].(string); ok {
		s["state"] = v1State(st)
	}
	if m, ok := s["message"].(map[string]any); ok {
		s["message"] = v1Message(m)
	}
	return s
}

func v1Message(m map[string]any) map[string]any {
	delete(m, "kind")
	switch m["role"] {
	case "agent":
		m["role"] = "ROLE_AGENT"
	case "user":
		m["role"] = "ROLE_USER"
	}
	if ps, ok := m["parts"].([]any); ok {
		m["parts"] = v1Parts(ps)
	}
	return m
}

func v1Artifact(a map[string]any) map[string]any {
	if ps, ok := a["parts"].([]any); ok {
		a["parts"] = v1Parts(ps)
	}
	return a
}

func v1StatusUpdate(e map[string]any) map[string]any {
	delete(e, "kind")
	delete(e, "final")
	if s, ok := e["status"].(map[string]any); ok {
		e["status"] = v1Status(s)
	}
	return e
}

func v1ArtifactUpdate(e map[string]any) map[string]any {
	delete(e, "kind")
	if a, ok := e["artifact"].(map[string]any); ok {
		e["artifact"] = v1Artifact(a)
	}
	return e
}

// v1Parts keeps text parts as {"text": …} (with their metadata); the agent sends no other kind.
func v1Parts(ps []any) []any {
	out := make([]any, 0, len(ps))
	for _, p := range ps {
		m, ok := p.(map[string]any)
		if !ok {
			continue
		}
		part := map[string]any{"text": m["text"]}
		if md, ok := m["metadata"]; ok {
			part["metadata"] = md
		}
		out = append(out, part)
	}
	return out
}

// v1State spells a 0.x task state the 1.0 way: "input-required" → "TASK_STATE_INPUT_REQUIRED".
// "unknown", which 1.0 dropped, becomes "TASK_STATE_UNSPECIFIED".
func v1State(s string) string {
	if s == string(stateUnknown) {
		return "TASK_STATE_UNSPECIFIED"
	}
	return "TASK_STATE_" + strings.ToUpper(strings.ReplaceAll(s, "-", "_"))
}
