package a2a

import (
	"encoding/json"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/protobuf/proto"
)

// The request encoders are written by hand (appendSendParams for the 0.x wire, v1MessageOf for
// the 1.0 JSON, messageToPB and messageToPBV0 for gRPC). A field added to the neutral types that
// one of them forgets would be dropped without a word. These tests find the fields by
// reflection, so a new one is checked without anyone listing it:
//
//   - parity: every exported field set, the hand-written output is the reference encoder's
//     (encoding/json for the 0.x wire; the 1.0 JSON read by protojson for the 1.0 proto);
//   - coverage: clearing any one field changes every encoder's output, unless the encoder's
//     protocol has no place for it (encoderSkips, each with its reason).

// partVariants are the part shapes the encoders write: only the content of its kind is set (a
// part of one kind carries no other kind's content); the fields every part has stay set.
var partVariants = []struct {
	name  string
	shape func(*Part)
	// skip are fields whose zero value means the same in this shape.
	skip []string
}{
	{"text", func(p *Part) { p.Kind, p.File, p.Data = PartKindText, nil, nil }, []string{".Parts[0].Kind"}}, // no kind is text
	{"file-uri", func(p *Part) { p.Kind, p.Text, p.Data, p.File.Bytes = PartKindFile, "", nil, "" }, nil},
	{"file-bytes", func(p *Part) { p.Kind, p.Text, p.Data, p.File.URI = PartKindFile, "", nil, "" }, nil},
	{"data", func(p *Part) { p.Kind, p.Text, p.File = PartKindData, "", nil }, nil},
}

// fillValue sets every exported field reachable from v to a non-zero value that the encoders
// take as it is: a slice gets one element, a pointer a filled value, a role is "agent" (the
// 1.0 encoders write anything else as user), file bytes are base64.
func fillValue(v reflect.Value, name string) {
	switch {
	case v.Type() == reflect.TypeFor[Role]():
		v.SetString(string(RoleAgent))
		return
	case v.Type() == reflect.TypeFor[json.RawMessage]():
		v.SetBytes([]byte(`{"d":1}`))
		return
	case strings.HasSuffix(name, "File.Bytes"):
		v.SetString("AAEC")
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("s-" + name)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(3)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillValue(v.Elem(), name)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				fillValue(v.Field(i), name+"."+f.Name)
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fillValue(v.Index(0), name+"[0]")
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		m.SetMapIndex(reflect.ValueOf("k-"+name), reflect.ValueOf(any("v")))
		v.Set(m)
	default:
		panic("fillValue: no value for " + name + " of kind " + v.Kind().String())
	}
}

// leaves calls visit with every non-zero leaf field reachable from v (a scalar, a slice of
// scalars, a map or raw JSON), in a fixed order.
func leaves(v reflect.Value, name string, visit func(name string, f reflect.Value)) {
	switch {
	case v.IsZero():
		return
	case v.Kind() == reflect.Pointer:
		leaves(v.Elem(), name, visit)
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				leaves(v.Field(i), name+"."+f.Name, visit)
			}
		}
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Struct:
		for i := range v.Len() {
			leaves(v.Index(i), name+"[0]", visit)
		}
	default:
		visit(name, v)
	}
}

// filledSendParams is MessageSendParams with every field set and its one part in the variant's
// shape.
func filledSendParams(shape func(*Part)) *MessageSendParams {
	p := &MessageSendParams{}
	fillValue(reflect.ValueOf(p).Elem(), "MessageSendParams")
	shape(&p.Message.Parts[0])
	return p
}

// requestEncoder is one hand-written encoder of requests, as bytes to compare.
type requestEncoder struct {
	name   string
	encode func(op Op, params any) ([]byte, error)
}

func protoBytes(m proto.Message, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(m)
}

var requestEncoders = []requestEncoder{
	{"0.x JSON", func(op Op, params any) ([]byte, error) { return v0Dialect{}.encodeParams(op, params, "") }},
	{"1.0 JSON", func(op Op, params any) ([]byte, error) { return v1Dialect{}.encodeParams(op, params, "tn") }},
	{"1.0 proto", func(op Op, params any) ([]byte, error) { return protoBytes(grpcRequest(call{op: op}, params, "tn")) }},
	{"0.3 proto", func(op Op, params any) ([]byte, error) {
		return protoBytes(grpcRequest(call{op: op, grpcV0: true}, params, ""))
	}},
}

