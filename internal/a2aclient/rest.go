package a2aclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/a2a-connector/a2a-connector/internal/a2a"

	jsonv1 "github.com/go-json-experiment/json/v1"
)

// The HTTP+JSON binding (A2A 1.0 §"HTTP+JSON/REST"): the same operations and JSON objects as the
// JSON-RPC wire of 1.0, without the envelope, on paths under the interface URL. Everything else
// (retries, limits, SSE framing, timers) is the Client's, shared with JSON-RPC: a call only
// differs in how its request is built (restRequest), how a 2xx body or SSE event is read
// (call.decodeREST) and how an error answer is read (restStatusError).

// restRoute is the HTTP method and path (below the interface URL and tenant) of op.
func restRoute(op Op, taskID string) (method, path string) {
	id := url.PathEscape(taskID)
	switch op {
	case OpSendMessage:
		return http.MethodPost, "/message:send"
	case OpStreamMessage:
		return http.MethodPost, "/message:stream"
	case OpGetTask:
		return http.MethodGet, "/tasks/" + id
	case OpCancelTask:
		return http.MethodPost, "/tasks/" + id + ":cancel"
	case OpGetExtendedAgentCard:
		return http.MethodGet, "/extendedAgentCard"
	default:
		// Both SDKs accept POST (a2a-go v2 only POST; @a2a-js/sdk GET and POST).
		return http.MethodPost, "/tasks/" + id + ":subscribe"
	}
}

// restURL is the interface URL with the tenant segment and path appended (its query kept).
func restURL(base, tenant, path string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	escaped := strings.TrimSuffix(u.EscapedPath(), "/")
	if tenant != "" {
		escaped += "/" + url.PathEscape(tenant)
	}
	escaped += path
	p, err := url.PathUnescape(escaped)
	if err != nil {
		return "", err
	}
	u.Path, u.RawPath = p, escaped
	return u.String(), nil
}

// restRequest builds the HTTP+JSON request of one call.
func restRequest(ctx context.Context, ep Endpoint, cl call, params any, accept string) (*http.Request, error) {
	var (
		taskID string
		body   []byte
		query  string
		err    error
	)
	switch p := params.(type) {
	case *a2a.SendMessageRequest:
		// The tenant goes in the path; the SDKs take the path's over the body's anyway.
		body, err = cl.d.encodeParams(cl.op, p, "")
	case a2a.GetTaskRequest:
		taskID = p.ID
		if p.HistoryLength != nil {
			query = "historyLength=" + strconv.Itoa(*p.HistoryLength)
		}
	case a2a.SubscribeToTaskRequest:
		taskID = p.ID
	case a2a.CancelTaskRequest:
		taskID = p.ID
		body, err = marshalBody(struct {
			Metadata map[string]any `json:"metadata,omitempty"`
		}{p.Metadata})
	case extendedCardParams:
	default:
		err = fmt.Errorf("no HTTP+JSON request for %T", params)
	}
	if err != nil {
		return nil, fmt.Errorf("a2a %s: encode params: %w", cl.method, err)
	}
	hm, path := restRoute(cl.op, taskID)
	return restHTTPRequest(ctx, ep, cl, hm, ep.Tenant, path, query, body, accept, cl.d.header)
}

