package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
)

// Every request is checked here, at the edge, before any store or network call: the body is one
// JSON object of the endpoint's shape, in UTF-8, and each string member follows the rule of its
// kind. A failure is a 400 problem naming the member (field) and the rule (code); its detail
// describes the value's fault without repeating the value, which may be a secret.
//
// Codes: invalid_json, invalid_utf8, unknown_field, invalid_type, required, too_long,
// invalid_characters, invalid_url, bad_request (the body is well-formed but asks for nothing).

// fieldRule says what one string member may hold.
type fieldRule struct {
	required bool
	maxBytes int // 0: no limit of its own (the body limit still applies)
	maxRunes int // 0: none
	// multiline allows tab, line feed and carriage return (free text); every other control
	// character is refused everywhere.
	multiline bool
	// header values go out as an HTTP header: printable ASCII only, no surrounding spaces.
	header bool
}

// The rules of the API's string members.
var (
	ruleTenantName = fieldRule{required: true, maxRunes: 200}
	ruleCardURL    = fieldRule{required: true, maxBytes: 2048}
	ruleAPIKey     = fieldRule{maxBytes: maxAPIKeyBytes, header: true}
	ruleText       = fieldRule{required: true, maxBytes: 16 << 10, multiline: true}
)

// fieldError is a 400 naming the member at fault.
func fieldError(field, code, format string, args ...any) error {
	return &apiError{status: http.StatusBadRequest, code: code, field: field, detail: fmt.Sprintf(format, args...)}
}

// check applies r to the value of member field.
func (r fieldRule) check(field, v string) error {
	if !utf8.ValidString(v) {
		return fieldError(field, "invalid_utf8", "%s is not valid UTF-8.", field)
	}
	for i, c := range v {
		if r.header && (c < 0x20 || c > 0x7e) {
			return fieldError(field, "invalid_characters",
				"%s may hold printable ASCII characters only (it is sent as an HTTP header); character %d is %U.", field, utf8.RuneCountInString(v[:i])+1, c)
		}
		if isControl(c) && !(r.multiline && (c == '\t' || c == '\n' || c == '\r')) {
			return fieldError(field, "invalid_characters",
				"%s contains the control character %U at character %d; %s.", field, c, utf8.RuneCountInString(v[:i])+1, r.allowed())
		}
	}
	if r.header && v != strings.TrimSpace(v) {
		return fieldError(field, "invalid_characters", "%s must not begin or end with a space (HTTP would drop it).", field)
	}
	switch {
	case r.required && strings.TrimSpace(v) == "":
		return fieldError(field, "required", "%s is required.", field)
	case r.maxBytes > 0 && len(v) > r.maxBytes:
		return fieldError(field, "too_long", "%s is longer than %d bytes.", field, r.maxBytes)
	case r.maxRunes > 0 && utf8.RuneCountInString(v) > r.maxRunes:
		return fieldError(field, "too_long", "%s is longer than %d characters.", field, r.maxRunes)
	}
	return nil
}

func (r fieldRule) allowed() string {
	if r.multiline {
		return "only tab and line breaks are allowed"
	}
	return "it must be a single line of printable text"
}

// isControl reports the characters no member may hold (tab and line breaks aside, for free
// text): C0, DEL and C1. Postgres refuses NUL outright; the others corrupt logs, headers and
// terminals.
func isControl(c rune) bool {
	return c < 0x20 || (c >= 0x7f && c <= 0x9f)
}

// checkCardURL checks a pasted card URL and returns it trimmed and canonical. Everything that
// can never be fetched, userinfo (user:password@) included, is invalid_url here, before any
// fetch; the detail never repeats the URL.
func checkCardURL(field, raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if err := ruleCardURL.check(field, raw); err != nil {
		return "", err
	}
	if _, err := cardfetch.CheckURL(raw); err != nil {
		// CheckURL's reasons are written to be shown: they quote neither the URL nor a parser.
		return "", fieldError(field, "invalid_url", "%s cannot be used: %v.", field, err)
	}
	return canonicalCardURL(raw), nil
}

// pathID returns the path member name as a canonical UUID. Anything else names nothing the API
// stores: 404, exactly like a missing resource or another tenant's, and no store call.
func pathID(r *http.Request, name string) (string, error) {
	id, err := uuid.Parse(r.PathValue(name))
	if err != nil {
		return "", errNotFound
	}
	return id.String(), nil
}

// decode reads a JSON body strictly into v (a pointer to a struct): within MaxBodyBytes, UTF-8,
// one object, no unknown members, each member of its type. Its errors name the member at fault
// in words of JSON, not of Go.
func decode(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return &apiError{status: http.StatusBadRequest, code: "invalid_json", detail: "The request body could not be read."}
	}
	if !utf8.Valid(body) {
		// JSON is UTF-8 (RFC 8259); Go's decoder would silently turn the bad bytes into U+FFFD.
		field := invalidUTF8Member(body)
		if field == "" {
			return &apiError{status: http.StatusBadRequest, code: "invalid_utf8", detail: "The request body is not valid UTF-8."}
		}
		return fieldError(field, "invalid_utf8", "%s is not valid UTF-8.", field)
	}
	if err := exactMembers(body, reflect.TypeOf(v).Elem(), ""); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err, reflect.TypeOf(v).Elem())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &apiError{status: http.StatusBadRequest, code: "invalid_json", detail: "The request body must hold exactly one JSON object."}
	}
	return nil
}

