package cardcheck

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	connector "github.com/a2a-connector/a2a-connector"
)

// generation is the A2A wire generation a card, or one of its interfaces, speaks.
type generation int

const (
	genUnknown generation = iota
	// gen0 is A2A 0.2.x/0.3.x: message/send, message/stream, kind-tagged JSON.
	gen0
	// gen1 is A2A 1.x: SendMessage, SendStreamingMessage, wrapper objects.
	gen1
)

var (
	// supportedProtocolVersion matches the 0.x versions the platform speaks.
	supportedProtocolVersion = regexp.MustCompile(`^0\.[23](\.[0-9A-Za-z.+-]*)?$`)
	v1ProtocolVersion        = regexp.MustCompile(`^1(\.[0-9A-Za-z.+-]*)?$`)
)

// generationOf classifies a protocolVersion as the card states it.
func generationOf(version string) generation {
	v := strings.TrimSpace(version)
	switch {
	case v1ProtocolVersion.MatchString(v):
		return gen1
	case supportedProtocolVersion.MatchString(v):
		return gen0
	}
	return genUnknown
}

// offer is one endpoint the card offers, where it was found, and what it speaks.
type offer struct {
	path    string // JSON path of the entry: "supportedInterfaces[1]", "url", "additionalInterfaces[0]"
	urlPath string // JSON path of its url
	url     string
	// written is the url as the card wrote it, when the connector calls another (a gRPC
	// address without a scheme: grpcURL); "" otherwise.
	written string
	binding string // JSONRPC, GRPC, HTTP+JSON (trimmed, as written)
	version string // as written, trimmed
	tenant  string
	gen     generation
}

func (o offer) jsonrpc() bool { return strings.EqualFold(o.binding, "JSONRPC") }

// httpJSON reports an HTTP+JSON (REST) interface; 0.3 cards spell it "REST" or "HTTP+JSON".
func (o offer) httpJSON() bool {
	return strings.EqualFold(o.binding, "HTTP+JSON") || strings.EqualFold(o.binding, "REST")
}

func (o offer) grpc() bool { return strings.EqualFold(o.binding, "GRPC") }

// spoken reports whether the connector calls this interface: JSON-RPC, HTTP+JSON (each
// generation's own form of it) and gRPC, in 0.2/0.3 or 1.x.
func (o offer) spoken() bool {
	switch {
	case o.gen == genUnknown || o.url == "":
		return false
	case o.jsonrpc(), o.httpJSON():
		return true
	case o.grpc():
		// gRPC (1.0's A2AService, or 0.3's) as a URL with a scheme (https: TLS; http: plaintext
		// where allowed); an address without one has been given the card's (grpcURL) when the
		// card's URL is known, and is not called otherwise.
		return hasHTTPScheme(o.url)
	}
	return false
}

// cardScheme is the scheme a card was served with ("https" or "http"), "" when unknown.
func cardScheme(cardURL string) string {
	u, err := url.Parse(cardURL)
	if err != nil {
		return ""
	}
	if s := strings.ToLower(u.Scheme); s == "https" || s == "http" {
		return s
	}
	return ""
}

// grpcURL is the URL the connector calls for a gRPC interface whose url has no http(s) scheme:
// "grpcs://host:port" is https; a bare "host:port" or "grpc://host:port" (which say nothing of
// TLS; a2a-go's samples and CLI write the first) takes scheme, the card's. ok is false when raw
// is none of these, or scheme is unknown.
func grpcURL(raw, scheme string) (string, bool) {
	addr := raw
	lower := strings.ToLower(raw)
	switch {
	case strings.HasPrefix(lower, "grpcs://"):
		addr, scheme = raw[len("grpcs://"):], "https"
	case strings.HasPrefix(lower, "grpc://"):
		addr = raw[len("grpc://"):]
	}
	addr = strings.TrimSuffix(addr, "/")
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || scheme == "" || strings.ContainsAny(addr, "/?#@") {
		return "", false
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", false
	}
	return scheme + "://" + addr, true
}

// withGRPCURL gives a gRPC offer without an http(s) scheme the URL the connector calls
// (grpcURL), keeping what the card wrote for the message that says so.
func (o offer) withGRPCURL(scheme string) offer {
	if !o.grpc() || o.url == "" || hasHTTPScheme(o.url) {
		return o
	}
	if u, ok := grpcURL(o.url, scheme); ok {
		o.written, o.url = o.url, u
	}
	return o
}

