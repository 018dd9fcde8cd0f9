package cardcheck

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	connector "github.com/a2a-connector/a2a-connector"
)

// scheme is one securitySchemes entry as far as the platform cares, whichever way it was written.
type scheme struct {
	name string // the key in securitySchemes; "" for the short form's implicit scheme
	typ  string // apiKey, http, oauth2, openIdConnect, mutualTLS, ...
	in   string // apiKey only: header, query, cookie
	key  string // apiKey only: the header/query/cookie name
	http string // http only: bearer, basic, ...
	// flows: oauth2 only, the flows the scheme offers (clientCredentials, authorizationCode,
	// deviceCode, implicit, password) and each one's token URL ("" when it names none).
	flows map[string]string
	// oidcURL: openIdConnect only, the discovery URL.
	oidcURL string
	// keyPath is the JSON path of the apiKey's name, for the warning about a custom header.
	keyPath string
	// broken: the definition lacks what it needs (already reported); alternatives using it are
	// not judged again, so one mistake yields one problem.
	broken bool
}

// headerAPIKey reports whether the scheme is an API key in a header.
func (s *scheme) headerAPIKey() bool {
	return s != nil && strings.EqualFold(s.typ, "apiKey") && strings.EqualFold(s.in, "header") && s.key != ""
}

// credentialKind is the credential a registration must hold to satisfy the scheme without a
// user present, or "" when none can:
//   - apiKey: an API key in a header;
//   - bearerToken: HTTP bearer;
//   - googleServiceAccount: an oauth2 scheme whose token or authorization URL is Google's
//     (oauth2.googleapis.com, accounts.google.com, www.googleapis.com), or an openIdConnect
//     scheme whose discovery URL is accounts.google.com's. Google's platforms take access
//     tokens of a service account for these; no other card states it differently.
//   - oauth2: an oauth2 scheme offering the client-credentials flow.
//   - mtls: mutual TLS (0.3 {"type": "mutualTLS"}, 1.0 mtlsSecurityScheme): a client
//     certificate the tenant registers.
//
// Everything else (authorization code, device code, implicit, password, OIDC elsewhere,
// HTTP basic, API keys in a query or cookie) needs a user or a credential the platform does not
// hold.
func (s *scheme) credentialKind() string {
	switch {
	case s == nil || s.broken:
		return ""
	case s.headerAPIKey():
		return connector.CredentialKindAPIKey
	case strings.EqualFold(s.typ, "http") && strings.EqualFold(s.http, "bearer"):
		return connector.CredentialKindBearerToken
	case strings.EqualFold(s.typ, "mutualTLS"):
		return connector.CredentialKindMTLS
	case strings.EqualFold(s.typ, "openIdConnect") && googleURL(s.oidcURL):
		return connector.CredentialKindGoogleServiceAccount
	case strings.EqualFold(s.typ, "oauth2"):
		for _, u := range s.flows {
			if googleURL(u) {
				return connector.CredentialKindGoogleServiceAccount
			}
		}
		if _, ok := s.flows["clientCredentials"]; ok {
			return connector.CredentialKindOAuth2
		}
	}
	return ""
}

// googleURL reports whether u is on one of Google's OAuth hosts.
func googleURL(u string) bool {
	pu, err := url.Parse(u)
	if err != nil {
		return false
	}
	switch strings.ToLower(pu.Hostname()) {
	case "oauth2.googleapis.com", "accounts.google.com", "www.googleapis.com":
		return true
	}
	return false
}

// readFlows reads an oauth2 scheme's flows in either form: {"clientCredentials": {...}, ...}
// (A2A 0.x and 1.0 JSON) or {"flow": {"$case": "clientCredentials", "value": {...}}}
// (@a2a-js/sdk 1.x cards as its TypeScript types stringify). Malformed flows are left out: the
// scheme then offers nothing the platform can use, which the requirement reports.
func readFlows(so map[string]any) map[string]string {
	fo, _ := so["flows"].(map[string]any)
	out := map[string]string{}
	add := func(name string, body any) {
		bo, _ := body.(map[string]any)
		tok, _ := bo["tokenUrl"].(string)
		if tok == "" {
			tok, _ = bo["authorizationUrl"].(string)
		}
		out[name] = tok
	}
	for name, body := range fo {
		if name == "flow" {
			if inner, ok := body.(map[string]any); ok {
				if c, ok := inner["$case"].(string); ok {
					add(c, inner["value"])
				}
			}
			continue
		}
		if body != nil {
			add(name, body)
		}
	}
	return out
}

