package a2aclient

import (
	"encoding/json"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/a2a-connector/a2a-connector/internal/a2a"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/protobuf/proto"
)

// The request encoders are written by hand (appendSendParams for the 0.x wire, v1MessageOf for
// the 1.0 JSON, messageToPB and messageToPBV0 for gRPC; the 0.x wire through sendParamsToV0). A
// field added to the core model that
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
	shape func(*a2a.Part)
	// skip are fields whose zero value means the same in this shape; skipV0 are those 0.x (its
	// JSON and its proto) has no place for in this shape.
	skip, skipV0 []string
}{
	{"text", func(p *a2a.Part) { p.Kind, p.Raw, p.URL, p.Data = a2a.PartText, nil, "", nil },
		[]string{".Parts[0].Kind"},                             // the zero kind is text
		[]string{".Parts[0].Filename", ".Parts[0].MediaType"}}, // a 0.x text part has neither
	{"raw", func(p *a2a.Part) { p.Kind, p.Text, p.URL, p.Data = a2a.PartRaw, "", "", nil }, nil, nil},
	{"url", func(p *a2a.Part) { p.Kind, p.Text, p.Raw, p.Data = a2a.PartURL, "", nil, nil }, nil, nil},
	{"data", func(p *a2a.Part) { p.Kind, p.Text, p.Raw, p.URL = a2a.PartData, "", nil, "" }, nil,
		[]string{".Parts[0].Filename", ".Parts[0].MediaType"}}, // nor a 0.x data part
}

// v0Encoders are the encoders of 0.x requests, to which partVariants' skipV0 applies.
var v0Encoders = []string{"0.x JSON", "0.3 proto"}

// fillValue sets every exported field reachable from v to a non-zero value that the encoders
// take as it is: a slice gets one element, a pointer a filled value, a role is "agent" (the
// encoders write anything else as user).
func fillValue(v reflect.Value, name string) {
	switch {
	case v.Type() == reflect.TypeFor[a2a.Role]():
		v.SetString(string(a2a.RoleAgent))
		return
	case v.Type() == reflect.TypeFor[json.RawMessage]():
		v.SetBytes([]byte(`{"d":1}`))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("s-" + name)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(3)
	case reflect.Uint8:
		v.SetUint(3)
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

// filledSendParams is a SendMessageRequest with every field set and its one part in the
// variant's shape.
func filledSendParams(shape func(*a2a.Part)) *a2a.SendMessageRequest {
	p := &a2a.SendMessageRequest{}
	fillValue(reflect.ValueOf(p).Elem(), "SendMessageRequest")
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
	"1.0 JSON":  {},
	"1.0 proto": {},
	"0.3 proto": {"CancelTaskRequest.Metadata"}, // 0.3's CancelTask takes a name only
	"0.x JSON":  {},
}

// Every field set: the hand-written writers give the reference encoder's output.
func TestRequestEncoders_match_their_reference_with_every_field_set(t *testing.T) {
	for _, pv := range partVariants {
		p := filledSendParams(pv.shape)
		v0 := sendParamsToV0(p)
		b, ok := appendSendParams(nil, v0)
		want, err := json.Marshal(v0)
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
		name         string
		op           Op
		make         func() any
		skip, skipV0 []string
	}
	var requests []request
	for _, pv := range partVariants {
		requests = append(requests, request{"send with a " + pv.name + " part", OpSendMessage, func() any { return filledSendParams(pv.shape) }, pv.skip, pv.skipV0})
	}
	requests = append(requests,
		request{"get", OpGetTask, func() any {
			var p a2a.GetTaskRequest
			fillValue(reflect.ValueOf(&p).Elem(), "GetTaskRequest")
			return p
		}, nil, nil},
		request{"cancel", OpCancelTask, func() any {
			var p a2a.CancelTaskRequest
			fillValue(reflect.ValueOf(&p).Elem(), "CancelTaskRequest")
			return p
		}, nil, nil},
		request{"subscribe", OpSubscribeToTask, func() any {
			var p a2a.SubscribeToTaskRequest
			fillValue(reflect.ValueOf(&p).Elem(), "SubscribeToTaskRequest")
			return p
		}, nil, nil},
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
				if slices.ContainsFunc(encoderSkips[enc.name], skipped) || slices.ContainsFunc(rq.skip, skipped) ||
					slices.Contains(v0Encoders, enc.name) && slices.ContainsFunc(rq.skipV0, skipped) {
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
	params := a2a.GetTaskRequest{ID: "t"}
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