// v0URLForms reports the urls of a 0.x card that are neither an absolute URL nor, on a gRPC
// interface, a gRPC address (a bare "host:port", grpc:// or grpcs://, as a2a-go v0.3's gRPC
// sample and @a2a-js/sdk 0.3's write it: grpcURL). Whether the platform calls a url, and in
// which scheme, is decided where an interface is chosen.
func v0URLForms(doc *v0Doc, c *collector) {
	check := func(path, raw, transport string) {
		if raw == "" || c.covered(path) || absoluteURL(raw) {
			return
		}
		if strings.EqualFold(strings.TrimSpace(transport), "GRPC") {
			if _, ok := grpcURL(strings.TrimSpace(raw), "https"); ok {
				return
			}
			c.errorf(path, CodeInvalidURL, "%s must be an absolute URL such as https://agent.example.com:443, or a gRPC address such as agent.example.com:443.", path)
			return
		}
		c.errorf(path, CodeInvalidURL, "%s must be an absolute URL such as https://agent.example.com/a2a.", path)
	}
	check("url", doc.URL, doc.PreferredTransport)
	for i, in := range doc.AdditionalInterfaces {
		check(memberPath(indexPath("additionalInterfaces", i), "url"), in.URL, in.Transport)
	}
}

// absoluteURL is what the validator's url rule accepts: a URL with a scheme and a host (or an
// opaque part: "localhost:9000" parses as scheme "localhost").
func absoluteURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Scheme != "" && (u.Host != "" || u.Opaque != "" || u.Fragment != "")
}

func hasHTTPScheme(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (strings.EqualFold(u.Scheme, "https") || strings.EqualFold(u.Scheme, "http")) && u.Host != ""
}

// bindingName is the binding as the profile keeps it: "HTTP+JSON", "GRPC", or "" for JSON-RPC
// (what every profile stored before bindings were a choice says).
func (o offer) bindingName() string {
	switch {
	case o.httpJSON():
		return "HTTP+JSON"
	case o.grpc():
		return "GRPC"
	}
	return ""
}

func (o offer) iface() *connector.Interface {
	return &connector.Interface{URL: o.url, ProtocolVersion: o.version, Tenant: o.tenant, Binding: o.bindingName()}
}

// describe names an offer for a message: `GRPC 1.0 (supportedInterfaces[0])`.
func (o offer) describe() string {
	b := o.binding
	if b == "" {
		b = "an interface without protocolBinding"
	}
	if o.version != "" {
		b += " " + o.version
	}
	return fmt.Sprintf("%s (%s)", b, o.path)
}

// blankInterfaceFields reports entries whose url, protocolBinding or protocolVersion is only
// spaces: the field rules count them as present, but an entry without them offers nothing.
func blankInterfaceFields(list []interfaceV1Doc, c *collector) {
	for i, in := range list {
		p := indexPath("supportedInterfaces", i)
		for _, f := range []struct{ name, v string }{{"url", in.URL}, {"protocolBinding", in.ProtocolBinding}, {"protocolVersion", in.ProtocolVersion}} {
			fp := memberPath(p, f.name)
			if f.v != "" && strings.TrimSpace(f.v) == "" && !c.covered(fp) {
				c.errorf(fp, CodeRequired, "%s is required%s.", fp, requiredHint(fp))
			}
		}
	}
}

// supportedOffers turns supportedInterfaces entries into offers. Entries that are incomplete
// (already reported by the field rules) are kept, so the message about what the card offers
// names them too; empty strings mean unset, as SDKs serve their defaults.
func supportedOffers(list []interfaceV1Doc, scheme string) []offer {
	out := make([]offer, 0, len(list))
	for i, in := range list {
		p := indexPath("supportedInterfaces", i)
		v := strings.TrimSpace(in.ProtocolVersion)
		out = append(out, offer{
			path:    p,
			urlPath: memberPath(p, "url"),
			url:     strings.TrimSpace(in.URL),
			binding: strings.TrimSpace(in.ProtocolBinding),
			version: v,
			tenant:  strings.TrimSpace(in.Tenant),
			gen:     generationOf(v),
		}.withGRPCURL(scheme))
	}
	return out
}

// v0Endpoint is the endpoint a 0.x card names at its top level (A2A 0.3 transport selection
// restricted to what the connector speaks): url when preferredTransport is absent, JSONRPC,
// HTTP+JSON or GRPC, else the first additionalInterfaces entry with one of those transports. ok
// is false when there is none.
func v0Endpoint(doc *v0Doc, scheme string) (o offer, ok bool) {
	o = offer{binding: "JSONRPC", version: strings.TrimSpace(doc.ProtocolVersion)}
	// A 0.x-shaped card stating 1.0 still gets the wire it states; anything else unknown is
	// spoken to as 0.x, as before 1.0 existed (with a warning from checkProtocolVersion).
	o.gen = gen0
	if generationOf(o.version) == gen1 {
		o.gen = gen1
	}
	pt := strings.TrimSpace(doc.PreferredTransport)
	if pt == "" || strings.EqualFold(pt, "JSONRPC") {
		if doc.URL == "" {
			return o, false
		}
		o.path, o.urlPath, o.url = "url", "url", doc.URL
		return o, true
	}
	if strings.EqualFold(pt, "GRPC") || (v0HTTPJSON(pt) && doc.URL != "") {
		o.binding = strings.ToUpper(pt)
		o.path, o.urlPath, o.url = "url", "url", doc.URL
		if o = o.withGRPCURL(scheme); o.spoken() {
			return o, true
		}
	}
	for i, in := range doc.AdditionalInterfaces {
		tr := strings.TrimSpace(in.Transport)
		if in.URL == "" || !(strings.EqualFold(tr, "JSONRPC") || v0HTTPJSON(tr) || strings.EqualFold(tr, "GRPC")) {
			continue
		}
		o.binding = strings.ToUpper(tr)
		o.path = indexPath("additionalInterfaces", i)
		o.urlPath = memberPath(o.path, "url")
		o.url, o.written = in.URL, ""
		if o = o.withGRPCURL(scheme); o.spoken() {
			return o, true
		}
	}
	return o, false
}

