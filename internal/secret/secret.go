// Package secret seals tenant API keys with AES-256-GCM before they reach the store.
//
// The agent id is bound as associated data, so a ciphertext copied onto another agent's row does
// not decrypt. Every ciphertext carries the id of the key that sealed it; a Box can hold older
// keys for reading while new seals use the current one, which is how A2AC_SECRET_KEY is rotated.
// It never logs, and its errors never contain plaintext.
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	connector "github.com/a2a-connector/a2a-connector"
)

// KeySize is the length of an AES-256 key.
const KeySize = 32

// ErrDecrypt means a ciphertext could not be opened: wrong key, wrong agent, or tampered data.
var ErrDecrypt = errors.New("secret: cannot decrypt")

// Box encrypts with its current key and decrypts with any key it knows.
type Box struct {
	current string
	aeads   map[string]cipher.AEAD
}

// KeyID derives a stable, non-secret identifier for a key (first 8 bytes of its SHA-256).
func KeyID(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:8])
}

// ParseKey decodes a base64 (standard or URL, padded or not) 32-byte key, as found in
// A2AC_SECRET_KEY.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != KeySize {
				return nil, fmt.Errorf("key is %d bytes after base64 decoding, want %d", len(b), KeySize)
			}
			return b, nil
		}
	}
	return nil, errors.New("key is not valid base64")
}

// New returns a Box sealing with current and opening with current or any of previous.
func New(current []byte, previous ...[]byte) (*Box, error) {
	b := &Box{aeads: make(map[string]cipher.AEAD)}
	for i, k := range append([][]byte{current}, previous...) {
		if len(k) != KeySize {
			return nil, fmt.Errorf("secret key %d: %d bytes, want %d", i, len(k), KeySize)
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, fmt.Errorf("secret key %d: %w", i, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("secret key %d: %w", i, err)
		}
		id := KeyID(k)
		if i == 0 {
			b.current = id
		}
		b.aeads[id] = aead
	}
	return b, nil
}

// Seal encrypts plaintext for the agent with the given id.
func (b *Box) Seal(agentID string, plaintext []byte) (connector.Sealed, error) {
	aead := b.aeads[b.current]
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return connector.Sealed{}, fmt.Errorf("secret: nonce: %w", err)
	}
	return connector.Sealed{Ciphertext: aead.Seal(nonce, nonce, plaintext, []byte(agentID)), KeyID: b.current}, nil
}

// Open decrypts a value sealed for the agent with the given id.
func (b *Box) Open(agentID string, s connector.Sealed) ([]byte, error) {
	aead, ok := b.aeads[s.KeyID]
	if !ok {
		return nil, fmt.Errorf("%w: unknown key id %q", ErrDecrypt, s.KeyID)
	}
	if len(s.Ciphertext) < aead.NonceSize()+aead.Overhead() {
		return nil, fmt.Errorf("%w: ciphertext too short", ErrDecrypt)
	}
	nonce, ct := s.Ciphertext[:aead.NonceSize()], s.Ciphertext[aead.NonceSize():]
	pt, err := aead.Open(nil, nonce, ct, []byte(agentID))
	if err != nil {
		return nil, ErrDecrypt
	}
	return pt, nil
}
