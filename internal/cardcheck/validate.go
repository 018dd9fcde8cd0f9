package cardcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-playground/validator/v10"

	connector "github.com/a2a-connector/a2a-connector"
)

// Report is the outcome of validating one card against the platform subset.
type Report struct {
	// Valid is true when no problem has error severity.
	Valid bool
	// Card is the card as received, compacted, with every field kept (also the ones the
	// platform does not read). Nil when the input was not JSON.
	Card json.RawMessage
	// Profile is what the platform derives from the card, filled as far as the card allows
	// even when it is invalid (so the console can show it beside the problems).
	Profile connector.CardProfile
	// Problems lists every problem found, errors first, then warnings.
	Problems []connector.Problem
}

// Built-in extensions of the platform (seed 002 and the platform's extension guides), each
// published under a Chinese and an English URI.
const (
	IntentExtensionZH   = "https://help.aliyun.com/zh/model-studio/multimodal-integration-a2a-intent"
	IntentExtensionEN   = "https://help.aliyun.com/en/model-studio/multimodal-integration-a2a-intent"
	ProtocolExtensionZH = "https://help.aliyun.com/zh/model-studio/multimodal-integration-a2a-protocol"
	ProtocolExtensionEN = "https://help.aliyun.com/en/model-studio/multimodal-integration-a2a-protocol"
)

// BuiltinExtensions returns the extension URIs the platform always supports.
func BuiltinExtensions() []string {
	return []string{IntentExtensionZH, IntentExtensionEN, ProtocolExtensionZH, ProtocolExtensionEN}
}

const textPlain = "text/plain"

// newValidator builds the struct validator: JSON names in namespaces, plus the maxbytes tag.
func newValidator() *validator.Validate {
	v := validator.New()
	v.RegisterTagNameFunc(jsonName)
	err := v.RegisterValidation("maxbytes", func(fl validator.FieldLevel) bool {
		n, err := strconv.Atoi(fl.Param())
		if err != nil || fl.Field().Kind() != reflect.String {
			return false
		}
		return len(fl.Field().String()) <= n
	})
	if err != nil {
		// Only a bad tag name gets here; it is a constant.
		panic("cardcheck: register maxbytes: " + err.Error())
	}
	return v
}

// DefaultMaxBytes is the largest card the platform accepts (1 MiB): a larger one is too_long.
const DefaultMaxBytes = 1 << 20

// Options configure a Checker.
type Options struct {
	// AllowInsecureHTTP lets the card's endpoint URLs be http:// (A2AC_ALLOW_INSECURE_HTTP).
	AllowInsecureHTTP bool
	// SupportedExtensions are extension URIs supported besides the platform's built-ins
	// (A2AC_SUPPORTED_EXTENSIONS).
	SupportedExtensions []string
	// VoiceExtension is the URI of the platform's voice extension (A2AC_VOICE_EXTENSION), always
	// supported; "" is connector.VoiceExtensionURI.
	VoiceExtension string
	// MaxBytes is the largest card accepted (default DefaultMaxBytes); a larger one is too_long.
	MaxBytes int64
}

// Checker validates agent cards against the platform subset. It is safe for concurrent use.
type Checker struct {
	allowInsecure bool
	supported     map[string]bool
	maxBytes      int64
	validator     *validator.Validate
}

// New returns a Checker with o's settings, defaults filled in.
func New(o Options) *Checker {
	k := &Checker{
		allowInsecure: o.AllowInsecureHTTP,
		supported:     map[string]bool{},
		maxBytes:      o.MaxBytes,
		validator:     newValidator(),
	}
	if k.maxBytes <= 0 {
		k.maxBytes = DefaultMaxBytes
	}
	for _, u := range BuiltinExtensions() {
		k.supported[u] = true
	}
	if o.VoiceExtension == "" {
		o.VoiceExtension = connector.VoiceExtensionURI
	}
	k.supported[o.VoiceExtension] = true
	for _, u := range o.SupportedExtensions {
		if u = strings.TrimSpace(u); u != "" {
			k.supported[u] = true
		}
	}
	return k
}

