package store_test

import (
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

// tokenHash is the SHA-256 of a fresh random token.
func tokenHash() []byte {
	h := sha256.Sum256([]byte(uuid.NewString()))
	return h[:]
}

func TestCreateTenantWithToken_stores_both_or_neither(t *testing.T) {
	t.Parallel()
	s := store.New(testDB.Pool)
	name := "both " + uuid.NewString()
	h := tokenHash()
	tenant, tok, err := s.CreateTenantWithToken(t.Context(), name, h)
	if err != nil {
		t.Fatalf("CreateTenantWithToken: %v", err)
	}
	if tenant.Name != name || tok.TenantID != tenant.ID || tok.ID == "" || tok.CreatedAt.IsZero() {
		t.Errorf("CreateTenantWithToken = %+v, %+v", tenant, tok)
	}
	got, tokenID, err := s.TenantByTokenHash(t.Context(), h)
	if err != nil || got.ID != tenant.ID || tokenID != tok.ID {
		t.Errorf("TenantByTokenHash = %+v, %q, %v; want the new tenant and token", got, tokenID, err)
	}

	// The token insert fails (a hash Postgres refuses, then one already stored): the tenant
	// inserted before it in the same transaction must be gone too.
	for name, bad := range map[string][]byte{"invalid_hash": []byte("short"), "taken_hash": h} {
		t.Run(name, func(t *testing.T) {
			tenantName := "neither " + uuid.NewString()
			_, _, err := s.CreateTenantWithToken(t.Context(), tenantName, bad)
			if !errors.Is(err, connector.ErrInvalid) && !errors.Is(err, connector.ErrConflict) {
				t.Fatalf("error = %v; want ErrInvalid or ErrConflict", err)
			}
			if n := countRows(t, `select count(*) from tenants where name = $1`, tenantName); n != 0 {
				t.Errorf("tenants named %q = %d; want 0 (rolled back with the token)", tenantName, n)
			}
		})
	}
}

func TestTokens_list_revoke_and_last_use(t *testing.T) {
	t.Parallel()
	s := store.New(testDB.Pool)
	tenant, first, err := s.CreateTenantWithToken(t.Context(), "tokens", tokenHash())
	if err != nil {
		t.Fatal(err)
	}
	secondHash := tokenHash()
	second, err := s.AddTenantToken(t.Context(), tenant.ID, secondHash)
	if err != nil {
		t.Fatal(err)
	}

	list, err := s.ListTokens(t.Context(), tenant.ID)
	if err != nil {
		t.Fatalf("ListTokens: %v", err)
	}
	if len(list) != 2 || list[0].ID != first.ID || list[1].ID != second.ID || list[0].LastUsedAt != nil {
		t.Fatalf("ListTokens = %+v; want the two tokens, oldest first, unused", list)
	}

	lastUsed := func() *time.Time {
		t.Helper()
		var at *time.Time
		if err := testDB.Pool.QueryRow(t.Context(), `select last_used_at from tenant_tokens where id = $1`, second.ID).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	setLastUsed := func(ago string) time.Time {
		t.Helper()
		var at time.Time
		if err := testDB.Pool.QueryRow(t.Context(),
			`update tenant_tokens set last_used_at = now() - $2::interval where id = $1 returning last_used_at`,
			second.ID, ago).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	use := func() {
		t.Helper()
		if _, _, err := s.TenantByTokenHash(t.Context(), secondHash); err != nil {
			t.Fatalf("TenantByTokenHash: %v", err)
		}
	}

	use()
	if lastUsed() == nil {
		t.Fatal("last_used_at is null after a use")
	}
	// Fresh (under a minute old): a use writes nothing.
	fresh := setLastUsed("30 seconds")
	use()
	if got := lastUsed(); got == nil || !got.Equal(fresh) {
		t.Errorf("last_used_at after a use 30 s after the last = %v; want unchanged %v", got, fresh)
	}
	// Stale: the next use records itself.
	stale := setLastUsed("2 minutes")
	use()
	if got := lastUsed(); got == nil || !got.After(stale) {
		t.Errorf("last_used_at after a use 2 min after the last = %v; want after %v", got, stale)
	}
	list, err = s.ListTokens(t.Context(), tenant.ID)
	if err != nil || list[1].LastUsedAt == nil || list[0].LastUsedAt != nil {
		t.Errorf("ListTokens = %+v, %v; want the second token used, the first not", list, err)
	}

	// Revocation: another tenant cannot, the owner can, once, and the token fails at once.
	other := testDB.NewTenant(t)
	if err := s.DeleteToken(t.Context(), other, second.ID); !errors.Is(err, connector.ErrNotFound) {
		t.Errorf("DeleteToken by another tenant error = %v; want ErrNotFound", err)
	}
	if err := s.DeleteToken(t.Context(), tenant.ID, second.ID); err != nil {
		t.Fatalf("DeleteToken: %v", err)
	}
	if _, _, err := s.TenantByTokenHash(t.Context(), secondHash); !errors.Is(err, connector.ErrNotFound) {
		t.Errorf("TenantByTokenHash of a revoked token error = %v; want ErrNotFound", err)
	}
	for name, err := range map[string]error{
		"again":         s.DeleteToken(t.Context(), tenant.ID, second.ID),
		"malformed_id":  s.DeleteToken(t.Context(), tenant.ID, "tok"),
		"unknown_token": s.DeleteToken(t.Context(), tenant.ID, uuid.NewString()),
	} {
		if !errors.Is(err, connector.ErrNotFound) {
			t.Errorf("DeleteToken %s error = %v; want ErrNotFound", name, err)
		}
	}
	if list, err := s.ListTokens(t.Context(), tenant.ID); err != nil || len(list) != 1 || list[0].ID != first.ID {
		t.Errorf("ListTokens after revoking = %+v, %v; want the first token only", list, err)
	}
	if list, err := s.ListTokens(t.Context(), other); err != nil || len(list) != 0 {
		t.Errorf("ListTokens of a tenant without tokens = %+v, %v; want empty", list, err)
	}
	if _, err := s.ListTokens(t.Context(), uuid.NewString()); !errors.Is(err, connector.ErrNotFound) {
		t.Errorf("ListTokens of a missing tenant error = %v; want ErrNotFound", err)
	}
}

func TestDeleteTenant_cascades_to_everything_it_has(t *testing.T) {
	t.Parallel()
	s := store.New(testDB.Pool)
	h := tokenHash()
	doomed, _, err := s.CreateTenantWithToken(t.Context(), "doomed", h)
	if err != nil {
		t.Fatal(err)
	}
	kept := testDB.NewTenant(t)
	var agents []string
	for _, tenant := range []string{doomed.ID, kept} {
		a := mustCreate(t, s, newAgent(tenant, "https://cascade.example.com"))
		agents = append(agents, a.ID)
		if err := s.SaveTurn(t.Context(), connector.TurnRecord{TenantID: tenant, SessionID: "s", AgentID: a.ID,
			TurnID: "turn", StartedAt: time.Now(), SetHold: &connector.Hold{TaskID: "task", ContextID: "ctx",
				TurnID: "turn", ExpiresAt: time.Now().Add(10 * time.Minute)}}); err != nil {
			t.Fatalf("save hold: %v", err)
		}
		if _, err := testDB.Pool.Exec(t.Context(),
			`insert into session_contexts (tenant_id, session_id, agent_id, context_id) values ($1, 's', $2, 'ctx')`,
			tenant, a.ID); err != nil {
			t.Fatalf("insert context: %v", err)
		}
	}

	list, err := s.ListTenants(t.Context())
	if err != nil {
		t.Fatalf("ListTenants: %v", err)
	}
	var found bool
	for _, ti := range list {
		if ti.ID == doomed.ID {
			found = true
			if ti.Name != "doomed" || ti.Tokens != 1 || ti.Agents != 1 || ti.CreatedAt.IsZero() {
				t.Errorf("ListTenants entry = %+v; want name, 1 token, 1 agent, a creation time", ti)
			}
		}
	}
	if !found {
		t.Fatalf("ListTenants has no %s", doomed.ID)
	}

	if err := s.DeleteTenant(t.Context(), doomed.ID); err != nil {
		t.Fatalf("DeleteTenant: %v", err)
	}
	tables := []string{"tenant_tokens", "agents", "agent_revisions", "sessions", "session_contexts"}
	for _, table := range tables {
		if n := countRows(t, `select count(*) from `+table+` where tenant_id = $1`, doomed.ID); n != 0 {
			t.Errorf("%s rows of the deleted tenant = %d; want 0", table, n)
		}
		if n := countRows(t, `select count(*) from `+table+` where tenant_id = $1`, kept); table != "tenant_tokens" && n != 1 {
			t.Errorf("%s rows of the other tenant = %d; want 1", table, n)
		}
	}
	if _, _, err := s.TenantByTokenHash(t.Context(), h); !errors.Is(err, connector.ErrNotFound) {
		t.Errorf("TenantByTokenHash of the deleted tenant's token error = %v; want ErrNotFound", err)
	}
	if _, err := s.GetAgent(t.Context(), kept, agents[1]); err != nil {
		t.Errorf("the other tenant's agent: %v", err)
	}
	for name, err := range map[string]error{
		"again":     s.DeleteTenant(t.Context(), doomed.ID),
		"malformed": s.DeleteTenant(t.Context(), "doomed"),
	} {
		if !errors.Is(err, connector.ErrNotFound) {
			t.Errorf("DeleteTenant %s error = %v; want ErrNotFound", name, err)
		}
	}
}
