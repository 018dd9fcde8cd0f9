package invoke

import (
	"net/http"
	"strconv"
	"testing"

	connector "github.com/a2a-connector/a2a-connector"
)

// The signer cache answers only for the sealed value an entry was made from, and stays bounded.
func TestSignersKeyedBySealedValueAndBounded(t *testing.T) {
	t.Parallel()
	var s signers
	mark := func(v string) func(*http.Request, []byte) error {
		return func(r *http.Request, _ []byte) error { r.Header.Set("X-Mark", v); return nil }
	}
	a := &connector.Sealed{Ciphertext: []byte("ct-1"), KeyID: "k1"}
	s.put("agent-1", a, mark("1"))
	for name, other := range map[string]*connector.Sealed{
		"new ciphertext": {Ciphertext: []byte("ct-2"), KeyID: "k1"},
		"new key id":     {Ciphertext: []byte("ct-1"), KeyID: "k2"},
	} {
		if s.get("agent-1", other) != nil {
			t.Errorf("%s: the old key's signer was returned", name)
		}
	}
	if s.get("agent-2", a) != nil {
		t.Error("another agent got agent-1's signer")
	}
	a.Ciphertext[0] = 'X' // the caller's bytes change: the entry kept its own copy
	if s.get("agent-1", &connector.Sealed{Ciphertext: []byte("ct-1"), KeyID: "k1"}) == nil {
		t.Error("the signer of an unchanged key was not kept")
	}
	for i := range maxSigners + 10 {
		s.put("agent-"+strconv.Itoa(i), &connector.Sealed{Ciphertext: []byte("ct"), KeyID: "k"}, mark("x"))
	}
	if n := len(s.m); n != maxSigners {
		t.Errorf("%d signers kept, want at most %d", n, maxSigners)
	}
}
