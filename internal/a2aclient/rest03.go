package a2aclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"github.com/a2a-connector/a2a-connector/internal/a2a"

	a2apbv0 "github.com/a2aproject/a2a-go/a2apb"
	jsonv1 "github.com/go-json-experiment/json/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"
)

// The HTTP+JSON binding of A2A 0.3: the gRPC transcoding of the 0.3 a2a.proto (package a2a.v1)
// that Google's hosted agents (Vertex AI Agent Engine), @a2a-js/sdk 0.3's restHandler and
// a2a-python 0.3's REST adapter serve:
//
//	POST {url}/v1/message:send          SendMessageRequest  → SendMessageResponse (201 in @a2a-js)
//	POST {url}/v1/message:stream        SendMessageRequest  → SSE, each data a StreamResponse
//	GET  {url}/v1/tasks/{id}            ?historyLength=N    → Task
//	POST {url}/v1/tasks/{id}:cancel                         → Task (202 in @a2a-js)
//	GET  {url}/v1/tasks/{id}:subscribe                      → SSE of StreamResponse
//	GET  {url}/v1/card                                      → AgentCard (the extended one)
//
// Bodies are the proto-JSON of the 0.3 proto. The requests are the ones the 0.3 gRPC binding
// sends (grpcRequestV0), written with protojson; answers are read into the same 0.3 proto types
// and converted by the 0.3 gRPC code (grpcDecode), so both 0.3 bindings share one conversion.
//
// One name differs: the spec's 0.3 proto calls Message's parts `content` (field 5), which is the
// JSON name those servers read and write, while a2a-go's copy of the proto renamed the field
// `parts` (same number, so gRPC is unaffected). restV0Descriptors is a copy of a2a-go's
// descriptor whose Message field 5 has the JSON name "content"; JSON is converted through it.
// Reading accepts both spellings (protojson reads a field's proto name too).
//
// Errors: a non-2xx answer is *HTTPStatusError with Binding HTTP+JSON. Its body is read as
// @a2a-js writes it ({"code": <JSON-RPC code>, "message": …, "data": …}), as a google.rpc.Status
// (Google's front ends), or as a2a-python's {"message": …}, whose code comes from the status.
// Inside a stream, `event: error` carries the same objects.

// restV0Descriptors returns the 0.3 message descriptors with the spec's JSON names, by the
// message's short name ("SendMessageRequest", ...).
var restV0Descriptors = sync.OnceValues(func() (map[string]protoreflect.MessageDescriptor, error) {
	fdp := protodesc.ToFileDescriptorProto(a2apbv0.File_a2a_proto)
	for _, m := range fdp.GetMessageType() {
		if m.GetName() != "Message" {
			continue
		}
		for _, f := range m.GetField() {
			if f.GetNumber() == 5 {
				f.JsonName = proto.String("content")
			}
		}
	}
	fd, err := protodesc.NewFile(fdp, protoregistry.GlobalFiles)
	if err != nil {
		return nil, fmt.Errorf("A2A 0.3 proto with its JSON names: %w", err)
	}
	out := make(map[string]protoreflect.MessageDescriptor)
	msgs := fd.Messages()
	for i := range msgs.Len() {
		out[string(msgs.Get(i).Name())] = msgs.Get(i)
	}
	return out, nil
})

// restV0Marshal writes a 0.3 proto message as the spec's proto-JSON.
func restV0Marshal(m proto.Message) ([]byte, error) {
	descs, err := restV0Descriptors()
	if err != nil {
		return nil, err
	}
	md, ok := descs[string(m.ProtoReflect().Descriptor().Name())]
	if !ok {
		return nil, fmt.Errorf("no A2A 0.3 descriptor for %s", m.ProtoReflect().Descriptor().FullName())
	}
	bin, err := proto.Marshal(m)
	if err != nil {
		return nil, err
	}
	dyn := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(bin, dyn); err != nil {
		return nil, err
	}
	return protojson.Marshal(dyn)
}