// encoderSkips are the fields an encoder leaves out on purpose, by encoder and the field's
// path suffix, with the reason. Anything not here must reach the agent.
var encoderSkips = map[string][]string{
	"1.0 JSON": {
		".Message.Kind",            // 1.0 objects have no kind
		".Configuration.Blocking",  // 1.0 has returnImmediately instead; its default is the blocking send
		"TaskQueryParams.Metadata", // GetTask has no metadata
	},
	"1.0 proto": {".Message.Kind", ".Configuration.Blocking", "TaskQueryParams.Metadata"},
	"0.3 proto": {
		".Message.Kind",                                     // as the 1.0 proto
		"TaskQueryParams.Metadata", "TaskIDParams.Metadata", // 0.3's GetTask and CancelTask take a name only
	},
	"0.x JSON": {},
}

// Every field set: the hand-written writers give the reference encoder's output.
func TestRequestEncoders_match_their_reference_with_every_field_set(t *testing.T) {
	for _, pv := range partVariants {
		p := filledSendParams(pv.shape)
		b, ok := appendSendParams(nil, p)
		want, err := json.Marshal(p)
		if !ok || err != nil || string(b) != string(want) {
			t.Errorf("%s part, 0.x by hand (ok %v, reference error %v):\n got %s\nwant %s", pv.name, ok, err, b, want)
		}
		got, err := grpcRequest(call{op: OpSendMessage}, p, "tn")
		if err != nil {
			t.Fatalf("%s part, 1.0 proto: %v", pv.name, err)
		}
		if ref := viaJSONRequest(t, call{op: OpSendMessage}, p, "tn", &a2apb.SendMessageRequest{}); !proto.Equal(got, ref) {
			t.Errorf("%s part, 1.0 proto:\n got %v\nwant %v", pv.name, got, ref)
		}
	}
}

// Clearing any one field changes what each encoder writes, unless it skips the field on purpose.
func TestRequestEncoders_write_every_field(t *testing.T) {
	type request struct {
		name string
		op   Op
		make func() any
		skip []string
	}
	var requests []request
	for _, pv := range partVariants {
		requests = append(requests, request{"send with a " + pv.name + " part", OpSendMessage, func() any { return filledSendParams(pv.shape) }, pv.skip})
	}
	requests = append(requests,
		request{"get", OpGetTask, func() any {
			var p TaskQueryParams
			fillValue(reflect.ValueOf(&p).Elem(), "TaskQueryParams")
			return p
		}, nil},
		request{"cancel", OpCancelTask, func() any {
			var p TaskIDParams
			fillValue(reflect.ValueOf(&p).Elem(), "TaskIDParams")
			return p
		}, nil},
	)
	for _, enc := range requestEncoders {
		for _, rq := range requests {
			base, err := enc.encode(rq.op, rq.make())
			if err != nil {
				t.Fatalf("%s, %s: %v", enc.name, rq.name, err)
			}
			var names []string
			leaves(reflect.ValueOf(rq.make()), reflect.TypeOf(rq.make()).String(), func(name string, _ reflect.Value) { names = append(names, name) })
			for i, name := range names {
				skipped := func(s string) bool { return strings.HasSuffix(name, s) }
				if slices.ContainsFunc(encoderSkips[enc.name], skipped) || slices.ContainsFunc(rq.skip, skipped) {
					continue
				}
				params := rq.make()
				pv := reflect.New(reflect.TypeOf(params)).Elem()
				pv.Set(reflect.ValueOf(params))
				n := 0
				leaves(pv, "", func(_ string, f reflect.Value) {
					if n == i {
						f.SetZero()
					}
					n++
				})
				got, err := enc.encode(rq.op, pv.Interface())
				if err == nil && string(got) == string(base) {
					t.Errorf("%s, %s: clearing %s changes nothing: the encoder drops it", enc.name, rq.name, name)
				}
			}
		}
	}
}

// The JSON-RPC envelope is written by hand around the params (newRequest): with every field of
// Request set, it must be what encoding/json writes for Request, so that a field added there
// is not left out of what the Client sends. (jsonrpc is the constant "2.0" by design; the id is
// always a string on our requests.)
func TestRequestEnvelope_matches_encoding_json_with_every_field_set(t *testing.T) {
	var r Request
	fillValue(reflect.ValueOf(&r).Elem(), "Request")
	r.JSONRPC = JSONRPCVersion
	r.ID = json.RawMessage(`"id-1"`)
	params := TaskQueryParams{ID: "t"}
	raw, err := v0Dialect{}.encodeParams(OpGetTask, params, "")
	if err != nil {
		t.Fatal(err)
	}
	r.Params = raw
	want, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	cl := call{d: v0Dialect{}, op: OpGetTask, method: r.Method, id: "id-1"}
	req, err := newRequest(t.Context(), Endpoint{URL: "http://127.0.0.1:1/"}, cl, params, "application/json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(req.Body)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("envelope\n got %s\nwant %s", got, want)
	}
}
