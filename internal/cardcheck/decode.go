package cardcheck

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strconv"
	"strings"
)

// The typed views of the card fields the platform reads. They are filled from the generic JSON
// tree by decodeTree, not by encoding/json, because encoding/json reports only the first value of
// the wrong type and a tenant wants to see all of them at once. Fields the platform does not read
// are not listed here; they stay in the raw card.
//
// cardDoc holds what both card generations share; v0Doc (A2A 0.2/0.3: a top-level url) and v1Doc
// (A2A 1.0: supportedInterfaces) hold where each says the agent can be called. Each is validated
// on its own, and the validator's namespaces drop the struct name, so paths are the card's.
//
// Validation tags: required, min and max (item counts), url, and maxbytes (our own: string length
// in bytes, because the limit protects the store, which counts bytes, not runes).
type cardDoc struct {
	Name               string           `json:"name" validate:"required,maxbytes=4096"`
	Description        string           `json:"description" validate:"required,maxbytes=4096"`
	Version            string           `json:"version" validate:"required,maxbytes=4096"`
	Capabilities       *capabilitiesDoc `json:"capabilities" validate:"required"`
	DefaultInputModes  []string         `json:"defaultInputModes" validate:"required,max=50,dive,maxbytes=4096"`
	DefaultOutputModes []string         `json:"defaultOutputModes" validate:"required,max=50,dive,maxbytes=4096"`
	Skills             []skillDoc       `json:"skills" validate:"required,min=1,max=100,dive"`
}

// v0Doc is where an A2A 0.2/0.3 card says the agent is. Cards served by SDKs that speak both
// generations (their 0.3 face) also list supportedInterfaces. Its urls are checked by
// v0URLForms, not by a url tag: a gRPC one may be a bare "host:port".
type v0Doc struct {
	URL                  string           `json:"url" validate:"required,maxbytes=4096"`
	ProtocolVersion      string           `json:"protocolVersion" validate:"required,maxbytes=4096"`
	PreferredTransport   string           `json:"preferredTransport" validate:"maxbytes=4096"`
	AdditionalInterfaces []interfaceDoc   `json:"additionalInterfaces" validate:"max=50,dive"`
	SupportedInterfaces  []interfaceV1Doc `json:"supportedInterfaces" validate:"max=50,dive"`
}

// v1Doc is where an A2A 1.0 card says the agent is: its interfaces, the preferred one first.
type v1Doc struct {
	SupportedInterfaces []interfaceV1Doc `json:"supportedInterfaces" validate:"required,min=1,max=50,dive"`
}

type capabilitiesDoc struct {
	Streaming  bool           `json:"streaming"`
	Extensions []extensionDoc `json:"extensions" validate:"max=50,dive"`
}

type extensionDoc struct {
	URI         string         `json:"uri" validate:"required,maxbytes=4096"`
	Description string         `json:"description" validate:"maxbytes=4096"`
	Required    bool           `json:"required"`
	Params      map[string]any `json:"params"`
}

type skillDoc struct {
	ID          string   `json:"id" validate:"required,maxbytes=4096"`
	Name        string   `json:"name" validate:"required,maxbytes=4096"`
	Description string   `json:"description" validate:"required,maxbytes=4096"`
	Tags        []string `json:"tags" validate:"max=50,dive,maxbytes=4096"`
	Examples    []string `json:"examples" validate:"max=50,dive,maxbytes=4096"`
	InputModes  []string `json:"inputModes" validate:"max=50,dive,maxbytes=4096"`
	OutputModes []string `json:"outputModes" validate:"max=50,dive,maxbytes=4096"`
}

// interfaceDoc is an A2A 0.3 additionalInterfaces entry.
type interfaceDoc struct {
	URL       string `json:"url" validate:"required,maxbytes=4096"`
	Transport string `json:"transport" validate:"required,maxbytes=4096"`
}

// interfaceV1Doc is an A2A 1.0 supportedInterfaces entry. Its url is not checked here: gRPC
// entries carry host:port, and only the JSON-RPC entries the platform calls must be https URLs
// (checked where one is chosen).
type interfaceV1Doc struct {
	URL             string `json:"url" validate:"required,maxbytes=4096"`
	ProtocolBinding string `json:"protocolBinding" validate:"required,maxbytes=4096"`
	ProtocolVersion string `json:"protocolVersion" validate:"required,maxbytes=4096"`
	Tenant          string `json:"tenant" validate:"maxbytes=4096"`
}

// jsonName is the JSON member name of a struct field, "" when it has none.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" {
		return ""
	}
	return name
}

// decodeTree stores the JSON value v (as produced by encoding/json into any, with UseNumber) into
// rv, which must be settable. Every value of the wrong JSON type becomes an invalid_type problem
// at its path and leaves the target at its zero value; decoding goes on with the siblings. JSON
// null counts as absent.
func decodeTree(v any, rv reflect.Value, path string, c *collector) {
	if v == nil {
		return
	}
	switch rv.Kind() {
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			c.invalidType(path, "a string", v)
			return
		}
		rv.SetString(s)
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			c.invalidType(path, "true or false", v)
			return
		}
		rv.SetBool(b)
	case reflect.Slice:
		arr, ok := v.([]any)
		if !ok {
			c.invalidType(path, "an array", v)
			return
		}
		out := reflect.MakeSlice(rv.Type(), len(arr), len(arr))
		for i, el := range arr {
			decodeTree(el, out.Index(i), indexPath(path, i), c)
		}
		rv.Set(out)
	case reflect.Map:
		// Only map[string]any is used (extension params): any object goes.
		obj, ok := v.(map[string]any)
		if !ok {
			c.invalidType(path, "an object", v)
			return
		}
		rv.Set(reflect.ValueOf(obj))
	case reflect.Pointer:
		if _, ok := v.(map[string]any); !ok {
			c.invalidType(path, "an object", v)
			return
		}
		p := reflect.New(rv.Type().Elem())
		decodeTree(v, p.Elem(), path, c)
		rv.Set(p)
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			c.invalidType(path, "an object", v)
			return
		}
		t := rv.Type()
		for i := range t.NumField() {
			name := jsonName(t.Field(i))
			if name == "" {
				continue
			}
			decodeTree(obj[name], rv.Field(i), memberPath(path, name), c)
		}
	default:
		// A programming error in the doc types above, never the card's fault.
		panic("cardcheck: decodeTree: unsupported kind " + rv.Kind().String())
	}
}

// describeJSON names the JSON type of a decoded value for messages ("a string", "an array").
func describeJSON(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	default:
		return "an unknown value"
	}
}

var plainMember = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$-]*$`)

// memberPath appends an object member to a path: "capabilities" + "streaming" =
// "capabilities.streaming". Names that would be ambiguous in dot form (scheme names are free
// text) use the bracket form: securitySchemes["my key"].
func memberPath(parent, name string) string {
	if !plainMember.MatchString(name) {
		return parent + "[" + strconv.Quote(name) + "]"
	}
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// indexPath appends an array index to a path: "skills" + 2 = "skills[2]".
func indexPath(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}
