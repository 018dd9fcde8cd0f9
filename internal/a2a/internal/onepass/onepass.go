// Package onepass helps types decode themselves from the go-json-experiment decoder of the value
// that encloses them (UnmarshalJSONFrom), so that an event is scanned once, while reporting
// errors in the words a decoding of the value on its own would use. Both JSON forms of A2A
// (package a2a's 1.0 types, package a2av0's 0.x ones) decode their parts this way.
package onepass

import (
	"bytes"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// List decodes the JSON array dec reads next, one element at a time into its wire form W (in
// encoding/json's mode), and keeps what keep makes of each element it says ok to. null is a nil
// list, an empty array an empty one; a value that is no array fails as a []W would, in the
// words of a decoding of the array alone.
func List[W, T any](dec *jsontext.Decoder, keep func(*W) (T, bool)) ([]T, error) {
	kind := dec.PeekKind()
	depth, start := Start(dec)
	switch kind {
	case 'n':
		_, err := dec.ReadToken()
		return nil, err
	case '[':
	default:
		var wire []W // not an array: the error of the decoder
		return nil, NestedError(depth, start, "", jsonv2.UnmarshalDecode(dec, &wire, jsonv1.DefaultOptionsV1()))
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	out := []T{}
	for dec.PeekKind() != ']' {
		var w W
		if err := jsonv2.UnmarshalDecode(dec, &w, jsonv1.DefaultOptionsV1()); err != nil {
			return nil, NestedError(depth, start, "", err)
		}
		if t, ok := keep(&w); ok {
			out = append(out, t)
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	return out, nil
}

// Start returns the nesting depth and the byte offset of the value dec reads next, after a
// PeekKind (the unread input may start with the separator before the value).
func Start(dec *jsontext.Decoder) (depth int, offset int64) {
	const space = " \t\r\n"
	unread := dec.UnreadBuffer()
	buf := bytes.TrimLeft(unread, space)
	if len(buf) > 0 && (buf[0] == ',' || buf[0] == ':') {
		buf = bytes.TrimLeft(buf[1:], space)
	}
	return dec.StackDepth(), dec.InputOffset() + int64(len(unread)-len(buf))
}

// NestedError rewrites a type error of decoding a value at nesting depth depth and byte offset
// start (see Start) the way a decoding of that value on its own reports it: field "0.kind" (of
// no struct), not partWire."artifact.parts.0.kind". root is the name of the type that decoding
// starts with.
func NestedError(depth int, start int64, root string, err error) error {
	te, ok := err.(*jsonv1.UnmarshalTypeError)
	if !ok {
		return err
	}
	// Field is the JSON path with "." between names (those leading to parts have no dot).
	for range depth {
		_, te.Field, _ = strings.Cut(te.Field, ".")
	}
	te.Struct = ""
	if te.Field != "" {
		te.Struct = root
	}
	te.Offset -= start
	return err
}