// describe names the scheme for a message: `oauth2 ("oauth")`, `apiKey in query ("k")`.
func (s *scheme) describe() string {
	var what string
	switch {
	case strings.EqualFold(s.typ, "apiKey") && s.in == "":
		what = "apiKey without \"in\""
	case strings.EqualFold(s.typ, "apiKey"):
		what = "apiKey in " + s.in
	case strings.EqualFold(s.typ, "http") && s.http != "":
		what = "http " + strings.ToLower(s.http)
	case strings.EqualFold(s.typ, "oauth2") && len(s.flows) > 0:
		what = "oauth2 with the " + strings.Join(sortedKeys(s.flows), ", ") + " flow"
	case strings.EqualFold(s.typ, "oauth2"):
		what = "oauth2 without flows"
	case strings.EqualFold(s.typ, "openIdConnect"):
		what = "openIdConnect (a user's sign-in)"
	case s.typ == "":
		what = "an unnamed scheme"
	default:
		what = s.typ
	}
	if s.name != "" && s.name != s.typ {
		what += fmt.Sprintf(" (%q)", s.name)
	}
	return what
}

type altStatus int

const (
	altOK          altStatus = iota // every requirement is a header apiKey (or there are none)
	altUndefined                    // blocked only by undefined or broken scheme definitions
	altUnsupported                  // needs something the platform cannot send
)

// alternative is one element of a security list: schemes that must all be satisfied (AND).
type alternative struct {
	schemes []*scheme
	status  altStatus
	missing []string // what blocks it, for the message
	kind    string   // the credential kind it takes; "" for none needed (altOK only)
	scopes  []string // the scopes it names (OAuth2)
}

// v1SchemeKinds maps the A2A 1.0 wrapper members of a security scheme to the 0.x type names the
// rules speak.
var v1SchemeKinds = map[string]string{
	"apiKeySecurityScheme":        "apiKey",
	"httpAuthSecurityScheme":      "http",
	"oauth2SecurityScheme":        "oauth2",
	"openIdConnectSecurityScheme": "openIdConnect",
	"mtlsSecurityScheme":          "mutualTLS",
}

// parseSchemes reads securitySchemes; malformed entries are reported and left out. Each entry is
// read in the form it is written in, whatever the card's generation (SDKs that speak both write
// both): A2A 0.x {"type": "apiKey", "in", "name"}; A2A 1.0 {"apiKeySecurityScheme": {"location",
// "name"}} and its siblings; and {"scheme": {"$case": "apiKeySecurityScheme", "value": {...}}},
// which @a2a-js/sdk 1.x card handlers serve (its TypeScript card type, stringified as it is).
func parseSchemes(obj map[string]any, gen generation, c *collector) map[string]*scheme {
	out := map[string]*scheme{}
	raw, ok := obj["securitySchemes"]
	if !ok || raw == nil {
		return out
	}
	m, ok := raw.(map[string]any)
	if !ok {
		c.invalidType("securitySchemes", "an object mapping scheme names to scheme objects", raw)
		return out
	}
	for _, n := range sortedKeys(m) {
		path := memberPath("securitySchemes", n)
		so, ok := m[n].(map[string]any)
		if !ok {
			c.invalidType(path, "an object", m[n])
			continue
		}
		if s := parseScheme(n, so, path, gen, c); s != nil {
			out[n] = s
		}
	}
	return out
}

// parseScheme reads one securitySchemes entry; nil when it is not an object where one is needed.
func parseScheme(name string, so map[string]any, path string, gen generation, c *collector) *scheme {
	if _, ok := so["type"]; ok {
		return parseSchemeV0(name, so, path, c)
	}
	var wrappers []string
	for _, k := range sortedKeys(so) {
		if _, known := v1SchemeKinds[k]; known || strings.HasSuffix(k, "SecurityScheme") {
			wrappers = append(wrappers, k)
		}
	}
	switch {
	case len(wrappers) == 1:
		return parseSchemeV1(name, wrappers[0], so[wrappers[0]], memberPath(path, wrappers[0]), c)
	case len(wrappers) > 1:
		c.errorf(path, CodeInvalid, "%s holds %s; a security scheme is exactly one of them.", path, quoteList(wrappers))
		return &scheme{name: name, broken: true}
	}
	if inner, ok := so["scheme"].(map[string]any); ok {
		if kind, ok := inner["$case"].(string); ok {
			return parseSchemeV1(name, kind, inner["value"], memberPath(memberPath(path, "scheme"), "value"), c)
		}
	}
	if gen == gen1 {
		c.errorf(path, CodeRequired, `%s does not say what kind of scheme it is: it needs one of apiKeySecurityScheme, httpAuthSecurityScheme, oauth2SecurityScheme, openIdConnectSecurityScheme or mtlsSecurityScheme; for the platform use {"apiKeySecurityScheme": {"location": "header", "name": "X-API-KEY"}}.`, path)
		return &scheme{name: name, broken: true}
	}
	return parseSchemeV0(name, so, path, c)
}

