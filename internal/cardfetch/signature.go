package cardfetch

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/gowebpki/jcs"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/cardcheck"
)

// Problem codes of card signatures.
const (
	CodeSignatureInvalid      = "signature_invalid"
	CodeSignatureUnverifiable = "signature_unverifiable"
)

// maxJWKSBytes caps a signing key set; real ones are a few KB.
const maxJWKSBytes = 64 << 10

// signatureAlgs are the JWS algorithms a card signature may use (asymmetric only: a shared
// secret would need no jku).
var signatureAlgs = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// cardSignature is one entry of an A2A 1.0 card's signatures: a flattened JWS without its
// payload, which is the card itself.
type cardSignature struct {
	Protected string `json:"protected"`
	Signature string `json:"signature"`
}

type protectedHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Jku string `json:"jku"`
}

// verifySignatures checks the card's signatures (A2A 1.0 §8.4: JWS over the RFC 8785 canonical
// JSON of the card without "signatures"). The key is the one of the protected header's kid in
// the JWKS its jku names, fetched through the guarded client.
//
//   - no signatures: unsigned;
//   - one verifies: verified, with its kid;
//   - a key was found and its signature does not verify (and none verifies): invalid, an error
//     at signatures[i] that refuses the card;
//   - no key could be had (no jku, no such kid, a jku refused by the guard or failing):
//     unverifiable, a warning. Never a refusal: whoever could forge the signature could strip it.
//
// The payload is tried in the forms signers produce: the card as served, canonicalised; and
// that with empty values (and protobuf defaults) left out, which is what @a2a-js/sdk's
// canonicalizeAgentCard signs.
func (f *Fetcher) verifySignatures(ctx context.Context, raw []byte) (connector.CardSignature, []connector.Problem) {
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(raw, byteOrderMark)))
	dec.UseNumber()
	var card map[string]any
	if err := dec.Decode(&card); err != nil {
		return connector.CardSignature{Status: connector.SignatureUnsigned}, nil
	}
	rawSigs, _ := card["signatures"].([]any)
	if len(rawSigs) == 0 {
		return connector.CardSignature{Status: connector.SignatureUnsigned}, nil
	}
	delete(card, "signatures")
	payloads := canonicalPayloads(card)

	var (
		problems []connector.Problem
		invalid  *connector.CardSignature
		sought   string
	)
	for i, rs := range rawSigs {
		path := fmt.Sprintf("signatures[%d]", i)
		b, _ := json.Marshal(rs)
		var sig cardSignature
		var hdr protectedHeader
		if json.Unmarshal(b, &sig) != nil || sig.Protected == "" || sig.Signature == "" {
			problems = append(problems, warning(path, "The signature is not a JWS with protected and signature members; it was not checked."))
			continue
		}
		if hb, herr := base64.RawURLEncoding.DecodeString(sig.Protected); herr != nil || json.Unmarshal(hb, &hdr) != nil {
			problems = append(problems, warning(path, "The signature's protected header is not base64url-encoded JSON; it was not checked."))
			continue
		}
		if sought == "" {
			sought = hdr.Kid
		}
		key, why := f.signingKey(ctx, hdr)
		if key == nil {
			problems = append(problems, warning(path, "The signature could not be checked: "+why+"."))
			continue
		}
		compact := sig.Protected + ".." + sig.Signature
		for _, p := range payloads {
			jws, err := jose.ParseDetached(compact, p, signatureAlgs)
			if err != nil {
				continue
			}
			if _, err := jws.Verify(key); err == nil {
				return connector.CardSignature{Status: connector.SignatureVerified, KeyID: hdr.Kid}, nil
			}
		}
		if invalid == nil {
			invalid = &connector.CardSignature{Status: connector.SignatureInvalid, KeyID: hdr.Kid}
			problems = append(problems, connector.Problem{Path: path, Code: CodeSignatureInvalid, Severity: connector.SeverityError,
				Message: fmt.Sprintf("The signature by key %q does not verify: the card was changed after it was signed, or signed over other content. Sign the RFC 8785 canonical JSON of the card without its signatures member, or remove the signature.", hdr.Kid)})
		}
	}
	if invalid != nil {
		return *invalid, problems
	}
	return connector.CardSignature{Status: connector.SignatureUnverifiable, KeyID: sought}, problems
}

