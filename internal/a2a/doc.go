// Package a2a is the core model of A2A for a2a-connector: A2A 1.0's objects (a2a.proto's
// messages) as plain Go types named after the spec (types.go: Message, Part, Task, TaskStatus,
// Artifact, the two update events, SendMessageRequest, GetTaskRequest, ...; enums TASK_STATE_*
// and ROLE_*), their JSON form (1.0's JSON, decoded in one pass, tolerant of unknown members, of
// parts with no content it knows (dropped) and of the 0.x spellings agents mix into the 1.0 wire;
// json.go), and the errors an agent's answer can be (errors.go: RPCError, the JSON-RPC and A2A
// error codes, ProtocolError and its kinds).
//
// Every generation and binding converts to and from this model: package a2aclient (the
// Client, one transport per binding), package a2av0 (the 0.x JSON objects), package pbconv (the
// 1.0 and 0.3 protos). Callers above the wire see only these types.
//
// It refuses to do I/O: no client, no HTTP, no gRPC, no SSE, no retries, no protocol
// generations or bindings (package a2aclient), and nothing of the platform (internal/invoke).
package a2a