// parseSchemeV0 reads an A2A 0.x scheme: {"type", "in", "name", "scheme"}.
func parseSchemeV0(name string, so map[string]any, path string, c *collector) *scheme {
	s := &scheme{name: name}
	s.typ = schemeString(so, path, "type", true, c)
	if strings.EqualFold(s.typ, "apiKey") {
		s.in = schemeString(so, path, "in", true, c)
		s.key = schemeString(so, path, "name", true, c)
		s.keyPath = memberPath(path, "name")
	}
	if strings.EqualFold(s.typ, "http") {
		s.http = schemeString(so, path, "scheme", false, c)
	}
	s.readOAuth(so)
	s.broken = s.typ == "" || (strings.EqualFold(s.typ, "apiKey") && (s.in == "" || s.key == ""))
	return s
}

// parseSchemeV1 reads the body of an A2A 1.0 scheme of the given wrapper kind at path.
func parseSchemeV1(name, kind string, body any, path string, c *collector) *scheme {
	typ, known := v1SchemeKinds[kind]
	if !known {
		typ = strings.TrimSuffix(kind, "SecurityScheme")
	}
	s := &scheme{name: name, typ: typ}
	so, ok := body.(map[string]any)
	if !ok {
		if body == nil {
			// {"mtlsSecurityScheme": null} still says what it is; only apiKey needs members.
			so = map[string]any{}
		} else {
			c.invalidType(path, "an object", body)
			s.broken = true
			return s
		}
	}
	switch typ {
	case "apiKey":
		s.in = schemeString(so, path, "location", true, c)
		s.key = schemeString(so, path, "name", true, c)
		s.keyPath = memberPath(path, "name")
		s.broken = s.in == "" || s.key == ""
	case "http":
		s.http = schemeString(so, path, "scheme", false, c)
	}
	s.readOAuth(so)
	return s
}

// readOAuth reads what an oauth2 or openIdConnect scheme offers (same members in every form).
func (s *scheme) readOAuth(so map[string]any) {
	switch {
	case strings.EqualFold(s.typ, "oauth2"):
		s.flows = readFlows(so)
	case strings.EqualFold(s.typ, "openIdConnect"):
		s.oidcURL, _ = so["openIdConnectUrl"].(string)
	}
}

func schemeString(so map[string]any, parent, member string, required bool, c *collector) string {
	path := memberPath(parent, member)
	switch v := so[member].(type) {
	case string:
		if v == "" && required {
			c.errorf(path, CodeRequired, "%s is required%s.", path, schemeHint(member))
		}
		return v
	case nil:
		if required {
			c.errorf(path, CodeRequired, "%s is required%s.", path, schemeHint(member))
		}
	default:
		c.invalidType(path, "a string", v)
	}
	return ""
}

func schemeHint(member string) string {
	switch member {
	case "type":
		return `: for the platform use "apiKey"`
	case "in", "location":
		return `: for the platform use "header"`
	case "name":
		return `: for the platform use "X-API-KEY"`
	}
	return ""
}

