package grpcapi

import (
	"strings"

	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Codec returns the server codec of the connector (grpc.ForceServerCodecV2): grpc's protobuf
// codec, except for a request with a string field that is not valid UTF-8. protobuf-go refuses
// such a message, and grpc-go then answers INTERNAL itself, before any handler runs. This codec
// decodes it instead with each invalid sequence replaced by U+0000, a character the edge
// validation refuses in every field, so the client gets INVALID_ARGUMENT naming the field, like
// any other malformed string. Well-formed requests take grpc's path unchanged; bytes that are no
// protobuf at all still get grpc-go's INTERNAL.
func Codec() encoding.CodecV2 { return utf8Codec{encoding.GetCodecV2(protocodec.Name)} }

type utf8Codec struct{ encoding.CodecV2 }

func (c utf8Codec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.CodecV2.Unmarshal(data, v)
	if err == nil || !strings.Contains(err.Error(), "invalid UTF-8") {
		return err
	}
	m, ok := v.(proto.Message)
	if !ok {
		return err
	}
	raw := data.Materialize()
	fixed, ok := scrubStrings(raw, m.ProtoReflect().Descriptor())
	if !ok {
		return err
	}
	proto.Reset(m)
	return proto.Unmarshal(fixed, m)
}

// scrubStrings returns the wire bytes b of a message of type md with the invalid UTF-8 of every
// string field, at any depth, replaced by U+0000. ok is false when b is not well-formed.
func scrubStrings(b []byte, md protoreflect.MessageDescriptor) (out []byte, ok bool) {
	out = make([]byte, 0, len(b))
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, false
		}
		tag := b[:n]
		b = b[n:]
		if typ != protowire.BytesType {
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return nil, false
			}
			out = append(append(out, tag...), b[:m]...)
			b = b[m:]
			continue
		}
		v, m := protowire.ConsumeBytes(b)
		if m < 0 {
			return nil, false
		}
		b = b[m:]
		switch fd := md.Fields().ByNumber(num); {
		case fd != nil && fd.Kind() == protoreflect.StringKind:
			v = []byte(strings.ToValidUTF8(string(v), "\x00"))
		case fd != nil && (fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind):
			if v, ok = scrubStrings(v, fd.Message()); !ok {
				return nil, false
			}
		}
		out = protowire.AppendBytes(append(out, tag...), v)
	}
	return out, true
}
