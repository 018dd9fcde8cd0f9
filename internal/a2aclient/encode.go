package a2aclient

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/a2a-connector/a2a-connector/internal/a2a/a2av0"
)

// appendSendParams appends the JSON of the message/send and message/stream params the connector
// sends on the 0.x wire, as encoding/json writes them, without reflection: these params are
// written once per turn and reflection was most of their cost (marshalBody). It handles what the
// connector sends — text and file parts, metadata of JSON-ish values — and reports false for
// anything else (data parts, parts of unknown kind, NaN, metadata values of other types), which
// the caller then writes with marshalBody, errors included.
//
// The bytes are encoding/json's: fields in the order of the struct tags, omitempty as it reads
// it (empty strings, slices and maps, nil pointers), strings HTML-safe with U+2028, U+2029
// escaped and invalid UTF-8 as \ufffd, map keys sorted, numbers in its float format.
func appendSendParams(b []byte, p *a2av0.MessageSendParams) ([]byte, bool) {
	b = append(b, `{"message":`...)
	b, ok := appendMessage(b, &p.Message)
	if !ok {
		return nil, false
	}
	if c := p.Configuration; c != nil {
		b = append(b, `,"configuration":{`...)
		comma := false
		if len(c.AcceptedOutputModes) > 0 {
			b = append(b, `"acceptedOutputModes":`...)
			b = appendStrings(b, c.AcceptedOutputModes)
			comma = true
		}
		if c.Blocking != nil {
			if comma {
				b = append(b, ',')
			}
			b = append(b, `"blocking":`...)
			b = strconv.AppendBool(b, *c.Blocking)
			comma = true
		}
		if c.HistoryLength != nil {
			if comma {
				b = append(b, ',')
			}
			b = append(b, `"historyLength":`...)
			b = strconv.AppendInt(b, int64(*c.HistoryLength), 10)
		}
		b = append(b, '}')
	}
	if len(p.Metadata) > 0 {
		b = append(b, `,"metadata":`...)
		if b, ok = appendMap(b, p.Metadata, 0); !ok {
			return nil, false
		}
	}
	return append(b, '}'), true
}

// appendMessage appends m as a2av0.Message.MarshalJSON writes it.
func appendMessage(b []byte, m *a2av0.Message) ([]byte, bool) {
	kind := m.Kind
	if kind == "" {
		kind = a2av0.KindMessage
	}
	b = append(b, `{"kind":`...)
	b = appendString(b, kind)
	b = append(b, `,"role":`...)
	b = appendString(b, string(m.Role))
	b = append(b, `,"parts":[`...)
	for i := range m.Parts {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = appendPart(b, &m.Parts[i]); !ok {
			return nil, false
		}
	}
	b = append(b, `],"messageId":`...)
	b = appendString(b, m.MessageID)
	if m.ContextID != "" {
		b = append(b, `,"contextId":`...)
		b = appendString(b, m.ContextID)
	}
	if m.TaskID != "" {
		b = append(b, `,"taskId":`...)
		b = appendString(b, m.TaskID)
	}
	if len(m.ReferenceTaskIDs) > 0 {
		b = append(b, `,"referenceTaskIds":`...)
		b = appendStrings(b, m.ReferenceTaskIDs)
	}
	if len(m.Metadata) > 0 {
		b = append(b, `,"metadata":`...)
		var ok bool
		if b, ok = appendMap(b, m.Metadata, 0); !ok {
			return nil, false
		}
	}
	if len(m.Extensions) > 0 {
		b = append(b, `,"extensions":`...)
		b = appendStrings(b, m.Extensions)
	}
	return append(b, '}'), true
}