// Check parses raw as an agent card and checks it against the platform subset
// (docs/architecture.md §3). It never fails: input that is not JSON is reported as a problem at
// the empty path with code invalid_json, and every other finding is a problem too, all of them at
// once.
func (k *Checker) Check(raw []byte) Report {
	return k.CheckAt(raw, "")
}

// CheckAt is Check for a card served at cardURL ("" when not known). The card's URL matters in
// one place: a gRPC interface whose url is a bare "host:port" (as a2a-go's samples and CLI write
// it) or "grpc://host:port" says nothing of TLS, and is called in the scheme the card was served
// with: TLS when the card came over https, plaintext only when it came over http, which only an
// operator who allows plain http permits. Without cardURL such an interface is not called.
func (k *Checker) CheckAt(raw []byte, cardURL string) Report {
	c := newCollector()
	var rep Report
	k.validate(raw, cardScheme(cardURL), c, &rep)
	rep.Problems = c.problems()
	rep.Valid = !connector.HasErrors(rep.Problems)
	return rep
}

func (k *Checker) validate(raw []byte, scheme string, c *collector, rep *Report) {
	// Windows tools write a byte-order mark; JSON forbids it, but nothing is lost by skipping it.
	raw = bytes.TrimPrefix(raw, []byte("\xef\xbb\xbf"))
	if int64(len(raw)) > k.maxBytes {
		c.errorf("", CodeTooLong, "The card is %d bytes; the platform accepts cards of at most %d bytes. Remove what the platform does not need, such as long descriptions or many examples.", len(raw), k.maxBytes)
	}
	if !utf8.Valid(raw) {
		c.errorf("", CodeInvalidJSON, "The card is not valid UTF-8 text; serve it as UTF-8 encoded JSON.")
		return
	}
	tree, err := parseJSON(raw)
	if err != nil {
		c.errorf("", CodeInvalidJSON, "The card is not valid JSON (%v); serve the agent card as a JSON object.", err)
		return
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err == nil {
		rep.Card = compact.Bytes()
	}
	obj, ok := tree.(map[string]any)
	if !ok {
		c.invalidType("", "a JSON object", tree)
		return
	}

	// The generations differ in where the agent is and in the shape of security; the rest of the
	// card, and every platform rule, is the same.
	var doc cardDoc
	decodeTree(obj, reflect.ValueOf(&doc).Elem(), "", c)
	k.structRules(&doc, c)
	gen := cardGeneration(obj)

	p := &rep.Profile
	p.Name = doc.Name
	p.Description = doc.Description
	p.Version = doc.Version
	if doc.Capabilities != nil {
		p.Streaming = doc.Capabilities.Streaming
	}

	if gen == gen1 {
		k.interfacesV1(obj, scheme, p, c)
	} else {
		k.interfacesV0(obj, scheme, p, c)
	}
	checkModes("defaultInputModes", "", doc.DefaultInputModes, c)
	checkModes("defaultOutputModes", "", doc.DefaultOutputModes, c)
	p.Skills = checkSkills(doc.Skills, gen, c)
	checkSecurity(obj, gen, doc.Skills, p, c)
	p.ExtendedCard = offersExtendedCard(obj)
	checkLegacyAuthentication(obj, gen, c)
	k.checkExtensions(obj, &doc, p, c)
}

// cardGeneration tells the card's shape: A2A 1.0 cards moved url and protocolVersion into
// supportedInterfaces[]. A card with both a top-level url and supportedInterfaces is the 0.3
// face of an SDK that speaks both generations, and is read as a 0.x card that also lists its
// interfaces.
func cardGeneration(obj map[string]any) generation {
	if obj["url"] == nil && obj["supportedInterfaces"] != nil {
		return gen1
	}
	return gen0
}

// interfacesV1 reads an A2A 1.0 card's supportedInterfaces and chooses among them.
func (k *Checker) interfacesV1(obj map[string]any, scheme string, p *connector.CardProfile, c *collector) {
	var doc v1Doc
	decodeTree(obj, reflect.ValueOf(&doc).Elem(), "", c)
	k.structRules(&doc, c)
	blankInterfaceFields(doc.SupportedInterfaces, c)
	k.chooseInterface(supportedOffers(doc.SupportedInterfaces, scheme), nil, true, p, c)
}

// interfacesV0 reads an A2A 0.2/0.3 card's url, preferredTransport and additionalInterfaces (and
// the supportedInterfaces a dual-version SDK adds) and chooses among them.
func (k *Checker) interfacesV0(obj map[string]any, scheme string, p *connector.CardProfile, c *collector) {
	var doc v0Doc
	decodeTree(obj, reflect.ValueOf(&doc).Elem(), "", c)
	k.structRules(&doc, c)
	v0URLForms(&doc, c)
	blankInterfaceFields(doc.SupportedInterfaces, c)
	checkProtocolVersion(doc.ProtocolVersion, c)
	offers := supportedOffers(doc.SupportedInterfaces, scheme)
	var top *offer
	if o, ok := v0Endpoint(&doc, scheme); ok {
		top = &o
	}
	if !k.chooseInterface(offers, top, false, p, c) {
		v0NoEndpoint(&doc, offers, c)
		// Shown beside the problems, as before: what the card states.
		p.ProtocolVersion = doc.ProtocolVersion
		return
	}
	if top != nil && p.Fallback == nil && p.EndpointURL == top.url && p.EndpointBinding == top.bindingName() {
		// No interface of the other generation: the card's next one in another binding is the
		// fallback, as in a 1.0 card.
		if o, ok := v0Alternative(&doc, *top, scheme); ok {
			if code, _ := k.urlProblem(o.url); code == "" {
				p.Fallback = o.iface()
			}
		}
	}
}

// parseJSON decodes exactly one JSON value, keeping numbers as written.
func parseJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("unexpected data after the top-level value")
	}
	return tree, nil
}