// v0Alternative is the first additionalInterfaces entry of a 0.x card that the connector speaks
// in another binding than the chosen top-level endpoint: its fallback when the agent refuses
// that binding.
func v0Alternative(doc *v0Doc, chosen offer, scheme string) (offer, bool) {
	for i, in := range doc.AdditionalInterfaces {
		tr := strings.TrimSpace(in.Transport)
		o := offer{binding: strings.ToUpper(tr), version: chosen.version, gen: chosen.gen, url: strings.TrimSpace(in.URL),
			path: indexPath("additionalInterfaces", i)}.withGRPCURL(scheme)
		o.urlPath = memberPath(o.path, "url")
		if o.url == "" || o.bindingName() == chosen.bindingName() || !(o.jsonrpc() || o.httpJSON() || o.grpc()) || !o.spoken() {
			continue
		}
		return o, true
	}
	return offer{}, false
}

// v0HTTPJSON reports a 0.3 transport name of HTTP+JSON ("HTTP+JSON" in the spec, "REST" in
// some SDKs' cards).
func v0HTTPJSON(tr string) bool {
	return strings.EqualFold(tr, "HTTP+JSON") || strings.EqualFold(tr, "REST")
}

// choice is the interface the platform calls and the one of the other generation it may fall
// back to.
type choice struct {
	chosen   *offer
	fallback *offer
}

// choose picks the interface the platform calls (docs/architecture.md §3, step 4). A 1.0 card: the first
// supportedInterfaces entry the connector speaks, in the card's order, as the spec asks; the
// fallback is the next one it speaks in another generation or binding. A 0.x card (top is its
// own endpoint): a 1.x JSON-RPC supportedInterfaces entry that a dual-version SDK added, else
// the first 0.2/0.3 one, else top; the fallback is the first interface of the other generation.
func choose(offers []offer, top *offer, v1 bool) choice {
	var cands []offer
	for _, o := range offers {
		if o.spoken() {
			cands = append(cands, o)
		}
	}
	var ch choice
	if v1 {
		if len(cands) == 0 {
			return ch
		}
		ch.chosen = &cands[0]
		for i := 1; i < len(cands); i++ {
			if cands[i].gen != ch.chosen.gen || cands[i].bindingName() != ch.chosen.bindingName() {
				ch.fallback = &cands[i]
				break
			}
		}
		return ch
	}
	if top != nil {
		cands = append(cands, *top)
	}
	for _, want := range []generation{gen1, gen0} {
		for i := range cands {
			if cands[i].gen == want {
				ch.chosen = &cands[i]
				break
			}
		}
		if ch.chosen != nil {
			break
		}
	}
	if ch.chosen == nil {
		return ch
	}
	for i := range cands {
		if cands[i].gen != ch.chosen.gen {
			ch.fallback = &cands[i]
			break
		}
	}
	return ch
}

// chooseInterface fills the profile's endpoint from the card's offers and reports what keeps the
// platform from calling the agent. top is the 0.x card's own endpoint (nil for a 1.0 card, or
// when a 0.x card names none). It reports whether an interface was chosen.
func (k *Checker) chooseInterface(offers []offer, top *offer, v1 bool, p *connector.CardProfile, c *collector) bool {
	ch := choose(offers, top, v1)
	if ch.chosen == nil {
		k.noInterface(offers, v1, c)
		return false
	}
	for _, o := range offers {
		if o.jsonrpc() && o.gen == genUnknown && o.version != "" && !c.covered(o.path) {
			c.warnf(memberPath(o.path, "protocolVersion"), CodeUnsupportedProtocolVersion,
				"%s speaks A2A %q; the platform speaks 1.x and 0.2.x/0.3.x and does not call this interface.", o.path, o.version)
		}
	}
	o := ch.chosen
	k.checkURL(o.urlPath, o.url, c)
	if o.written != "" && !c.covered(o.urlPath) {
		c.warnf(o.urlPath, CodeRecommended, "%s is %q, a gRPC address without a scheme, which says nothing of TLS; the platform calls it as %s, in the scheme the card was served with. Write the URL with its scheme (https://… for TLS).", o.urlPath, o.written, o.url)
	}
	p.EndpointURL = o.url
	p.EndpointBinding = o.bindingName()
	p.ProtocolVersion = o.version
	p.EndpointTenant = o.tenant
	if fb := ch.fallback; fb != nil {
		if code, why := k.urlProblem(fb.url); code != "" {
			if !c.covered(fb.urlPath) {
				c.warnf(fb.urlPath, code, "%s %s The platform will not fall back to this A2A %s interface when the agent refuses A2A %s.", fb.urlPath, why, fb.version, o.version)
			}
			return true
		}
		p.Fallback = fb.iface()
	}
	return true
}

