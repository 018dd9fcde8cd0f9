package secret

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"testing"

	connector "github.com/a2a-connector/a2a-connector"
)

func newKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSealOpen(t *testing.T) {
	t.Parallel()
	k1, k2 := newKey(t), newKey(t)
	old, err := New(k1)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := old.Seal("agent-1", []byte("sk-live-123"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed.Ciphertext, []byte("sk-live-123")) {
		t.Fatal("ciphertext contains the plaintext")
	}

	t.Run("round_trip", func(t *testing.T) {
		got, err := old.Open("agent-1", sealed)
		if err != nil || string(got) != "sk-live-123" {
			t.Fatalf("Open = %q, %v", got, err)
		}
	})
	t.Run("other_agent_cannot_open", func(t *testing.T) {
		if _, err := old.Open("agent-2", sealed); !errors.Is(err, ErrDecrypt) {
			t.Fatalf("err = %v, want ErrDecrypt", err)
		}
	})
	t.Run("tampered_is_refused", func(t *testing.T) {
		bad := connector.Sealed{Ciphertext: bytes.Clone(sealed.Ciphertext), KeyID: sealed.KeyID}
		bad.Ciphertext[len(bad.Ciphertext)-1] ^= 1
		if _, err := old.Open("agent-1", bad); !errors.Is(err, ErrDecrypt) {
			t.Fatalf("err = %v, want ErrDecrypt", err)
		}
	})
	t.Run("rotated_box_reads_old_and_seals_new", func(t *testing.T) {
		rotated, err := New(k2, k1)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := rotated.Open("agent-1", sealed); err != nil || string(got) != "sk-live-123" {
			t.Fatalf("Open old = %q, %v", got, err)
		}
		fresh, _ := rotated.Seal("agent-1", []byte("x"))
		if fresh.KeyID != KeyID(k2) || fresh.KeyID == sealed.KeyID {
			t.Fatalf("new seal uses key %s, want %s", fresh.KeyID, KeyID(k2))
		}
		if _, err := old.Open("agent-1", fresh); !errors.Is(err, ErrDecrypt) {
			t.Fatalf("old box opened a value of an unknown key: %v", err)
		}
	})
}

func TestParseKey(t *testing.T) {
	t.Parallel()
	k := newKey(t)
	for _, s := range []string{base64.StdEncoding.EncodeToString(k), base64.RawURLEncoding.EncodeToString(k), " " + base64.StdEncoding.EncodeToString(k) + "\n"} {
		got, err := ParseKey(s)
		if err != nil || !bytes.Equal(got, k) {
			t.Errorf("ParseKey(%q) = %x, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "not base64!!", base64.StdEncoding.EncodeToString(k[:16])} {
		if _, err := ParseKey(s); err == nil {
			t.Errorf("ParseKey(%q) accepted", s)
		}
	}
}
