package cardfetch

import (
	"fmt"
	"slices"
	"strings"

	connector "github.com/a2a-connector/a2a-connector"
)

// scheme is one securitySchemes entry as far as the platform cares.
type scheme struct {
	name string // the key in securitySchemes; "" for the short form's implicit scheme
	typ  string // apiKey, http, oauth2, openIdConnect, mutualTLS, ...
	in   string // apiKey only: header, query, cookie
	key  string // apiKey only: the header/query/cookie name
	http string // http only: bearer, basic, ...
	// broken: the definition lacks what it needs (already reported); alternatives using it are
	// not judged again, so one mistake yields one problem.
	broken bool
}

// headerAPIKey reports whether the platform can satisfy the scheme: an API key in a header.
func (s *scheme) headerAPIKey() bool {
	return s != nil && strings.EqualFold(s.typ, "apiKey") && strings.EqualFold(s.in, "header") && s.key != ""
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
}

// parseSchemes reads securitySchemes; malformed entries are reported and left out.
func parseSchemes(obj map[string]any, c *collector) map[string]*scheme {
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
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		path := memberPath("securitySchemes", n)
		so, ok := m[n].(map[string]any)
		if !ok {
			c.invalidType(path, "an object", m[n])
			continue
		}
		s := &scheme{name: n}
		s.typ = schemeString(so, path, "type", true, c)
		if strings.EqualFold(s.typ, "apiKey") {
			s.in = schemeString(so, path, "in", true, c)
			s.key = schemeString(so, path, "name", true, c)
		}
		if strings.EqualFold(s.typ, "http") {
			s.http = schemeString(so, path, "scheme", false, c)
		}
		s.broken = s.typ == "" || (strings.EqualFold(s.typ, "apiKey") && (s.in == "" || s.key == ""))
		out[n] = s
	}
	return out
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
	case "in":
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
				alt.schemes = append(alt.schemes, &scheme{typ: "apiKey", in: "header", key: platformKeyHeader})
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
			}
		default:
			c.invalidType(ep, `a security requirement object such as {"apiKey": []}`, el)
			continue
		}
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
			if !s.broken && !s.headerAPIKey() {
				alt.status = altUnsupported
			}
		}
		alts = append(alts, alt)
	}
	return alts
}

// securityVerdict is what one security list means for the platform.
type securityVerdict struct {
	acceptable  bool     // the platform can satisfy it
	keyRequired bool     // ...but only with an API key
	headers     []string // header names of the usable apiKey schemes
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
			}
			for _, s := range a.schemes {
				v.headers = append(v.headers, s.key)
			}
		case altUndefined:
			undefinedOnly = true
		case altUnsupported:
			for _, s := range a.schemes {
				if !s.broken && !s.headerAPIKey() {
					v.blockers = append(v.blockers, s.describe())
				}
			}
		}
	}
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

// checkSecurity applies the security rules of the platform subset to the card and to each
// skill's own security list (A2A 0.3), and fills APIKeyRequired and APIKeyHeaders.
func checkSecurity(obj map[string]any, skills []skillDoc, p *connector.CardProfile, c *collector) {
	schemes := parseSchemes(obj, c)
	card := judge(parseSecurity(obj["security"], "security", schemes, c))
	if !card.acceptable {
		c.errorf("security", CodeUnsupportedSecurity,
			"The agent requires %s; the platform can only send an API key in the X-API-KEY header. Add an alternative the platform can meet: \"securitySchemes\": {\"apiKey\": {\"type\": \"apiKey\", \"in\": \"header\", \"name\": \"X-API-KEY\"}} and {\"apiKey\": []} in security.",
			strings.Join(dedupe(card.blockers), " or "))
	}
	headers := card.headers
	keyRequired := card.keyRequired

	rawSkills, _ := obj["skills"].([]any)
	for i := range rawSkills {
		so, _ := rawSkills[i].(map[string]any)
		if so == nil || so["security"] == nil {
			continue
		}
		path := memberPath(indexPath("skills", i), "security")
		sv := judge(parseSecurity(so["security"], path, schemes, c))
		label := indexPath("skills", i)
		if i < len(skills) && skills[i].ID != "" {
			label = fmt.Sprintf("%q", skills[i].ID)
		}
		if !sv.acceptable {
			c.warnf(path, CodeUnsupportedSecurity, "Skill %s requires %s; the platform can only send an API key in a header, so the agent may reject the platform's calls for this skill.", label, strings.Join(dedupe(sv.blockers), " or "))
			continue
		}
		headers = append(headers, sv.headers...)
		keyRequired = keyRequired || sv.keyRequired
	}

	p.APIKeyRequired = keyRequired
	if len(headers) == 0 {
		return
	}
	p.APIKeyHeaders = []string{platformKeyHeader}
	for _, h := range headers {
		if slices.ContainsFunc(p.APIKeyHeaders, func(x string) bool { return strings.EqualFold(x, h) }) {
			continue
		}
		p.APIKeyHeaders = append(p.APIKeyHeaders, h)
	}
	for _, n := range sortedKeys(schemes) {
		s := schemes[n]
		if s.headerAPIKey() && !strings.EqualFold(s.key, platformKeyHeader) && slices.Contains(p.APIKeyHeaders, s.key) {
			c.warnf(memberPath(memberPath("securitySchemes", n), "name"), CodeAPIKeyHeader,
				"The scheme %q expects the API key in the header %q; the platform sends it under both X-API-KEY and %s.", n, s.key, s.key)
		}
	}
}

func sortedKeys(m map[string]*scheme) []string {
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