// structRules runs the validator tags on one of the typed views and turns their findings into
// problems.
func (k *Checker) structRules(doc any, c *collector) {
	err := k.validator.Struct(doc)
	var fes validator.ValidationErrors
	if !errors.As(err, &fes) {
		if err != nil {
			c.errorf("", CodeInvalid, "The card could not be checked: %v.", err)
		}
		return
	}
	for _, fe := range fes {
		path := fe.Namespace()
		if _, rest, ok := strings.Cut(path, "."); ok {
			path = rest
		}
		if c.covered(path) {
			continue
		}
		fieldProblem(fe, path, c)
	}
}

// fieldProblem translates one validator finding.
func fieldProblem(fe validator.FieldError, path string, c *collector) {
	switch fe.Tag() {
	case "required":
		c.errorf(path, CodeRequired, "%s is required%s.", path, requiredHint(path))
	case "min":
		c.errorf(path, CodeMinItems, "%s must list at least %s item(s)%s.", path, fe.Param(), requiredHint(path))
	case "max":
		c.errorf(path, CodeTooLong, "%s has %d items; the platform accepts at most %s.", path, reflect.ValueOf(fe.Value()).Len(), fe.Param())
	case "maxbytes":
		s, _ := fe.Value().(string)
		c.errorf(path, CodeTooLong, "%s is %d bytes long; the platform accepts at most %s bytes.", path, len(s), fe.Param())
	case "url":
		c.errorf(path, CodeInvalidURL, "%s must be an absolute URL such as https://agent.example.com/a2a.", path)
	default:
		c.errorf(path, CodeInvalid, "%s is not valid (%s).", path, fe.Tag())
	}
}