// parseSecurity reads one security list at path. Elements are either the platform guide's short
// form (a string: "apiKey", or the name of a defined scheme) or A2A requirement objects
// ({"scheme": ["scope", ...]}, all members required together). An empty object is an
// alternative that needs nothing.
func parseSecurity(raw any, path string, schemes map[string]*scheme, c *collector) []alternative {
	if raw == nil {
		return nil
	}
	list, ok := raw.([]any)
	if !ok {
		c.invalidType(path, `an array, such as [{"apiKey": []}] or ["apiKey"]`, raw)
		return nil
	}
	alts := make([]alternative, 0, len(list))
	for i, el := range list {
		ep := indexPath(path, i)
		var alt alternative
		switch el := el.(type) {
		case string:
			if s, ok := schemes[el]; ok {
				alt.schemes = append(alt.schemes, s)
			} else if strings.EqualFold(el, "apiKey") {
				// The platform guide's short form: the platform's own header.
				alt.schemes = append(alt.schemes, &scheme{typ: "apiKey", in: "header", key: connector.APIKeyHeader})
			} else {
				alt.schemes = append(alt.schemes, &scheme{typ: el})
			}
		case map[string]any:
			names := make([]string, 0, len(el))
			for n := range el {
				names = append(names, n)
			}
			slices.Sort(names)
			for _, n := range names {
				rp := memberPath(ep, n)
				if scopes := el[n]; scopes != nil {
					if _, ok := scopes.([]any); !ok {
						c.invalidType(rp, "an array of scope strings (use [] for an API key)", scopes)
					}
				}
				s, ok := schemes[n]
				if !ok {
					c.errorf(rp, CodeUndefinedScheme, "%s requires the scheme %q, but securitySchemes does not define it. Define it, e.g. \"securitySchemes\": {%q: {\"type\": \"apiKey\", \"in\": \"header\", \"name\": \"X-API-KEY\"}}, or remove the reference.", ep, n, n)
					alt.missing = append(alt.missing, n)
					continue
				}
				alt.schemes = append(alt.schemes, s)
				alt.scopes = append(alt.scopes, scopeList(el[n])...)
			}
		default:
			c.invalidType(ep, `a security requirement object such as {"apiKey": []}`, el)
			continue
		}
		alts = append(alts, alt.judged())
	}
	return alts
}

// judged sets the alternative's status and credential kind from its schemes. One registration
// holds one credential, so an alternative whose schemes take two kinds cannot be met (several
// API key headers are one key).
func (alt alternative) judged() alternative {
	alt.status = altOK
	for _, s := range alt.schemes {
		if s.broken {
			alt.missing = append(alt.missing, s.name)
		}
	}
	if len(alt.missing) > 0 {
		alt.status = altUndefined
	}
	for _, s := range alt.schemes {
		if s.broken {
			continue
		}
		k := s.credentialKind()
		if k == "" || (alt.kind != "" && alt.kind != k) {
			alt.status = altUnsupported
			continue
		}
		alt.kind = k
	}
	return alt
}

// scopeList reads a requirement's scopes in any of the forms validScopes accepts.
func scopeList(v any) []string {
	if m, ok := v.(map[string]any); ok {
		v = m["list"]
	}
	l, _ := v.([]any)
	var out []string
	for _, x := range l {
		if s, ok := x.(string); ok && s != "" {
			out = append(out, s)
		}
	}
	return out
}

// parseRequirementsV1 reads an A2A 1.0 securityRequirements list at path: [{"schemes": {name:
// scopes}}], where SDKs write the scopes as {"list": [...]} (@a2a-js/sdk), a plain list or null
// (a2a-go), or {}. An element without "schemes" is read as a 0.x requirement ({name: scopes});
// an element naming no scheme is an alternative that needs nothing.
func parseRequirementsV1(raw any, path string, schemes map[string]*scheme, c *collector) []alternative {
	if raw == nil {
		return nil
	}
	list, ok := raw.([]any)
	if !ok {
		c.invalidType(path, `an array, such as [{"schemes": {"apiKey": {"list": []}}}]`, raw)
		return nil
	}
	alts := make([]alternative, 0, len(list))
	for i, el := range list {
		ep := indexPath(path, i)
		eo, ok := el.(map[string]any)
		if !ok {
			c.invalidType(ep, `a security requirement object such as {"schemes": {"apiKey": {"list": []}}}`, el)
			continue
		}
		names, base := eo, ep
		if v, has := eo["schemes"]; has {
			base = memberPath(ep, "schemes")
			switch v := v.(type) {
			case nil:
				names = nil
			case map[string]any:
				names = v
			default:
				c.invalidType(base, "an object mapping scheme names to scopes", v)
				continue
			}
		}
		var alt alternative
		for _, n := range sortedKeys(names) {
			rp := memberPath(base, n)
			if !validScopes(names[n]) {
				c.invalidType(rp, `scopes such as {"list": []} (use an empty list for an API key)`, names[n])
			}
			s, ok := schemes[n]
			if !ok {
				c.errorf(rp, CodeUndefinedScheme, "%s requires the scheme %q, but securitySchemes does not define it. Define it, e.g. \"securitySchemes\": {%q: {\"apiKeySecurityScheme\": {\"location\": \"header\", \"name\": \"X-API-KEY\"}}}, or remove the reference.", ep, n, n)
				alt.missing = append(alt.missing, n)
				continue
			}
			alt.schemes = append(alt.schemes, s)
			alt.scopes = append(alt.scopes, scopeList(names[n])...)
		}
		alts = append(alts, alt.judged())
	}
	return alts
}

