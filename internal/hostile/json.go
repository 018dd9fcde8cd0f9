package hostile

import (
	"fmt"
	"strconv"
	"strings"
)

// RawJSON is a JSON fragment written as it is (deep nesting, 1e309, or broken JSON on purpose).
type RawJSON string

// JSON writes v as JSON the way a careless client would: strings keep their bytes, invalid
// UTF-8 included; only quotes, backslashes and control characters are escaped, as JSON
// requires (so NUL arrives as \u0000). v is nil, bool, float64, int, string, RawJSON, []any or
// []Member (an object, members in order, duplicate keys kept).
func JSON(v any) []byte {
	var b strings.Builder
	writeJSON(&b, v)
	return []byte(b.String())
}

func writeJSON(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int:
		b.WriteString(strconv.Itoa(x))
	case float64:
		b.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
	case RawJSON:
		b.WriteString(string(x))
	case string:
		writeString(b, x)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, e)
		}
		b.WriteByte(']')
	case []Member:
		b.WriteByte('{')
		for i, m := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, m.Key)
			b.WriteByte(':')
			writeJSON(b, m.Value)
		}
		b.WriteByte('}')
	default:
		panic(fmt.Sprintf("hostile.JSON: %T", v))
	}
}

func writeString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			fmt.Fprintf(b, `\u%04x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}
