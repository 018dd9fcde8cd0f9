package console

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// jwksMaxAge is how long agents and caches may keep the JWKS. A rotation's new key signs at
// once, so a verifier that meets an unknown kid fetches the JWKS again (docs/api.md says so);
// a short max-age bounds the staleness for those that do not.
const jwksMaxAge = 60 * time.Second

var errNoIdentity = &apiError{status: http.StatusNotImplemented, code: "not_implemented", detail: "The caller's identity keys are not available on this server."}

// jwks serves the public keys of the caller's identity tokens (RFC 7517): the signing key and
// the retired keys whose tokens may still be valid, each with its kid.
func (s *Server) jwks(w http.ResponseWriter, r *http.Request) error {
	if s.identity == nil {
		return errNoIdentity
	}
	set, err := s.identity.JWKS(r.Context())
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "public, max-age="+strconv.Itoa(int(jwksMaxAge.Seconds())))
	w.Header().Set("Content-Type", "application/jwk-set+json")
	w.WriteHeader(http.StatusOK)
	return json.NewEncoder(w).Encode(set)
}

// rotateIdentityKey makes a new key sign the caller's identity tokens (operator only). The old
// key stays in the JWKS until its tokens have expired.
func (s *Server) rotateIdentityKey(w http.ResponseWriter, r *http.Request) error {
	if s.identity == nil {
		return errNoIdentity
	}
	kid, err := s.identity.Rotate(r.Context())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{
		"signingKeyId":             kid,
		"retiredKeysPublishedSecs": int(s.identity.Retention().Seconds()),
	})
}