// validScopes accepts the ways SDKs write a requirement's scopes: null, a list, or {"list": [...]}.
func validScopes(v any) bool {
	switch v := v.(type) {
	case nil, []any:
		return true
	case map[string]any:
		l, has := v["list"]
		if !has || l == nil {
			return len(v) == 0 || has
		}
		_, ok := l.([]any)
		return ok
	}
	return false
}

// securityVerdict is what one security list means for the platform.
type securityVerdict struct {
	acceptable  bool     // the platform can satisfy it
	keyRequired bool     // ...but only with a credential (kinds[0] is the preferred one)
	kinds       []string // the credential kinds of the acceptable alternatives, API key first
	headers     []string // header names of the usable apiKey schemes
	tokenURL    string   // the client-credentials token URL of the first oauth2 alternative
	scopes      []string // the scopes of the first oauth2 or Google alternative
	blockers    []string // why no alternative works (for the message)
}

func judge(alts []alternative) securityVerdict {
	if len(alts) == 0 {
		return securityVerdict{acceptable: true}
	}
	v := securityVerdict{keyRequired: true}
	undefinedOnly := false
	for _, a := range alts {
		switch a.status {
		case altOK:
			v.acceptable = true
			if len(a.schemes) == 0 {
				v.keyRequired = false
				continue
			}
			if !slices.Contains(v.kinds, a.kind) {
				v.kinds = append(v.kinds, a.kind)
			}
			v.noteAlternative(a)
		case altUndefined:
			undefinedOnly = true
		case altUnsupported:
			for _, s := range a.schemes {
				if !s.broken && s.credentialKind() == "" {
					v.blockers = append(v.blockers, s.describe())
				}
			}
			if len(v.blockers) == 0 {
				v.blockers = append(v.blockers, "two different credentials at once")
			}
		}
	}
	// An API key first: a card that takes a key or something else has always meant a key here.
	slices.SortStableFunc(v.kinds, func(a, b string) int {
		return boolRank(b == connector.CredentialKindAPIKey) - boolRank(a == connector.CredentialKindAPIKey)
	})
	if !v.acceptable {
		v.keyRequired = false
		if undefinedOnly {
			// The undefined_scheme errors already say what is wrong.
			v.blockers = nil
			v.acceptable = true
		}
	}
	return v
}

