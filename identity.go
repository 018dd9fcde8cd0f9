package connector

import (
	"encoding/json"
	"time"
)

// SigningKey is one of the platform's caller-identity signing keys as stored: its key id, its
// public key as a JWK (JSON), its private key sealed (internal/secret), and when it stopped
// signing (zero while it signs).
type SigningKey struct {
	KID       string
	PublicJWK json.RawMessage
	Private   Sealed
	CreatedAt time.Time
	RetiredAt time.Time
}
