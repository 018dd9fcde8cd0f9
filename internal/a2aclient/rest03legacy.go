package a2aclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode"

	"github.com/a2a-connector/a2a-connector/internal/a2a"
)

// A second form of 0.3 HTTP+JSON: a2a-go v2's compatibility server (a2acompat/a2av0
// NewRESTHandler, "for v0.3 clients such as Python ADK Agent Engine deployments") serves the
// 1.0 paths without /v1 ({url}/message:send, {url}/message:stream, GET {url}/tasks/{id}, POST
// {url}/tasks/{id}:cancel and :subscribe), reads the 0.3 JSON-RPC params objects without their
// envelope (snake_case or camelCase keys) and answers the 0.3 JSON-RPC result objects
// ("kind"-tagged) with snake_case keys; errors are google.rpc.Status bodies. The card cannot
// tell the two forms apart (both are "HTTP+JSON" 0.3), so the Client starts with the spec's
// form (rest03.go) and, when the interface answers a /v1 path with 404 and no A2A error,
// switches that interface to this form once and remembers it (Client.restLegacy).

// doREST is do, with the switch to the legacy form for a 0.3 HTTP+JSON interface whose /v1
// path is not found. cl is updated when the call switched.
func (c *Client) doREST(ctx context.Context, ep Endpoint, cl *call, params any, accept string) (*http.Response, error) {
	if cl.restV0 && !cl.restLegacy {
		if _, ok := c.restLegacy.Load(ep.URL); ok {
			cl.restLegacy = true
		}
	}
	resp, err := c.do(ctx, ep, *cl, params, accept)
	if err == nil || !cl.restV0 || cl.restLegacy || !legacyRESTCue(err) {
		return resp, err
	}
	cl.restLegacy = true
	resp, lerr := c.do(ctx, ep, *cl, params, accept)
	if lerr != nil {
		var hse *HTTPStatusError
		if errors.As(lerr, &hse) && hse.StatusCode == http.StatusNotFound && hse.RPC == nil {
			// Neither form is served there: report the spec's form's answer.
			cl.restLegacy = false
			return nil, err
		}
		return nil, lerr
	}
	c.restLegacy.Store(ep.URL, struct{}{})
	return resp, nil
}

// legacyRESTCue: the spec's /v1 path is not there (404 without an A2A error).
func legacyRESTCue(err error) bool {
	var hse *HTTPStatusError
	return errors.As(err, &hse) && hse.StatusCode == http.StatusNotFound && hse.RPC == nil
}

// restLegacyRequest builds a call in a2a-go's compat form.
func restLegacyRequest(ctx context.Context, ep Endpoint, cl call, params any, accept string) (*http.Request, error) {
	var (
		taskID string
		body   []byte
		query  string
		err    error
	)
	switch p := params.(type) {
	case *a2a.SendMessageRequest:
		body, err = v0Dialect{}.encodeParams(cl.op, p, "")
	case a2a.GetTaskRequest:
		taskID = p.ID
		if p.HistoryLength != nil {
			query = "historyLength=" + strconv.Itoa(*p.HistoryLength)
		}
	case a2a.CancelTaskRequest:
		taskID = p.ID
	case a2a.SubscribeToTaskRequest:
		taskID = p.ID
	case extendedCardParams:
	default:
		err = fmt.Errorf("no A2A 0.3 HTTP+JSON request for %T", params)
	}
	if err != nil {
		return nil, fmt.Errorf("a2a %s: encode params: %w", cl.method, err)
	}
	hm, path := restRoute(cl.op, taskID)
	return restHTTPRequest(ctx, ep, cl, hm, "", path, query, body, accept, nil)
}

// decodeRESTLegacy reads an answer of a2a-go's compat form: a 0.3 result object whose keys may
// be snake_case, or a google.rpc.Status error.
func (cl call) decodeRESTLegacy(data []byte) (a2a.Event, error) {
	if e, ok := restV0ErrorBody(cl.method, data, 0); ok {
		return nil, e
	}
	camel, err := camelKeys(data)
	if err != nil {
		return nil, &a2a.ProtocolError{Method: cl.method, Kind: a2a.ProtocolBadJSON, Detail: "result: " + err.Error(), Err: err}
	}
	ev, err := v0Dialect{}.decodeResult(cl.op, camel)
	if err != nil {
		return nil, withMethod(cl.method, err)
	}
	return ev, nil
}

// camelKeys rewrites every snake_case object key of a JSON document to camelCase ("message_id"
// → "messageId"), as a2a-go's compat client does with these answers.
func camelKeys(data []byte) ([]byte, error) {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return json.Marshal(walkKeys(v))
}

func walkKeys(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[snakeToCamel(k)] = walkKeys(e)
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = walkKeys(e)
		}
		return x
	}
	return v
}

func snakeToCamel(s string) string {
	if !strings.Contains(s, "_") {
		return s
	}
	parts := strings.Split(s, "_")
	var b strings.Builder
	b.WriteString(parts[0])
	for _, p := range parts[1:] {
		if p == "" {
			continue
		}
		r := []rune(p)
		r[0] = unicode.ToUpper(r[0])
		b.WriteString(string(r))
	}
	return b.String()
}