// noteAlternative keeps what calling through the acceptable alternative a needs.
func (v *securityVerdict) noteAlternative(a alternative) {
	for _, s := range a.schemes {
		switch a.kind {
		case connector.CredentialKindAPIKey:
			v.headers = append(v.headers, s.key)
		case connector.CredentialKindOAuth2, connector.CredentialKindGoogleServiceAccount:
			if v.tokenURL == "" {
				v.tokenURL = s.flows["clientCredentials"]
				v.scopes = a.scopes
			}
		}
	}
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// requirementLists are the two names of a card's (or skill's) security requirements: A2A 1.0's
// securityRequirements and A2A 0.x's security. A card normally has one; the 0.3 face of a
// dual-version SDK has both, saying the same.
const (
	requirementsV1 = "securityRequirements"
	requirementsV0 = "security"
)

// requirements picks the requirement list of an object (the card or a skill) at path and parses
// it in its own form. The card's own generation's list wins; an absent or empty one ([] is what
// SDKs serve for "none") gives way to the other.
func requirements(o map[string]any, path string, gen generation, schemes map[string]*scheme, c *collector) (string, []alternative) {
	order := []string{requirementsV0, requirementsV1}
	if gen == gen1 {
		order = []string{requirementsV1, requirementsV0}
	}
	pick := ""
	for _, n := range order {
		if v := o[n]; v != nil {
			if l, isList := v.([]any); isList && len(l) == 0 {
				continue
			}
			pick = n
			break
		}
	}
	if pick == "" {
		return memberPath(path, order[0]), nil
	}
	lp := memberPath(path, pick)
	if pick == requirementsV1 {
		return lp, parseRequirementsV1(o[pick], lp, schemes, c)
	}
	return lp, parseSecurity(o[pick], lp, schemes, c)
}

// unsupportedHelp is the end of an unsupported_security message: what the platform can send,
// in the card's own form.
func unsupportedHelp(v1 bool) string {
	fix := `"securitySchemes": {"apiKey": {"type": "apiKey", "in": "header", "name": "X-API-KEY"}} and {"apiKey": []} in security`
	if v1 {
		fix = `"securitySchemes": {"apiKey": {"apiKeySecurityScheme": {"location": "header", "name": "X-API-KEY"}}} and {"schemes": {"apiKey": {"list": []}}} in securityRequirements`
	}
	return "the platform calls agents without a user present, so it can send an API key in a header, an HTTP bearer token, " +
		"an OAuth 2.0 access token from the client-credentials flow (flows.clientCredentials with a tokenUrl), " +
		"or a Google service account's access token; authorization code, device code, implicit, password and OpenID Connect sign-in need a user. " +
		"Add an alternative the platform can meet, e.g. " + fix
}

// checkSecurity applies the security rules of the platform subset to the card and to each
// skill's own requirements (A2A 0.3 and 1.0), and fills the profile's credential fields.
func checkSecurity(obj map[string]any, gen generation, skills []skillDoc, p *connector.CardProfile, c *collector) {
	schemes := parseSchemes(obj, gen, c)
	cardPath, cardAlts := requirements(obj, "", gen, schemes, c)
	card := judge(cardAlts)
	if !card.acceptable {
		c.errorf(cardPath, CodeUnsupportedSecurity, "The agent requires %s; %s.",
			strings.Join(dedupe(card.blockers), " or "), unsupportedHelp(cardPath == requirementsV1))
	}
	headers := card.headers
	required := card.keyRequired
	kinds := card.kinds
	tokenURL, scopes := card.tokenURL, card.scopes

	rawSkills, _ := obj["skills"].([]any)
	for i := range rawSkills {
		so, _ := rawSkills[i].(map[string]any)
		if so == nil {
			continue
		}
		path, alts := requirements(so, indexPath("skills", i), gen, schemes, c)
		if alts == nil {
			continue
		}
		sv := judge(alts)
		label := indexPath("skills", i)
		if i < len(skills) && skills[i].ID != "" {
			label = fmt.Sprintf("%q", skills[i].ID)
		}
		if !sv.acceptable {
			c.warnf(path, CodeUnsupportedSecurity, "Skill %s requires %s; the platform calls without a user present and cannot meet it, so the agent may reject the platform's calls for this skill.", label, strings.Join(dedupe(sv.blockers), " or "))
			continue
		}
		if len(kinds) > 0 && len(sv.kinds) > 0 && !slices.Contains(sv.kinds, kinds[0]) {
			c.warnf(path, CodeUnsupportedSecurity, "Skill %s takes %s, not the %s the card asks for; the platform sends one credential, so the agent may reject its calls for this skill.", label, strings.Join(sv.kinds, " or "), kinds[0])
			continue
		}
		headers = append(headers, sv.headers...)
		required = required || sv.keyRequired
		for _, k := range sv.kinds {
			if !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
		if tokenURL == "" {
			tokenURL, scopes = sv.tokenURL, sv.scopes
		}
	}

	p.CredentialKind = connector.CredentialKindNone
	if len(kinds) > 0 {
		p.CredentialKind, p.CredentialKinds = kinds[0], kinds
	}
	p.CredentialRequired = required && len(kinds) > 0
	p.APIKeyRequired = p.CredentialRequired && p.CredentialKind == connector.CredentialKindAPIKey
	p.OAuth2TokenURL, p.OAuth2Scopes = tokenURL, scopes
	if len(headers) == 0 {
		return
	}
	p.APIKeyHeaders = []string{connector.APIKeyHeader}
	for _, h := range headers {
		if slices.ContainsFunc(p.APIKeyHeaders, func(x string) bool { return strings.EqualFold(x, h) }) {
			continue
		}
		p.APIKeyHeaders = append(p.APIKeyHeaders, h)
	}
	for _, n := range sortedKeys(schemes) {
		s := schemes[n]
		if s.headerAPIKey() && !strings.EqualFold(s.key, connector.APIKeyHeader) && slices.Contains(p.APIKeyHeaders, s.key) {
			c.warnf(s.keyPath, CodeAPIKeyHeader,
				"The scheme %q expects the API key in the header %q; the platform sends it under both X-API-KEY and %s.", n, s.key, s.key)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func dedupe(in []string) []string {
	var out []string
	for _, s := range in {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