// noInterface reports a card that offers nothing the platform can call, naming what it offers.
func (k *Checker) noInterface(offers []offer, v1 bool, c *collector) {
	var all, jsonrpc []string
	for _, o := range offers {
		if o.url == "" || o.binding == "" || o.version == "" {
			// An incomplete entry was reported as required; what it offers is not known yet.
			return
		}
		all = append(all, o.describe())
		if o.jsonrpc() {
			jsonrpc = append(jsonrpc, o.describe())
		}
	}
	const how = `The platform calls agents in A2A 1.x or 0.2/0.3 over JSON-RPC, HTTP+JSON or gRPC (` + calledBindings + `); list such an interface in supportedInterfaces, e.g. {"url": "https://agent.example.com/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}.`
	switch {
	case len(jsonrpc) > 0:
		// JSON-RPC is there, in a version the platform does not speak.
		if !c.covered("supportedInterfaces") {
			c.errorf("supportedInterfaces", CodeUnsupportedProtocolVersion, "The agent offers JSON-RPC only as %s, in a version the platform does not speak. %s", strings.Join(jsonrpc, ", "), how)
		}
	case v1:
		if c.covered("supportedInterfaces") || len(offers) == 0 {
			return
		}
		c.errorf("supportedInterfaces", CodeUnsupportedTransport, "The agent offers %s, none of which the platform can call. %s", strings.Join(all, ", "), how)
	}
	// A 0.x card without an endpoint the platform calls is reported by v0NoEndpoint.
}

// calledBindings says, for the tenant, what a gRPC interface needs to be called (JSON-RPC and
// HTTP+JSON need only their URL).
const calledBindings = "gRPC at an http(s):// URL, or at a host:port called in the scheme the card was served with"

// v0NoEndpoint reports a 0.x card whose preferredTransport names no endpoint the platform calls
// and that lists no other interface it calls (the problem sits at preferredTransport).
func v0NoEndpoint(doc *v0Doc, offers []offer, c *collector) {
	pt := strings.TrimSpace(doc.PreferredTransport)
	if pt == "" || strings.EqualFold(pt, "JSONRPC") || c.covered("preferredTransport") {
		return // url is missing: the field rules said so
	}
	extra := ""
	if len(offers) > 0 {
		var all []string
		for _, o := range offers {
			all = append(all, o.describe())
		}
		extra = " supportedInterfaces lists " + strings.Join(all, ", ") + "."
	}
	c.errorf("preferredTransport", CodeUnsupportedTransport,
		"preferredTransport is %q, and neither url nor additionalInterfaces names an interface the platform can call; it calls agents over JSON-RPC, HTTP+JSON or gRPC (%s).%s List such an interface, e.g. {\"url\": \"https://agent.example.com/a2a\", \"transport\": \"JSONRPC\"}, in additionalInterfaces.", pt, calledBindings, extra)
}

// checkURL enforces an absolute https URL (http only when the operator allowed it). It is about
// where the platform will send tenant data, not about where the card came from.
func (k *Checker) checkURL(path, raw string, c *collector) {
	if raw == "" || c.covered(path) {
		return
	}
	if code, why := k.urlProblem(raw); code != "" {
		c.errorf(path, code, "%s %s", path, why)
	}
}

// urlProblem says what is wrong with an endpoint URL: a code and the rest of a sentence that
// starts with the URL's path; "" when nothing is.
func (k *Checker) urlProblem(raw string) (code, why string) {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return CodeInvalidURL, "must be an absolute URL such as https://agent.example.com/a2a."
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if !k.allowInsecure {
			return CodeInsecureURL, "uses plain http; the platform sends user messages and credentials only over https. Serve the agent over https and put the https URL in the card."
		}
	default:
		return CodeInvalidURL, fmt.Sprintf("uses the scheme %q; the platform calls agents over https only.", u.Scheme)
	}
	return "", ""
}
