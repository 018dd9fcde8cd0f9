package migrations_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/a2a-connector/a2a-connector/internal/store"
	"github.com/a2a-connector/a2a-connector/migrations"
)

// TestCardKeyBackfill: migration 003 gives agents registered before it the key store.CardKey
// computes, and keeps a tenant's duplicates, the oldest keyed and the later ones not.
func TestCardKeyBackfill(t *testing.T) {
	t.Parallel()
	conn := connect(t, testDB.EmptyDatabase(t))
	if err := migrations.ApplyTo(t.Context(), conn, 2); err != nil {
		t.Fatalf("apply to 2: %v", err)
	}
	tenant, other := uuid.NewString(), uuid.NewString()
	agents := []struct {
		tenant, cardURL, resolved string
		wantKey                   *string
	}{
		{tenant, "https://dup.example.com", "https://Dup.example.com:443/.well-known/agent-card.json", ptr("https://dup.example.com")},
		{tenant, "https://dup.example.com/.well-known/agent.json", "https://dup.example.com/.well-known/agent.json", nil},
		{tenant, "https://q.example.com/x/card.json?v=1", "https://q.example.com/x/card.json?v=1#top", ptr("https://q.example.com/x/card.json?v=1")},
		{tenant, "https://p.example.com/a", "https://p.example.com/a/.well-known/agent.json?t=1", ptr("https://p.example.com/a/.well-known/agent.json?t=1")},
		{tenant, "http://plain.example.com:80/", "http://plain.example.com:80/.well-known/agent.json", ptr("http://plain.example.com")},
		// Another tenant's registration of the same agent is its own.
		{other, "https://dup.example.com", "https://dup.example.com/.well-known/agent.json", ptr("https://dup.example.com")},
	}
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{tenant, other} {
		if _, err := tx.Exec(t.Context(), `insert into tenants (id, name) values ($1, 'backfill')`, id); err != nil {
			t.Fatal(err)
		}
	}
	ids := make([]string, len(agents))
	for i, a := range agents {
		ids[i] = uuid.NewString()
		if _, err := tx.Exec(t.Context(),
			`insert into agents (tenant_id, id, card_url, current_revision, created_at)
			 values ($1, $2, $3, 1, now() + make_interval(secs => $4))`, a.tenant, ids[i], a.cardURL, i); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(t.Context(),
			`insert into agent_revisions (tenant_id, agent_id, revision, card, profile, resolved_card_url)
			 values ($1, $2, 1, '{}', '{}', $3)`, a.tenant, ids[i], a.resolved); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}

	if err := migrations.Apply(t.Context(), conn); err != nil {
		t.Fatalf("apply: %v", err)
	}
	checkSchema(t, conn)
	for i, a := range agents {
		var key *string
		if err := conn.QueryRow(t.Context(), `select card_key from agents where id = $1`, ids[i]).Scan(&key); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(a.wantKey, key); diff != "" {
			t.Errorf("card_key of %s (-want +got):\n%s", a.resolved, diff)
		}
		if key != nil && *key != store.CardKey(a.resolved) {
			t.Errorf("card_key of %s = %q; store.CardKey says %q", a.resolved, *key, store.CardKey(a.resolved))
		}
	}
}

func ptr(s string) *string { return &s }
