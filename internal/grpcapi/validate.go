package grpcapi

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
)

// Every request is checked here, before the router (and so the store or an agent) sees it. A
// failure is INVALID_ARGUMENT whose message starts with the field at fault ("session_id: ...")
// and whose details carry a google.rpc.BadRequest with that field, so clients need not parse the
// message. Messages describe the value's fault without repeating the value.

// MaxMetadataDepth bounds how deeply metadata may nest (objects and lists); the platform's
// metadata (user, device, location, skill parameters) is a few levels deep.
const MaxMetadataDepth = 32

// fieldRule says what one string field may hold.
type fieldRule struct {
	required bool
	maxBytes int
	// text allows tab, line feed and carriage return (what a user typed); ids allow no control
	// character at all.
	text bool
}

var (
	ruleID         = fieldRule{required: true, maxBytes: MaxIDBytes}
	ruleOptionalID = fieldRule{maxBytes: MaxIDBytes}
	ruleText       = fieldRule{required: true, maxBytes: MaxTextBytes, text: true}
	ruleKey        = fieldRule{maxBytes: MaxIDBytes}
	ruleString     = fieldRule{maxBytes: MaxMetadataBytes, text: true}
)

// invalid is the INVALID_ARGUMENT of one field.
func invalid(field, format string, args ...any) error {
	desc := fmt.Sprintf(format, args...)
	st := status.New(codes.InvalidArgument, field+": "+desc)
	if d, err := st.WithDetails(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
		{Field: field, Description: desc},
	}}); err == nil {
		st = d
	}
	return st.Err()
}

func (r fieldRule) check(field, v string) error {
	if fault := r.fault(v); fault != "" {
		return invalid(field, "%s", fault)
	}
	return nil
}

// fault says what is wrong with v, "" when nothing is.
func (r fieldRule) fault(v string) string {
	if !utf8.ValidString(v) {
		return "not valid UTF-8"
	}
	for i, c := range v {
		if isControl(c) && !(r.text && (c == '\t' || c == '\n' || c == '\r')) {
			if r.text {
				return fmt.Sprintf("contains the control character %U at byte %d; only tab and line breaks are allowed", c, i)
			}
			return fmt.Sprintf("contains the control character %U at byte %d; only printable text is allowed", c, i)
		}
	}
	switch {
	case r.required && strings.TrimSpace(v) == "":
		return "required"
	case len(v) > r.maxBytes:
		return fmt.Sprintf("longer than %d bytes", r.maxBytes)
	}
	return ""
}

// isControl reports the characters refused (text's tab and line breaks aside): C0, DEL and C1.
// Postgres cannot store NUL; the others break logs, headers and agents' parsers.
func isControl(c rune) bool {
	return c < 0x20 || (c >= 0x7f && c <= 0x9f)
}

func checkSession(tenantID, sessionID string) error {
	if err := ruleID.check("tenant_id", tenantID); err != nil {
		return err
	}
	return ruleID.check("session_id", sessionID)
}

func checkTurn(req *pb.HandleTurnRequest) error {
	if err := checkSession(req.GetTenantId(), req.GetSessionId()); err != nil {
		return err
	}
	if err := ruleID.check("turn_id", req.GetTurnId()); err != nil {
		return err
	}
	if err := ruleOptionalID.check("agent_id", req.GetAgentId()); err != nil {
		return err
	}
	if n := req.GetReceivedTextBytes(); n > MaxReceivedTextBytes {
		return invalid("received_text_bytes", "larger than %d (the longest reply)", MaxReceivedTextBytes)
	}
	if c := req.GetCaller(); c != nil {
		// The fault never quotes the value: a user id is personal data.
		if err := ruleID.check("caller.user_id", c.GetUserId()); err != nil {
			return err
		}
	}
	return checkInput(req)
}

// checkMetadata walks the metadata Struct (keys and string values as free text, numbers finite,
// at most MaxMetadataDepth deep) and returns it as the map sent to the agent, at most
// MaxMetadataBytes as JSON. nil stays nil.
func checkMetadata(st *structpb.Struct) (map[string]any, error) {
	if st == nil {
		return nil, nil
	}
	if err := walkStruct("metadata", st, 1); err != nil {
		return nil, err
	}
	md := st.AsMap()
	b, err := json.Marshal(md)
	if err != nil {
		// walkStruct refused everything json.Marshal cannot write; keep the answer clean anyway.
		return nil, invalid("metadata", "cannot be written as JSON")
	}
	if len(b) > MaxMetadataBytes {
		return nil, invalid("metadata", "larger than %d bytes as JSON", MaxMetadataBytes)
	}
	return md, nil
}

func walkStruct(path string, st *structpb.Struct, depth int) error {
	if depth > MaxMetadataDepth {
		return invalid(path, "nested deeper than %d levels", MaxMetadataDepth)
	}
	for k, v := range st.GetFields() {
		// A key is named in a path only once it is known to be clean.
		if fault := ruleKey.fault(k); fault != "" {
			if !strings.HasPrefix(fault, "contains") {
				fault = "is " + fault
			}
			return invalid(path, "a key %s", fault)
		}
		if err := walkValue(path+"."+k, v, depth); err != nil {
			return err
		}
	}
	return nil
}

func walkValue(path string, v *structpb.Value, depth int) error {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		return ruleString.check(path, k.StringValue)
	case *structpb.Value_NumberValue:
		if math.IsNaN(k.NumberValue) || math.IsInf(k.NumberValue, 0) {
			return invalid(path, "not a finite number")
		}
	case *structpb.Value_StructValue:
		return walkStruct(path, k.StructValue, depth+1)
	case *structpb.Value_ListValue:
		if depth+1 > MaxMetadataDepth {
			return invalid(path, "nested deeper than %d levels", MaxMetadataDepth)
		}
		for i, e := range k.ListValue.GetValues() {
			if err := walkValue(path+"["+strconv.Itoa(i)+"]", e, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}
