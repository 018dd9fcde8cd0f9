package console

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
)

// tokenPrefix makes tenant tokens recognisable to secret scanners.
const tokenPrefix = "a2ac_"

// newToken returns a fresh tenant token (32 random bytes) and the SHA-256 the store keeps.
func newToken() (token string, hash []byte, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", nil, fmt.Errorf("token: %w", err)
	}
	token = tokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	h := sha256.Sum256([]byte(token))
	return token, h[:], nil
}

type tenantCreated struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Token string `json:"token"`
}

func (s *Server) createTenant(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Name string `json:"name"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	in.Name = strings.TrimSpace(in.Name)
	if err := ruleTenantName.check("name", in.Name); err != nil {
		return err
	}
	t, err := s.store.CreateTenant(r.Context(), in.Name)
	if err != nil {
		return fmt.Errorf("create tenant: %w", err)
	}
	token, hash, err := newToken()
	if err != nil {
		return err
	}
	if err := s.store.AddTenantToken(r.Context(), t.ID, hash); err != nil {
		return fmt.Errorf("tenant %s: add token: %w", t.ID, err)
	}
	return writeJSON(w, http.StatusCreated, tenantCreated{ID: t.ID, Name: t.Name, Token: token})
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "tenantId")
	if err != nil {
		return err
	}
	token, hash, err := newToken()
	if err != nil {
		return err
	}
	if err := s.store.AddTenantToken(r.Context(), id, hash); err != nil {
		return fmt.Errorf("tenant %s: add token: %w", id, err)
	}
	return writeJSON(w, http.StatusCreated, map[string]string{"token": token})
}