// restV0Unmarshal reads the spec's proto-JSON into m (a 0.3 proto message), ignoring unknown
// fields.
func restV0Unmarshal(data []byte, m proto.Message) error {
	descs, err := restV0Descriptors()
	if err != nil {
		return err
	}
	md, ok := descs[string(m.ProtoReflect().Descriptor().Name())]
	if !ok {
		return fmt.Errorf("no A2A 0.3 descriptor for %s", m.ProtoReflect().Descriptor().FullName())
	}
	dyn := dynamicpb.NewMessage(md)
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, dyn); err != nil {
		return err
	}
	bin, err := proto.Marshal(dyn)
	if err != nil {
		return err
	}
	return proto.Unmarshal(bin, m)
}

// restV0Route is the HTTP method and path (below the interface URL) of op.
func restV0Route(op Op, taskID string) (method, path string) {
	id := url.PathEscape(taskID)
	switch op {
	case OpSendMessage:
		return http.MethodPost, "/v1/message:send"
	case OpStreamMessage:
		return http.MethodPost, "/v1/message:stream"
	case OpGetTask:
		return http.MethodGet, "/v1/tasks/" + id
	case OpCancelTask:
		return http.MethodPost, "/v1/tasks/" + id + ":cancel"
	case OpGetExtendedAgentCard:
		return http.MethodGet, "/v1/card"
	default:
		// The 0.3 proto maps TaskSubscription to GET (a2a-python serves only GET;
		// @a2a-js/sdk GET and POST).
		return http.MethodGet, "/v1/tasks/" + id + ":subscribe"
	}
}

// restV0Request builds the 0.3 HTTP+JSON request of one call.
func restV0Request(ctx context.Context, ep Endpoint, cl call, params any, accept string) (*http.Request, error) {
	var (
		taskID string
		body   []byte
		query  string
		err    error
	)
	switch p := params.(type) {
	case *a2a.SendMessageRequest:
		var m proto.Message
		if m, err = grpcRequestV0(cl, p); err == nil {
			body, err = restV0Marshal(m)
		}
	case a2a.GetTaskRequest:
		taskID = p.ID
		if p.HistoryLength != nil {
			query = "historyLength=" + strconv.Itoa(*p.HistoryLength)
		}
	case a2a.SubscribeToTaskRequest:
		taskID = p.ID
	case a2a.CancelTaskRequest:
		taskID = p.ID
		body, err = restV0Marshal(&a2apbv0.CancelTaskRequest{Name: "tasks/" + p.ID})
	case extendedCardParams:
	default:
		err = fmt.Errorf("no A2A 0.3 HTTP+JSON request for %T", params)
	}
	if err != nil {
		return nil, fmt.Errorf("a2a %s: encode params: %w", cl.method, err)
	}
	hm, path := restV0Route(cl.op, taskID)
	// No A2A-Version: 0.3 has none, and a dual-version server reads its absence as 0.3.
	return restHTTPRequest(ctx, ep, cl, hm, "", path, query, body, accept, nil)
}

// decodeRESTV0 turns a 0.3 HTTP+JSON answer (a 2xx body, or an SSE event's data) into an Event:
// the proto-JSON of the op's answer, or an error object an SDK streams when the task fails after
// the stream started.
func (cl call) decodeRESTV0(data []byte) (a2a.Event, error) {
	if cl.restLegacy {
		return cl.decodeRESTLegacy(data)
	}
	if bytes.Contains(data, []byte(`"code"`)) || bytes.Contains(data, []byte(`"error"`)) {
		if e, ok := restV0ErrorBody(cl.method, data, 0); ok {
			return nil, e
		}
	}
	var m proto.Message
	switch cl.op {
	case OpSendMessage:
		m = &a2apbv0.SendMessageResponse{}
	case OpGetTask, OpCancelTask:
		m = &a2apbv0.Task{}
	default:
		m = &a2apbv0.StreamResponse{}
	}
	if err := restV0Unmarshal(data, m); err != nil {
		return nil, &a2a.ProtocolError{Method: cl.method, Kind: a2a.ProtocolBadJSON, Detail: "result: " + err.Error(), Err: err}
	}
	if r, ok := m.(*a2apbv0.SendMessageResponse); ok && r.GetPayload() == nil {
		// Some servers answer message:send with the StreamResponse shape; read it as one.
		sr := &a2apbv0.StreamResponse{}
		if restV0Unmarshal(data, sr) == nil && sr.GetPayload() != nil {
			m = sr
		}
	}
	// The 0.3 gRPC conversion, on a call that is not REST any more (decodeREST would send the
	// answer back here).
	v := cl
	v.rest, v.restV0 = false, false
	return v.grpcDecode(m, len(data)+1)
}

