package connector

import (
	"time"
)

// Tenant is a customer of the platform. Every agent, token and session hold belongs to one.
type Tenant struct {
	ID        string
	Name      string
	CreatedAt time.Time
}

// TenantLimits are the operator's overrides of a tenant's concurrent-turn caps in each
// connector process (internal/admission); 0 is the process's default.
type TenantLimits struct {
	MaxTurns         int // the tenant's turns in flight
	MaxTurnsPerAgent int // each of its agents' turns in flight
}
