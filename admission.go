package connector

import (
	"fmt"
)

// Cap names a concurrent-turn cap (internal/admission keeps them).
type Cap string

// The three caps, checked in this order: the tenant's own cap first, so a tenant over it is told
// about its own limit even when the replica is full too.
const (
	CapTenant  Cap = "tenant"
	CapAgent   Cap = "agent"
	CapReplica Cap = "replica"
)

// RefusedError is a turn refused by a cap, at once, never queued. Its message names the cap, its
// value and its scope (a tenant's and an agent's caps are the deployment's, the replica's its
// own), and holds nothing else: edges may show it as is.
type RefusedError struct {
	Cap   Cap
	Limit int
}

func (e *RefusedError) Error() string {
	scope := "deployment"
	if e.Cap == CapReplica {
		scope = "replica"
	}
	return fmt.Sprintf("%s cap reached: at most %d concurrent turns per %s", e.Cap, e.Limit, scope)
}