// restV0Codes maps the HTTP status of a 0.3 HTTP+JSON error whose body names no code to the
// JSON-RPC code of the same error (the statuses @a2a-js and a2a-python give each error).
var restV0Codes = map[int]int{
	http.StatusBadRequest:           a2a.CodeInvalidParams,
	http.StatusUnauthorized:         a2a.CodeUnauthenticated,
	http.StatusForbidden:            a2a.CodeUnauthorized,
	http.StatusNotFound:             a2a.CodeTaskNotFound,
	http.StatusConflict:             a2a.CodeTaskNotCancelable,
	http.StatusUnsupportedMediaType: a2a.CodeContentTypeNotSupported,
	http.StatusNotImplemented:       a2a.CodeUnsupportedOperation,
	http.StatusInternalServerError:  a2a.CodeInternalError,
}

// restV0ErrorBody reads the error object of a 0.3 HTTP+JSON server: {"code": <JSON-RPC code>,
// "message", "data"} (@a2a-js/sdk), a google.rpc.Status alone or in {"error": …} (Google's
// front ends), or {"message": …} alone (a2a-python 0.3), whose code comes from the HTTP status
// (0 inside a stream: internal error). ok is false when data is none of these.
func restV0ErrorBody(method string, data []byte, status int) (*a2a.RPCError, bool) {
	var probe struct {
		Code    json.RawMessage `json:"code"`
		Message *string         `json:"message"`
		Data    json.RawMessage `json:"data"`
		Status  string          `json:"status"`
		Error   json.RawMessage `json:"error"`
		// A2A objects that also carry a "code"-free "message" member.
		Task           json.RawMessage `json:"task"`
		StatusUpdate   json.RawMessage `json:"statusUpdate"`
		ArtifactUpdate json.RawMessage `json:"artifactUpdate"`
		ID             json.RawMessage `json:"id"`
	}
	if jsonv1.Unmarshal(data, &probe) != nil {
		return nil, false
	}
	if present(probe.Error) || probe.Status != "" {
		return parseGoogleStatus(method, data)
	}
	if present(probe.Code) {
		var code int
		if err := json.Unmarshal(probe.Code, &code); err == nil {
			e := &a2a.RPCError{Code: code, Method: method}
			if probe.Message != nil {
				e.Message = *probe.Message
			}
			if present(probe.Data) {
				e.Data = probe.Data
			}
			return e, true
		}
		return parseGoogleStatus(method, data)
	}
	if status == 0 || probe.Message == nil || present(probe.Task) || present(probe.StatusUpdate) || present(probe.ArtifactUpdate) || present(probe.ID) {
		return nil, false
	}
	e := &a2a.RPCError{Code: a2a.CodeInternalError, Message: *probe.Message, Method: method}
	if c, ok := restV0Codes[status]; ok {
		e.Code = c
	}
	return e, true
}

// restError reads the error object of an HTTP+JSON answer in the call's generation (status 0
// inside a stream).
func (cl call) restError(data []byte, status int) (*a2a.RPCError, bool) {
	if cl.restV0 {
		return restV0ErrorBody(cl.method, data, status)
	}
	e, ok := parseGoogleStatus(cl.method, data)
	if ok && e.Code == a2a.CodeInternalError && status != 0 && bareMessage(data) {
		// {"message": …} alone names no error: AWS's front ends (AgentCore refusing a SigV4
		// signature with 403) answer so. The HTTP status says which error it is.
		if c, known := restV0Codes[status]; known {
			e.Code = c
		}
	}
	return e, ok
}

// bareMessage reports a JSON object with a message but neither code nor status.
func bareMessage(data []byte) bool {
	var probe struct {
		Code   json.RawMessage `json:"code"`
		Status string          `json:"status"`
		Error  json.RawMessage `json:"error"`
	}
	return jsonv1.Unmarshal(data, &probe) == nil && !present(probe.Code) && probe.Status == "" && !present(probe.Error)
}