// requiredHint tells the tenant what to put in a missing field.
func requiredHint(path string) string {
	switch lastSegment(path) {
	case "name":
		if path == "name" {
			return ": give the agent the name tenants and users will see"
		}
		return ": give the skill a short human-readable name"
	case "description":
		if path == "description" {
			return ": say in a sentence what the agent does"
		}
		return ": say what the skill does; the dialog engine matches user intents against it"
	case "id":
		return ": give the skill an id that is unique within the card"
	case "version":
		return `: set the agent's own version, such as "1.0.0"`
	case "uri":
		return ": set the URI that identifies the extension"
	case "protocolBinding":
		return `: name the interface's transport; the platform calls "JSONRPC"`
	}
	if strings.HasPrefix(path, "supportedInterfaces[") {
		switch lastSegment(path) {
		case "url":
			return ": set the absolute https URL of this interface"
		case "protocolVersion":
			return `: set the A2A version spoken there, such as "1.0" or "0.3"`
		}
	}
	switch path {
	case "url":
		return ": set it to the absolute https URL of the agent's JSON-RPC endpoint (A2A 1.0 cards list supportedInterfaces instead)"
	case "supportedInterfaces":
		return `: list the agent's JSON-RPC endpoint, e.g. {"url": "https://agent.example.com/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}`
	case "protocolVersion":
		return `: set it to the A2A version the agent speaks, such as "0.2.5"`
	case "capabilities":
		return `: add an object such as {"streaming": true}`
	case "defaultInputModes", "defaultOutputModes":
		return `: add ["text/plain"]`
	case "skills":
		return ": describe at least one skill with id, name and description"
	}
	return ""
}

// checkProtocolVersion judges a 0.x card's own protocolVersion.
func checkProtocolVersion(v string, c *collector) {
	switch generationOf(v) {
	case gen0:
		return
	case gen1:
		c.warnf("protocolVersion", CodeUnsupportedProtocolVersion,
			"protocolVersion is %q, but the card has the A2A 0.x shape (a top-level url; A2A 1.0 cards list their endpoints in supportedInterfaces). The platform calls url with A2A 1.0 as stated; if the agent speaks 0.3, set protocolVersion to \"0.3.0\".", v)
	default:
		if v == "" {
			return
		}
		c.warnf("protocolVersion", CodeUnsupportedProtocolVersion,
			"protocolVersion is %q; the platform speaks A2A 1.x and 0.2.x/0.3.x and calls this agent with 0.x JSON-RPC, so calls may fail.", v)
	}
}

// isTextPlain matches text/plain, also with parameters ("text/plain; charset=utf-8") and in any
// case, and the bare "text" the A2A SDKs' own samples and quickstarts declare (a2a-go v2
// helloworld, @a2a-js/sdk sample-agent). Wildcards (text/*, */*) do not count: the platform guide
// lists text/plain explicitly.
func isTextPlain(mode string) bool {
	mt, _, err := mime.ParseMediaType(mode)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(mode))
	}
	return mt == textPlain || mt == "text"
}

// checkModes checks one list of media types: it must contain text/plain (error), anything else
// is ignored (warning). skill names the skill (quoted id or its path) for a skill's override.
func checkModes(path, skill string, modes []string, c *collector) {
	if modes == nil || c.covered(path) {
		return
	}
	var other []string
	found := false
	for _, m := range modes {
		if isTextPlain(m) {
			found = true
		} else {
			other = append(other, m)
		}
	}
	switch {
	case !found && skill != "":
		c.errorf(path, CodeUnsupportedMode, "Skill %s overrides %s with %s, which lacks \"text/plain\"; the platform exchanges text only. Add \"text/plain\" or remove %s so the card's defaults apply.", skill, lastSegment(path), quoteList(modes), lastSegment(path))
	case !found:
		c.errorf(path, CodeUnsupportedMode, "%s is %s; the platform exchanges text only, so it must include \"text/plain\".", path, quoteList(modes))
	case len(other) > 0:
		c.warnf(path, CodeUnsupportedMode, "%s also lists %s; the platform sends and reads only \"text/plain\" and ignores the others.", path, quoteList(other))
	}
}

// unsetIfEmpty maps an empty list to nil: in a protobuf-defined card there is no difference.
func unsetIfEmpty(list []string) []string {
	if len(list) == 0 {
		return nil
	}
	return list
}