// exactMembers refuses an object member whose name is not exactly the JSON name of a field of
// t: encoding/json matches names case-insensitively, so {"cardurl": …} would fill cardUrl,
// while the API's names are case-sensitive like JSON's. It walks nested objects (and arrays of
// them) whose field is a struct. A body that is not an object of objects where t has structs is
// left to the decoder, which says what is wrong with it.
func exactMembers(raw []byte, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return nil
		}
		for i, item := range items {
			if err := exactMembers(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Struct:
	default:
		return nil
	}
	members, ok := objectMembers(raw)
	if !ok {
		return nil
	}
	fields := jsonFields(t)
	for _, m := range members {
		name, value := m.name, m.value
		ft, ok := fields[name]
		member := name
		if path != "" {
			member = path + "." + name
		}
		if !ok {
			if len(member) > 64 {
				member = member[:64] + "…"
			}
			return fieldError(strings.ToValidUTF8(member, "\uFFFD"), "unknown_field",
				"This endpoint has no member %q; member names are case-sensitive.", member)
		}
		if err := exactMembers(value, ft, member); err != nil {
			return err
		}
	}
	return nil
}

type member struct {
	name  string
	value json.RawMessage
}

// objectMembers returns the members of a JSON object in the order they are written; false when
// raw is not one.
func objectMembers(raw []byte) ([]member, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		name, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, false
		}
		out = append(out, member{name, value})
	}
	return out, true
}

// jsonFields maps the JSON names of struct type t's fields, as encoding/json sees them
// (embedded structs' fields promoted), to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-":
			continue
		case f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct:
			for name, ft := range jsonFields(f.Type) {
				out[name] = ft
			}
			continue
		case !f.IsExported():
			continue
		case tag == "":
			tag = f.Name
		}
		out[tag] = f.Type
	}
	return out
}

// decodeError turns encoding/json's error into a problem in the API's words.
func decodeError(err error, into reflect.Type) error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	switch {
	case errors.Is(err, io.EOF):
		return &apiError{status: http.StatusBadRequest, code: "invalid_json", detail: "The request body is empty; send a JSON object."}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &apiError{status: http.StatusBadRequest, code: "invalid_json", detail: "The request body ends in the middle of its JSON."}
	case errors.As(err, &syn):
		return &apiError{status: http.StatusBadRequest, code: "invalid_json",
			detail: fmt.Sprintf("The request body is not valid JSON (at byte %d).", syn.Offset)}
	case errors.As(err, &typ):
		if typ.Field == "" {
			return &apiError{status: http.StatusBadRequest, code: "invalid_type", detail: "The request body must be a JSON object."}
		}
		return fieldError(typ.Field, "invalid_type", "%s must be %s.", typ.Field, jsonKind(memberType(into, typ.Field)))
	}
	// DisallowUnknownFields has no error type of its own: `json: unknown field "x"`.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if n, uerr := strconv.Unquote(name); uerr == nil {
			name = n
		}
		if len(name) > 64 {
			name = name[:64] + "…"
		}
		// The name is the client's own; it is escaped as JSON, never interpreted.
		return fieldError(strings.ToValidUTF8(name, "\uFFFD"), "unknown_field", "This endpoint has no member %q.", name)
	}
	return &apiError{status: http.StatusBadRequest, code: "invalid_json", detail: "The request body is not a JSON object of this endpoint's shape."}
}

// memberType is the Go type of the member at a dotted JSON path in struct type t, nil when
// there is none.
func memberType(t reflect.Type, path string) reflect.Type {
	for name := range strings.SplitSeq(path, ".") {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return nil
		}
		var found reflect.Type
		for i := range t.NumField() {
			tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			if tag == name {
				found = t.Field(i).Type
			}
		}
		if found == nil {
			return nil
		}
		t = found
	}
	return t
}

// jsonKind names a Go type as the JSON value it is decoded from.
func jsonKind(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "of another type"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "of another type"
}

// invalidUTF8Member returns the JSON path (a.b, a[2]) of the first member whose name or string
// value holds bytes that are not UTF-8, or "" when they are elsewhere (or the JSON is broken
// before them). It reads the raw bytes of each token, which encoding/json would have repaired.
func invalidUTF8Member(body []byte) string {
	type level struct {
		object bool
		key    string // object: the member being read; "" while a key is expected
		index  int    // array: the element being read
	}
	var stack []level
	path := func(leaf string) string {
		var b strings.Builder
		for _, l := range stack {
			switch {
			case l.object && l.key != "":
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(l.key)
			case !l.object:
				fmt.Fprintf(&b, "[%d]", l.index)
			}
		}
		if leaf != "" {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(leaf)
		}
		return b.String()
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		raw := body[start:dec.InputOffset()]
		var top *level
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		expectKey := top != nil && top.object && top.key == ""
		s, isString := tok.(string)
		if isString && !utf8.Valid(raw) {
			name := strings.ToValidUTF8(s, "\uFFFD")
			if expectKey {
				return path(name)
			}
			return path("")
		}
		switch {
		case expectKey && isString:
			top.key = s
			continue
		case tok == json.Delim('{'):
			stack = append(stack, level{object: true})
			continue
		case tok == json.Delim('['):
			stack = append(stack, level{})
			continue
		case tok == json.Delim('}') || tok == json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value (or a container) ended: the next member or element starts.
		if len(stack) > 0 {
			if t := &stack[len(stack)-1]; t.object {
				t.key = ""
			} else {
				t.index++
			}
		}
	}
}
