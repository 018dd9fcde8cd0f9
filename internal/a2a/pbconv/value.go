package pbconv

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The well-known proto types both generations' protos carry (Struct, Value, Timestamp, bytes),
// converted to and from what the core model holds, without a JSON round trip. Where a value
// has two readings, the one chosen is what protojson gives, which is what the gRPC binding
// produced when it went through JSON: the events are the same either way.

// mapFromPB is a Struct's fields as a map (nil for no Struct), numbers as float64, as JSON
// decoding gives them.
func mapFromPB(s *structpb.Struct) map[string]any {
	if s == nil {
		return nil
	}
	return s.AsMap()
}

// StructToPB is m as a Struct (nil for a nil map). Values structpb does not take (typed
// slices, invalid UTF-8, ...) go through their JSON, which is how they reach the agent on the
// other bindings too.
func StructToPB(m map[string]any) (*structpb.Struct, error) {
	if m == nil {
		return nil, nil
	}
	if s, err := structpb.NewStruct(m); err == nil {
		return s, nil
	}
	// encoding/json's bytes, which marshalBody in the client gives too (a rare path: values
	// NewStruct does not take, such as json.Number).
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	s := &structpb.Struct{}
	if err := protojson.Unmarshal(b, s); err != nil {
		return nil, err
	}
	return s, nil
}

// rawFromPB is a Value as compact JSON, nil for no value or null (a part whose data is null is
// not a data part). Keys are sorted and HTML characters left as they are, so the bytes are
// stable and read like the agent's.
func rawFromPB(v *structpb.Value) json.RawMessage {
	if v == nil {
		return nil
	}
	if _, null := v.GetKind().(*structpb.Value_NullValue); null || v.GetKind() == nil {
		return nil
	}
	b, err := jsonv2.Marshal(v.AsInterface(), jsonv2.Deterministic(true))
	if err != nil {
		return nil
	}
	return b
}

// valueToPB is raw JSON as a Value.
func valueToPB(raw json.RawMessage) (*structpb.Value, error) {
	var v any
	if err := jsonv1.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return structpb.NewValue(v)
}

// timestampFromPB writes a Timestamp the way protojson does (RFC 3339, UTC, 0, 3, 6 or 9
// fractional digits); "" for none.
func timestampFromPB(ts *timestamppb.Timestamp) string {
	if ts == nil {
		return ""
	}
	x := time.Unix(ts.GetSeconds(), int64(ts.GetNanos())).UTC().Format("2006-01-02T15:04:05.000000000")
	x = strings.TrimSuffix(x, "000")
	x = strings.TrimSuffix(x, "000")
	x = strings.TrimSuffix(x, ".000")
	return x + "Z"
}

// Int32Of is a history length as the protos carry it.
func Int32Of(n int) (int32, error) {
	if n < -1<<31 || n > 1<<31-1 {
		return 0, fmt.Errorf("historyLength %d out of range", n)
	}
	return int32(n), nil
}

// stringsOrNil keeps "none" as nil, as a decoded JSON object without the member has it.
func stringsOrNil(ss []string) []string {
	if len(ss) == 0 {
		return nil
	}
	return ss
}
