package fixtureagent

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// BindingHTTPJSON is Options.Binding for an agent that serves A2A 1.0 over HTTP+JSON.
const BindingHTTPJSON = "HTTP+JSON"

// The HTTP+JSON face (Options.Binding BindingHTTPJSON): the 1.0 agent's operations on the spec's
// paths under URL, with an optional tenant segment first:
//
//	POST URL[/{tenant}]/message:send          SendMessage, the 1.0 result object as the body
//	POST URL[/{tenant}]/message:stream        SendStreamingMessage, SSE whose data are 1.0 events
//	GET  URL[/{tenant}]/tasks/{id}            GetTask, a bare Task
//	POST URL[/{tenant}]/tasks/{id}:cancel     CancelTask, a bare Task
//	POST URL[/{tenant}]/tasks/{id}:subscribe  SubscribeToTask, SSE (GET too)
//
// Errors are HTTP statuses with a google.rpc.Status body ({"error": {code, status, message,
// details: [ErrorInfo]}}); in a stream, an event whose data is such a body. Every behaviour is
// served the same way as on JSON-RPC; only the framing differs. Requests are recorded with the
// 1.0 method name as RPCMethod, the task id from the path, the tenant from the path.

// restStatus is the HTTP status and google.rpc status name an error code is answered with.
func restStatus(code int) (int, string) {
	switch code {
	case codeTaskNotFound:
		return http.StatusNotFound, "NOT_FOUND"
	case codeMethodNotFound:
		return http.StatusNotImplemented, "UNIMPLEMENTED"
	case codeUnsupportedOperation, codeVersionNotSupported, codeExtensionSupportRequired:
		return http.StatusBadRequest, "FAILED_PRECONDITION"
	}
	return http.StatusInternalServerError, "INTERNAL"
}

// restErrorBody is the google.rpc.Status body of an error code.
func restErrorBody(code int, msg string) string {
	httpStatus, name := restStatus(code)
	return string(mustJSON(map[string]any{"error": map[string]any{
		"code": httpStatus, "status": name, "message": msg, "details": v1ErrorData(code),
	}}))
}

// restOp reads the operation, task id and tenant from a path below basePath.
func restOp(method, rest string) (op Op, taskID, tenant string, ok bool) {
	rest = strings.TrimPrefix(rest, "/")
	if first, after, found := strings.Cut(rest, "/"); found && !strings.HasPrefix(first, "message:") && first != "tasks" {
		tenant, rest = first, after
	}
	switch {
	case rest == "message:send" && method == http.MethodPost:
		return OpSend, "", tenant, true
	case rest == "message:stream" && method == http.MethodPost:
		return OpStream, "", tenant, true
	case strings.HasPrefix(rest, "tasks/"):
		id := strings.TrimPrefix(rest, "tasks/")
		switch {
		case strings.HasSuffix(id, ":cancel") && method == http.MethodPost:
			return OpCancel, strings.TrimSuffix(id, ":cancel"), tenant, true
		case strings.HasSuffix(id, ":subscribe") && (method == http.MethodPost || method == http.MethodGet):
			return OpResubscribe, strings.TrimSuffix(id, ":subscribe"), tenant, true
		case !strings.Contains(id, ":") && !strings.Contains(id, "/") && method == http.MethodGet:
			return OpGet, id, tenant, true
		}
	}
	return "", "", "", false
}

// restNames is the 1.0 method name of each operation, recorded as RPCMethod.
var restNames = map[Op]string{OpSend: "SendMessage", OpStream: "SendStreamingMessage", OpGet: "GetTask", OpCancel: "CancelTask", OpResubscribe: "SubscribeToTask"}

// serveREST answers one HTTP+JSON request.
func (s *Server) serveREST(w http.ResponseWriter, r *http.Request) {
	rest, under := strings.CutPrefix(r.URL.Path, basePath)
	if s.restV0 {
		rest, under = strings.CutPrefix(rest, "/v1")
	}
	op, taskID, tenant, ok := restOp(r.Method, rest)
	if s.restV0 && tenant != "" {
		ok = false // 0.3 has no tenant segment
	}
	if !under || !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		if s.restV0 {
			io.WriteString(w, restV0ErrorBody(codeMethodNotFound, "no such path"))
			return
		}
		io.WriteString(w, restErrorBody(codeMethodNotFound, "no such path"))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	rec := Request{Path: r.URL.Path, HTTPMethod: r.Method, Header: r.Header.Clone(), Op: op, RPCMethod: restNames[op]}
	if s.restV0 {
		rec.RPCMethod = restV0Names[op]
	}
	if op == OpSend || op == OpStream {
		rec.Params = body
	} else {
		rec.Params = mustJSON(idParams{ID: taskID})
	}
	decodeParams(&rec)
	if tenant != "" {
		rec.Tenant = tenant
	}
	s.mu.Lock()
	s.requests = append(s.requests, rec)
	s.mu.Unlock()

	c := &call{s: s, w: w, r: r, op: op, rec: rec, v1: !s.restV0, rest: true, restV0: s.restV0}
	if v := r.Header.Get(versionHeader); !s.restV0 && !speaksV1(v) {
		c.jsonError(codeVersionNotSupported, fmt.Sprintf("A2A version %q is not supported; supported: 1.0", v))
		return
	}
	if (op == OpSend || op == OpStream) && !json.Valid(body) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, c.errorEnvelope(codeInternalError, "body is not JSON"))
		return
	}
	switch op {
	case OpSend, OpStream:
		s.message(c)
	case OpGet:
		s.getTask(c)
	case OpCancel:
		s.cancelTask(c)
	case OpResubscribe:
		s.resubscribe(c)
	}
}
