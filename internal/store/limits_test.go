package store_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

func TestTenantLimits_are_set_read_back_listed_and_reset(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := store.New(testDB.Pool)
	limited, other := testDB.NewTenant(t), testDB.NewTenant(t)

	if err := s.SetTenantLimits(ctx, limited, connector.TenantLimits{MaxTurns: 40, MaxTurnsPerAgent: 10}); err != nil {
		t.Fatalf("SetTenantLimits: %v", err)
	}
	if err := s.SetTenantLimits(ctx, other, connector.TenantLimits{MaxTurnsPerAgent: 3}); err != nil {
		t.Fatalf("SetTenantLimits: %v", err)
	}
	all, err := s.AllTenantLimits(ctx)
	if err != nil {
		t.Fatalf("AllTenantLimits: %v", err)
	}
	want := map[string]connector.TenantLimits{
		limited: {MaxTurns: 40, MaxTurnsPerAgent: 10},
		other:   {MaxTurnsPerAgent: 3},
	}
	got := map[string]connector.TenantLimits{limited: all[limited], other: all[other]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("AllTenantLimits (-want +got):\n%s", diff)
	}
	ti, err := s.Tenant(ctx, limited)
	if err != nil {
		t.Fatalf("Tenant: %v", err)
	}
	if diff := cmp.Diff(want[limited], ti.Limits); diff != "" || ti.ID != limited {
		t.Errorf("Tenant %s limits (-want +got):\n%s", ti.ID, diff)
	}

	// Both null: the tenant is back on the defaults and no longer among the overrides.
	if err := s.SetTenantLimits(ctx, limited, connector.TenantLimits{}); err != nil {
		t.Fatal(err)
	}
	all, err = s.AllTenantLimits(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := all[limited]; ok {
		t.Errorf("reset tenant still overridden: %+v", l)
	}

	if err := s.SetTenantLimits(ctx, limited, connector.TenantLimits{MaxTurns: -1}); !errors.Is(err, connector.ErrInvalid) {
		t.Errorf("a cap of -1: %v, want ErrInvalid", err)
	}
	for _, id := range []string{"not-a-uuid", "00000000-0000-4000-8000-000000000000"} {
		if err := s.SetTenantLimits(ctx, id, connector.TenantLimits{}); !errors.Is(err, connector.ErrNotFound) {
			t.Errorf("SetTenantLimits(%s): %v, want ErrNotFound", id, err)
		}
		if _, err := s.Tenant(ctx, id); !errors.Is(err, connector.ErrNotFound) {
			t.Errorf("Tenant(%s): %v, want ErrNotFound", id, err)
		}
	}
}
