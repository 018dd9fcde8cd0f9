package invoke

import (
	"bytes"
	"sync"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/reqauth"
)

// maxSigners bounds the SigV4 signers an Invoker keeps: one per agent with an AWS key, far
// more than a replica's agents in use at once; past it an arbitrary one is dropped.
const maxSigners = 4096

// signers keeps the SigV4 signer of each agent's AWS key, so that a turn neither opens and
// reads the sealed key again nor derives the signing key again: the SDK's v4.Signer caches
// the key derived for a day, region and service, but only within one Signer. An entry is
// used only for the very sealed value it was made from: a key the tenant changed (a new
// ciphertext, or a new secret key id after a rotation) replaces it on the next turn.
//
// What it holds is what a turn holds while it runs, the opened key, for as long as the agent
// is called; the process keeps the secret key that opens it anyway.
type signers struct {
	mu sync.Mutex
	m  map[string]signerEntry // agent id
}

type signerEntry struct {
	ciphertext []byte
	keyID      string
	sign       reqauth.Func
}

// get returns the signer made for agentID's key sealed, or nil.
func (s *signers) get(agentID string, sealed *connector.Sealed) reqauth.Func {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[agentID]
	if !ok || e.keyID != sealed.KeyID || !bytes.Equal(e.ciphertext, sealed.Ciphertext) {
		return nil
	}
	return e.sign
}

// put keeps sign as the signer of agentID's key sealed, replacing any other.
func (s *signers) put(agentID string, sealed *connector.Sealed, sign reqauth.Func) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[string]signerEntry)
	}
	if _, ok := s.m[agentID]; !ok && len(s.m) >= maxSigners {
		for id := range s.m {
			delete(s.m, id)
			break
		}
	}
	s.m[agentID] = signerEntry{ciphertext: bytes.Clone(sealed.Ciphertext), keyID: sealed.KeyID, sign: sign}
}
