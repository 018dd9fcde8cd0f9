package a2aclient

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/a2a-connector/a2a-connector/internal/a2a"
)

// Binding is how an A2A interface carries the protocol's operations: JSON-RPC 2.0 over HTTP, the
// HTTP+JSON (REST) paths, or gRPC. A card names it per interface (protocolBinding in 1.0,
// transport in 0.3).
type Binding uint8

const (
	// BindingJSONRPC is JSON-RPC 2.0 over HTTP POST, SSE for streams (the zero value: every
	// interface the connector knew before bindings were a choice).
	BindingJSONRPC Binding = iota
	// BindingHTTPJSON is the HTTP+JSON binding. A2A 1.0's: POST {url}/message:send,
	// POST {url}/message:stream (SSE), GET {url}/tasks/{id}, POST {url}/tasks/{id}:cancel and
	// POST {url}/tasks/{id}:subscribe (SSE), with a {tenant} path segment after url when the
	// interface has one; bodies are the 1.0 JSON objects without a JSON-RPC envelope; errors
	// are HTTP statuses with a google.rpc.Status body. A2A 0.3's: the same operations under
	// {url}/v1/ with the 0.3 proto's JSON (rest03.go).
	BindingHTTPJSON
	// BindingGRPC is a2a.proto's A2AService over gRPC (A2A 1.0), with the client a2a-go v2
	// generates from the spec's proto; see grpc.go. The interface URL is https://host[:port]
	// (TLS) or http://host[:port] (plaintext, where plain HTTP is allowed).
	BindingGRPC
)

// Binding names as cards write them (1.0 protocolBinding, 0.3 transport).
const (
	BindingNameJSONRPC  = "JSONRPC"
	BindingNameHTTPJSON = "HTTP+JSON"
	BindingNameGRPC     = "GRPC"
)

// String returns the binding's name as a card writes it.
func (b Binding) String() string {
	switch b {
	case BindingHTTPJSON:
		return BindingNameHTTPJSON
	case BindingGRPC:
		return BindingNameGRPC
	default:
		return BindingNameJSONRPC
	}
}

// BindingFor returns the binding a card names (case-insensitive; "" is JSON-RPC, the 0.x default
// transport; 0.3's "REST" is HTTP+JSON). ok is false for a binding A2A does not define.
func BindingFor(name string) (b Binding, ok bool) {
	switch strings.ToUpper(strings.TrimSpace(name)) {
	case "", BindingNameJSONRPC:
		return BindingJSONRPC, true
	case BindingNameHTTPJSON, "REST", "HTTP_JSON", "HTTPJSON":
		return BindingHTTPJSON, true
	case BindingNameGRPC:
		return BindingGRPC, true
	}
	return BindingJSONRPC, false
}

// Spoken reports whether the Client can call interfaces of this binding in wire generation w:
// every binding in 1.0 and 0.3 (HTTP+JSON in each generation's own form: 0.3's has /v1 paths
// and the 0.3 proto's JSON, see rest03.go; gRPC with both protos a2a-go ships).
func (b Binding) Spoken(w Wire) bool {
	switch b {
	case BindingJSONRPC, BindingGRPC, BindingHTTPJSON:
		return true
	}
	return false
}

// Transport is one way of calling an agent, whatever its binding and generation: the operations
// the connector performs, in the core model (A2A 1.0, types.go). Endpoint says where and how (URL, Wire, Binding,
// Tenant, headers). *Client is the one implementation; it speaks each binding behind the same
// methods, so that its callers (internal/invoke, and through it session, probe and console)
// never learn which binding an agent speaks. Every binding shares the Client's limits (event and
// body caps, first-event and idle timeouts), its retry policy and budget, and its http.Client
// (the SSRF guard).
type Transport interface {
	SendMessage(ctx context.Context, ep Endpoint, r *a2a.SendMessageRequest) (a2a.Event, error)
	SendStreamingMessage(ctx context.Context, ep Endpoint, r *a2a.SendMessageRequest, so StreamOptions) (*Stream, error)
	GetTask(ctx context.Context, ep Endpoint, r a2a.GetTaskRequest) (*a2a.Task, error)
	CancelTask(ctx context.Context, ep Endpoint, r a2a.CancelTaskRequest) (*a2a.Task, error)
	SubscribeToTask(ctx context.Context, ep Endpoint, r a2a.SubscribeToTaskRequest, so StreamOptions) (*Stream, error)
	GetExtendedAgentCard(ctx context.Context, ep Endpoint, maxBytes int64) (json.RawMessage, error)
}

var _ Transport = (*Client)(nil)