func warning(path, msg string) connector.Problem {
	return connector.Problem{Path: path, Code: CodeSignatureUnverifiable, Severity: connector.SeverityWarning, Message: msg}
}

// signingKey is the public key the header names, or nil and why not.
func (f *Fetcher) signingKey(ctx context.Context, hdr protectedHeader) (any, string) {
	switch {
	case hdr.Jku == "":
		return nil, "its protected header names no jku (JWKS URL) to find the key at"
	case hdr.Kid == "":
		return nil, "its protected header names no kid"
	}
	if _, err := CheckURL(hdr.Jku); err != nil {
		return nil, "its jku cannot be fetched: " + err.Error()
	}
	ctx, cancel := context.WithTimeout(ctx, min(f.timeout, 5*time.Second))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, hdr.Jku, nil)
	if err != nil {
		return nil, "its jku is not a URL"
	}
	req.Header.Set("Accept", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, "its jku could not be fetched (" + string(classify(ctx, err)) + ")"
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Sprintf("its jku answered HTTP %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil || len(body) > maxJWKSBytes {
		return nil, "its jku's key set could not be read whole"
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, "its jku does not serve a JWKS"
	}
	for _, k := range set.Key(hdr.Kid) {
		if k.Valid() && k.IsPublic() && (hdr.Alg == "" || k.Algorithm == "" || k.Algorithm == hdr.Alg) {
			return k.Key, ""
		}
	}
	return nil, fmt.Sprintf("its jku's key set has no key %q", hdr.Kid)
}

// canonicalPayloads are the RFC 8785 forms of card (signatures removed) that signers sign: as
// served; without empty values; and without protobuf defaults (false, 0) too, as @a2a-js/sdk
// normalises a card before canonicalising it.
func canonicalPayloads(card map[string]any) [][]byte {
	var out [][]byte
	add := func(v any) {
		if v == nil {
			v = map[string]any{}
		}
		b, err := json.Marshal(v)
		if err != nil {
			return
		}
		c, err := jcs.Transform(b)
		if err != nil || slices.ContainsFunc(out, func(x []byte) bool { return bytes.Equal(x, c) }) {
			return
		}
		out = append(out, c)
	}
	add(card)
	add(clean(card, false))
	add(clean(card, true))
	return out
}

// clean drops empty strings, nulls, empty arrays and objects (and, with defaults, false and 0),
// recursively, as the JS SDK's cleanEmpty after its protobuf round trip does; nil when nothing
// is left.
func clean(v any, defaults bool) any {
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		if v == "" {
			return nil
		}
	case bool:
		if defaults && !v {
			return nil
		}
	case json.Number:
		if defaults {
			if f, err := v.Float64(); err == nil && f == 0 {
				return nil
			}
		}
	case []any:
		var out []any
		for _, x := range v {
			if c := clean(x, defaults); c != nil {
				out = append(out, c)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			if c := clean(x, defaults); c != nil {
				out[k] = c
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	return v
}

// withSignatures verifies the card's signatures (when the card is JSON) and adds what was
// found to the report: the status in the profile, an invalid signature as an error (the card
// is then refused), an unverifiable one as a warning.
func (f *Fetcher) withSignatures(ctx context.Context, raw []byte, rep cardcheck.Report) cardcheck.Report {
	if rep.Card == nil {
		return rep
	}
	sig, problems := f.verifySignatures(ctx, raw)
	rep.Profile.CardSignature = sig
	if len(problems) == 0 {
		return rep
	}
	var errs, warns []connector.Problem
	for _, p := range slices.Concat(rep.Problems, problems) {
		if p.Severity == connector.SeverityError {
			errs = append(errs, p)
		} else {
			warns = append(warns, p)
		}
	}
	rep.Problems = append(errs, warns...)
	rep.Valid = len(errs) == 0
	return rep
}