func lastSegment(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// checkSkills applies the per-skill rules the tags cannot express and returns the profile skills.
// In an A2A 1.0 card an empty inputModes/outputModes list is unset (the card is a protobuf
// message; SDK card handlers serve [] for "use the defaults"); in a 0.x card it is a list that
// lacks text/plain.
func checkSkills(skills []skillDoc, gen generation, c *collector) []connector.Skill {
	out := make([]connector.Skill, 0, len(skills))
	first := map[string]int{}
	for i, s := range skills {
		base := indexPath("skills", i)
		label := base
		if s.ID != "" {
			label = strconv.Quote(s.ID)
		}
		if s.ID != "" {
			if j, dup := first[s.ID]; dup {
				c.errorf(memberPath(base, "id"), CodeDuplicate, "Skill id %q is already used by skills[%d]; every skill needs its own id.", s.ID, j)
			} else {
				first[s.ID] = i
			}
		}
		if len(s.Tags) == 0 && !c.covered(base) && !c.covered(memberPath(base, "tags")) {
			c.warnf(memberPath(base, "tags"), CodeRecommended, "Skill %s has no tags; add a few keywords so the dialog engine can match user intents to it.", label)
		}
		inModes, outModes := s.InputModes, s.OutputModes
		if gen == gen1 {
			inModes, outModes = unsetIfEmpty(inModes), unsetIfEmpty(outModes)
		}
		checkModes(memberPath(base, "inputModes"), label, inModes, c)
		checkModes(memberPath(base, "outputModes"), label, outModes, c)
		out = append(out, connector.Skill{
			ID:          s.ID,
			Name:        s.Name,
			Description: s.Description,
			Tags:        s.Tags,
			Examples:    s.Examples,
		})
	}
	return out
}

// checkLegacyAuthentication explains the A2A 0.1 authentication field. It is an error when it is
// the only thing that says how to authenticate (the agent probably needs credentials the platform
// cannot tell how to send), a warning when the 0.2 form is there too (then it is ignored).
func checkLegacyAuthentication(obj map[string]any, gen generation, c *collector) {
	auth, ok := obj["authentication"]
	if !ok || auth == nil {
		return
	}
	how := `declare it the A2A 0.2 way instead: "securitySchemes": {"apiKey": {"type": "apiKey", "in": "header", "name": "X-API-KEY"}}, "security": [{"apiKey": []}], or leave both out if the agent needs no credentials`
	if gen == gen1 {
		how = `declare it the A2A 1.0 way instead: "securitySchemes": {"apiKey": {"apiKeySecurityScheme": {"location": "header", "name": "X-API-KEY"}}}, "securityRequirements": [{"schemes": {"apiKey": {"list": []}}}], or leave both out if the agent needs no credentials`
	}
	if hasSecurity(obj) || !declaresSchemes(auth) {
		c.warnf("authentication", CodeLegacyAuthentication, "authentication is the A2A 0.1 way to declare credentials and the platform ignores it; %s.", how)
		return
	}
	c.errorf("authentication", CodeLegacyAuthentication, "authentication is the A2A 0.1 way to declare credentials, which the platform does not read, so it cannot tell how to authenticate; %s.", how)
}

// declaresSchemes reports whether a 0.1 authentication object names at least one scheme.
func declaresSchemes(auth any) bool {
	m, ok := auth.(map[string]any)
	if !ok {
		return true
	}
	switch s := m["schemes"].(type) {
	case string:
		return strings.TrimSpace(s) != ""
	case []any:
		return len(s) > 0
	}
	return false
}

func hasSecurity(obj map[string]any) bool {
	return obj["security"] != nil || obj["securitySchemes"] != nil || obj["securityRequirements"] != nil
}

// checkExtensions lists the supported extensions the card declares, rejects unsupported required
// ones, and reads the intent extension's per-skill input schemas.
func (k *Checker) checkExtensions(obj map[string]any, doc *cardDoc, p *connector.CardProfile, c *collector) {
	if doc.Capabilities == nil {
		return
	}
	intent := false
	schemas := map[string]json.RawMessage{}
	for i, ext := range doc.Capabilities.Extensions {
		path := indexPath("capabilities.extensions", i)
		uri := strings.TrimSpace(ext.URI)
		if uri == "" {
			continue
		}
		if !k.supported[uri] {
			if ext.Required {
				c.errorf(path, CodeRequiredExtensionUnsupported,
					"The agent requires extension %s, which the platform does not support, so the agent would reject the platform's calls. Mark it \"required\": false or remove it.", uri)
			}
			continue
		}
		if !containsString(p.Extensions, uri) {
			p.Extensions = append(p.Extensions, uri)
		}
		if uri == IntentExtensionZH || uri == IntentExtensionEN {
			intent = true
			intentParams(ext.Params, memberPath(path, "params"), doc.Skills, schemas, c)
		}
	}
	if !intent {
		return
	}
	// The intent extension's guide puts schemas in params.skills[]; an inputSchema on the skill
	// object itself (as some agents write it) is used when params has none for that skill.
	rawSkills, _ := obj["skills"].([]any)
	for i := range p.Skills {
		if s, ok := schemas[p.Skills[i].ID]; ok {
			p.Skills[i].InputSchema = s
			continue
		}
		if i >= len(rawSkills) {
			continue
		}
		so, _ := rawSkills[i].(map[string]any)
		if v, ok := so["inputSchema"]; ok && v != nil {
			path := memberPath(indexPath("skills", i), "inputSchema")
			if _, isObj := v.(map[string]any); !isObj {
				c.invalidType(path, "an object (a JSON Schema like an MCP tool's inputSchema)", v)
				continue
			}
			p.Skills[i].InputSchema = mustMarshal(v)
		}
	}
}

// intentParams reads params.skills[] = [{id, inputSchema}] of the intent extension.
func intentParams(params map[string]any, path string, skills []skillDoc, out map[string]json.RawMessage, c *collector) {
	v, ok := params["skills"]
	if !ok || v == nil {
		return
	}
	path = memberPath(path, "skills")
	entries, ok := v.([]any)
	if !ok {
		c.invalidType(path, "an array of {\"id\", \"inputSchema\"} objects", v)
		return
	}
	known := map[string]bool{}
	for _, s := range skills {
		known[s.ID] = true
	}
	for j, e := range entries {
		ep := indexPath(path, j)
		eo, ok := e.(map[string]any)
		if !ok {
			c.invalidType(ep, "an object with id and inputSchema", e)
			continue
		}
		id, ok := eo["id"].(string)
		if !ok {
			if eo["id"] == nil {
				c.errorf(memberPath(ep, "id"), CodeRequired, "%s is required: name the skill (its id) this input schema belongs to.", memberPath(ep, "id"))
			} else {
				c.invalidType(memberPath(ep, "id"), "a string", eo["id"])
			}
			continue
		}
		if !known[id] {
			c.warnf(memberPath(ep, "id"), CodeUnknownSkill, "The intent extension lists an input schema for skill %q, but the card has no skill with that id; the schema is ignored.", id)
			continue
		}
		schema := eo["inputSchema"]
		if schema == nil {
			c.warnf(memberPath(ep, "inputSchema"), CodeRequired, "The intent extension entry for skill %q has no inputSchema, so the dialog engine cannot fill its parameters.", id)
			continue
		}
		if _, isObj := schema.(map[string]any); !isObj {
			c.invalidType(memberPath(ep, "inputSchema"), "an object (a JSON Schema like an MCP tool's inputSchema)", schema)
			continue
		}
		if _, dup := out[id]; dup {
			c.warnf(memberPath(ep, "id"), CodeDuplicate, "The intent extension lists skill %q twice; the first entry is used.", id)
			continue
		}
		out[id] = mustMarshal(schema)
	}
}

// mustMarshal re-encodes a value that encoding/json itself decoded; that cannot fail.
func mustMarshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("cardcheck: re-encode decoded JSON: %v", err))
	}
	return b
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// offersExtendedCard reports whether the card says an authenticated extended card is there:
// A2A 1.0 capabilities.extendedAgentCard, A2A 0.3 supportsAuthenticatedExtendedCard.
func offersExtendedCard(obj map[string]any) bool {
	if b, _ := obj["supportsAuthenticatedExtendedCard"].(bool); b {
		return true
	}
	caps, _ := obj["capabilities"].(map[string]any)
	b, _ := caps["extendedAgentCard"].(bool)
	return b
}
