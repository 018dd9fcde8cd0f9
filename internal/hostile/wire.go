package hostile

import (
	"fmt"
	"math"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
)

// RawCodec is a gRPC codec that sends and receives messages as the bytes they are, so a test can
// send what protobuf-go would refuse to marshal (strings that are not UTF-8, bytes that are not a
// message). Its name is "proto": the server reads the bytes with its usual codec. Use it with
// grpc.ForceCodec on one call; pass *[]byte to Invoke, SendMsg and RecvMsg.
type RawCodec struct{}

// Marshal returns the bytes v points to.
func (RawCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("raw codec: marshal %T, want *[]byte", v)
	}
	return *b, nil
}

// Unmarshal stores a copy of data in the *[]byte v.
func (RawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("raw codec: unmarshal into %T, want *[]byte", v)
	}
	*b = append([]byte(nil), data...)
	return nil
}

// Name is the content subtype the server decodes with.
func (RawCodec) Name() string { return "proto" }

// AppendString appends field num as a protobuf string (length-delimited) holding s as it is.
func AppendString(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// Member is one member of a Struct, in order; its key may be any bytes.
type Member struct {
	Key   string
	Value any
}

// AppendStruct appends field num as a google.protobuf.Struct of members, encoded by hand so keys and
// strings may hold anything. A value is nil (null), bool, float64, string, []any (a list) or
// []Member (a nested struct); anything else is encoded as null.
func AppendStruct(b []byte, num protowire.Number, members []Member) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, structBody(members))
}

func structBody(members []Member) []byte {
	var out []byte
	for _, m := range members {
		// map<string, Value> fields = 1: each entry a message {1: key, 2: value}.
		entry := AppendString(nil, 1, m.Key)
		entry = protowire.AppendTag(entry, 2, protowire.BytesType)
		entry = protowire.AppendBytes(entry, valueBody(m.Value))
		out = protowire.AppendTag(out, 1, protowire.BytesType)
		out = protowire.AppendBytes(out, entry)
	}
	return out
}

func valueBody(v any) []byte {
	switch x := v.(type) {
	case bool:
		var n uint64
		if x {
			n = 1
		}
		return protowire.AppendVarint(protowire.AppendTag(nil, 4, protowire.VarintType), n)
	case float64:
		return protowire.AppendFixed64(protowire.AppendTag(nil, 2, protowire.Fixed64Type), math.Float64bits(x))
	case string:
		return AppendString(nil, 3, x)
	case []Member:
		return protowire.AppendBytes(protowire.AppendTag(nil, 5, protowire.BytesType), structBody(x))
	case []any:
		var list []byte
		for _, e := range x {
			list = protowire.AppendTag(list, 1, protowire.BytesType)
			list = protowire.AppendBytes(list, valueBody(e))
		}
		return protowire.AppendBytes(protowire.AppendTag(nil, 6, protowire.BytesType), list)
	}
	return protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 0)
}

// undecodablePrefix starts grpc-go's answer to a request it cannot decode.
const undecodablePrefix = "grpc: failed to unmarshal the received message: "

// UndecodableByGRPC reports whether st is grpc-go's own answer to a request protobuf cannot
// decode (a string field that is not UTF-8, bytes that are no message): INTERNAL with grpc's
// and protobuf's fixed wording, written before any code of the connector runs. It is the one
// INTERNAL the tests of the connector accept (docs/decisions.md says why it stays).
func UndecodableByGRPC(st *status.Status) bool {
	return st.Code() == codes.Internal && strings.HasPrefix(st.Message(), undecodablePrefix)
}
