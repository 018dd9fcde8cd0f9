// Package pbconv converts A2A's protos to and from the core model (package a2a), field for
// field and without JSON: v1.go for A2A 1.0's a2a.proto, v0.go for the 0.3 proto, value.go for
// the well-known types (Struct, Value, Timestamp). The gRPC transport of package a2aclient uses
// it for both generations, and 0.3's HTTP+JSON (which carries the 0.3 proto's JSON) too.
//
// It refuses to do I/O or to know bindings, calls or retries: a message in, a message out, and
// a *a2a.ProtocolError for an answer it cannot map.
package pbconv