// restHTTPRequest builds an HTTP+JSON request of any form: method hm on base+path (with the
// tenant segment when tenant is set, and query), the endpoint's headers, dialect headers from
// setHeader (nil: none), the JSON content type when there is a body, and accept.
func restHTTPRequest(ctx context.Context, ep Endpoint, cl call, hm, tenant, path, query string, body []byte, accept string, setHeader func(http.Header)) (*http.Request, error) {
	target, err := restURL(ep.URL, tenant, path)
	if err != nil {
		return nil, fmt.Errorf("a2a %s: build request: %w", cl.method, err)
	}
	if query != "" {
		if strings.Contains(target, "?") {
			target += "&" + query
		} else {
			target += "?" + query
		}
	}
	req, err := newHTTPRequest(ctx, hm, target, body)
	if err != nil {
		return nil, fmt.Errorf("a2a %s: build request: %w", cl.method, err)
	}
	for k, vs := range ep.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if setHeader != nil {
		setHeader(req.Header)
	}
	if body != nil {
		// application/json, not application/a2a+json: both SDKs accept it, and express's body
		// parser in older @a2a-js servers reads only it.
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", accept)
	if hm == http.MethodPost {
		req.Header["Idempotency-Key"] = nil // see newRequest
	}
	return req, nil
}

// googleStatus is a google.rpc.Status as HTTP+JSON servers write it (AIP-193), inside
// {"error": …} or bare.
type googleStatus struct {
	Code    json.RawMessage   `json:"code"`
	Status  string            `json:"status"`
	Message string            `json:"message"`
	Details []json.RawMessage `json:"details"`
}

// errorInfoType is the @type of a google.rpc.ErrorInfo detail.
const errorInfoType = "type.googleapis.com/google.rpc.ErrorInfo"

// reasonCodes maps the ErrorInfo reasons of A2A 1.0 (domain a2a-protocol.org) to the JSON-RPC
// codes of the same errors, so that callers read one set of codes whatever the binding.
var reasonCodes = map[string]int{
	"PARSE_ERROR":                        a2a.CodeParseError,
	"INVALID_REQUEST":                    a2a.CodeInvalidRequest,
	"METHOD_NOT_FOUND":                   a2a.CodeMethodNotFound,
	"INVALID_PARAMS":                     a2a.CodeInvalidParams,
	"INTERNAL_ERROR":                     a2a.CodeInternalError,
	"TASK_NOT_FOUND":                     a2a.CodeTaskNotFound,
	"TASK_NOT_CANCELABLE":                a2a.CodeTaskNotCancelable,
	"PUSH_NOTIFICATION_NOT_SUPPORTED":    a2a.CodePushNotificationNotSupported,
	"UNSUPPORTED_OPERATION":              a2a.CodeUnsupportedOperation,
	"CONTENT_TYPE_NOT_SUPPORTED":         a2a.CodeContentTypeNotSupported,
	"INVALID_AGENT_RESPONSE":             a2a.CodeInvalidAgentResponse,
	"EXTENDED_AGENT_CARD_NOT_CONFIGURED": a2a.CodeAuthenticatedExtendedCardNotConfigured,
	"EXTENSION_SUPPORT_REQUIRED":         a2a.CodeExtensionSupportRequired,
	"VERSION_NOT_SUPPORTED":              a2a.CodeVersionNotSupported,
	"UNAUTHENTICATED":                    a2a.CodeUnauthenticated,
	"UNAUTHORIZED":                       a2a.CodeUnauthorized,
}

// statusCodes maps a google.rpc status name to a code when no ErrorInfo names the reason.
var statusCodes = map[string]int{
	"NOT_FOUND":         a2a.CodeTaskNotFound,
	"UNIMPLEMENTED":     a2a.CodeMethodNotFound,
	"INVALID_ARGUMENT":  a2a.CodeInvalidParams,
	"INTERNAL":          a2a.CodeInternalError,
	"UNAUTHENTICATED":   a2a.CodeUnauthenticated,
	"PERMISSION_DENIED": a2a.CodeUnauthorized,
}

// parseGoogleStatus reads a google.rpc.Status body ({"error": {...}} or the status itself) as
// an *RPCError with the JSON-RPC code of the same error: the ErrorInfo reason decides, else the
// status name, else CodeInternalError. ok is false when data is no such body.
func parseGoogleStatus(method string, data []byte) (*a2a.RPCError, bool) {
	var outer struct {
		Error json.RawMessage `json:"error"`
	}
	if jsonv1.Unmarshal(data, &outer) != nil {
		return nil, false
	}
	inner := data
	if present(outer.Error) {
		inner = outer.Error
	}
	var st googleStatus
	if jsonv1.Unmarshal(inner, &st) != nil || (st.Status == "" && st.Message == "" && !present(st.Code)) {
		return nil, false
	}
	e := &a2a.RPCError{Code: a2a.CodeInternalError, Message: st.Message, Method: method}
	if c, ok := statusCodes[strings.ToUpper(st.Status)]; ok {
		e.Code = c
	}
	for _, d := range st.Details {
		var info struct {
			Type   string `json:"@type"`
			Reason string `json:"reason"`
		}
		if jsonv1.Unmarshal(d, &info) == nil && info.Type == errorInfoType {
			if c, ok := reasonCodes[strings.ToUpper(info.Reason)]; ok {
				e.Code = c
				break
			}
		}
	}
	if len(st.Details) > 0 {
		// Kept raw, like a JSON-RPC error's data, for diagnostics.
		if b, err := json.Marshal(st.Details); err == nil {
			e.Data = b
		}
	}
	return e, true
}

// decodeREST turns an HTTP+JSON answer (a 2xx body, or an SSE event's data) into an Event: the
// 1.0 result or event object itself, or an {"error": google.rpc.Status} an SDK streams when the
// task fails after the stream started.
func (cl call) decodeREST(data []byte) (a2a.Event, error) {
	if cl.restV0 {
		return cl.decodeRESTV0(data)
	}
	if bytes.Contains(data, []byte(`"error"`)) {
		var probe struct {
			Error json.RawMessage `json:"error"`
		}
		if jsonv1.Unmarshal(data, &probe) == nil && present(probe.Error) {
			if e, ok := parseGoogleStatus(cl.method, data); ok {
				return nil, e
			}
		}
	}
	ev, err := cl.d.decodeResult(cl.op, data)
	if err != nil {
		return nil, withMethod(cl.method, err)
	}
	return ev, nil
}