// appendPart appends a text, file or data part as a2av0.Part.MarshalJSON writes it (the fields
// of its wire form that its kind fills in); other kinds are not handled.
func appendPart(b []byte, p *a2av0.Part) ([]byte, bool) {
	switch p.Kind {
	case "", a2av0.PartKindText:
		b = append(b, `{"kind":"text","text":`...)
		b = appendString(b, p.Text)
	case a2av0.PartKindFile:
		b = append(b, `{"kind":"file","file":{`...)
		if f := p.File; f != nil {
			comma := false
			for _, fv := range [...]struct{ name, v string }{
				{`"name":`, f.Name}, {`"mimeType":`, f.MimeType}, {`"bytes":`, f.Bytes}, {`"uri":`, f.URI},
			} {
				if fv.v == "" {
					continue
				}
				if comma {
					b = append(b, ',')
				}
				b = append(b, fv.name...)
				b = appendString(b, fv.v)
				comma = true
			}
		}
		b = append(b, '}')
	case a2av0.PartKindData:
		b = append(b, `{"kind":"data","data":`...)
		var ok bool
		if b, ok = appendRawJSON(b, p.Data); !ok {
			return nil, false
		}
	default:
		return nil, false
	}
	if len(p.Metadata) > 0 {
		b = append(b, `,"metadata":`...)
		var ok bool
		if b, ok = appendMap(b, p.Metadata, 0); !ok {
			return nil, false
		}
	}
	return append(b, '}'), true
}

// appendRawJSON appends the raw JSON of a data part ("{}" when empty) as encoding/json writes a
// json.RawMessage: compacted, with <, >, &, U+2028 and U+2029 escaped (they can only be inside
// strings); invalid JSON, an error there, is not handled.
func appendRawJSON(b []byte, raw json.RawMessage) ([]byte, bool) {
	if len(raw) == 0 {
		return append(b, "{}"...), true
	}
	if !json.Valid(raw) {
		return nil, false
	}
	inString, escaped := false, false
	start := 0
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			case c == '<' || c == '>' || c == '&':
				b = append(b, raw[start:i]...)
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
				start = i + 1
			case c == 0xE2 && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8:
				b = append(b, raw[start:i]...)
				b = append(b, '\\', 'u', '2', '0', '2', hexDigits[raw[i+2]&0xF])
				i += 2
				start = i + 1
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			b = append(b, raw[start:i]...)
			start = i + 1
		}
	}
	return append(b, raw[start:]...), true
}

// maxAppendDepth bounds the nesting appendValue follows; deeper values (and cycles, which
// encoding/json reports as an error) go to marshalBody.
const maxAppendDepth = 64

// appendValue appends a metadata value: the types JSON decodes into (string, float64, bool, nil,
// map[string]any, []any) and the ones callers put there most (int, int64, []string).
func appendValue(b []byte, v any, depth int) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), true
	case string:
		return appendString(b, v), true
	case bool:
		return strconv.AppendBool(b, v), true
	case float64:
		return appendFloat(b, v)
	case int:
		return strconv.AppendInt(b, int64(v), 10), true
	case int64:
		return strconv.AppendInt(b, v, 10), true
	case map[string]any:
		if v == nil {
			return append(b, "null"...), true
		}
		return appendMap(b, v, depth+1)
	case []any:
		if v == nil {
			return append(b, "null"...), true
		}
		if depth >= maxAppendDepth {
			return nil, false
		}
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendValue(b, e, depth+1); !ok {
				return nil, false
			}
		}
		return append(b, ']'), true
	case []string:
		if v == nil {
			return append(b, "null"...), true
		}
		return appendStrings(b, v), true
	default:
		return nil, false
	}
}

// appendMap appends a non-nil map with its keys sorted, as encoding/json does.
func appendMap(b []byte, m map[string]any, depth int) ([]byte, bool) {
	if depth >= maxAppendDepth {
		return nil, false
	}
	var buf [16]string
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		var ok bool
		if b, ok = appendValue(b, m[k], depth); !ok {
			return nil, false
		}
	}
	return append(b, '}'), true
}

// appendStrings appends a non-nil []string.
func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// appendFloat appends f as encoding/json does (ES6 number formatting: exponent only below 1e-6
// and from 1e21, not padded); NaN and infinities are errors there, so they are not handled.
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, false
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 → e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

const hexDigits = "0123456789abcdef"

// appendString appends s quoted as encoding/json does with HTML escaping (its default): <, > and
// & as \u003c, \u003e, \u0026; control characters short where JSON has a short form; U+2028 and
// U+2029 escaped; each byte of invalid UTF-8 as \ufffd.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
