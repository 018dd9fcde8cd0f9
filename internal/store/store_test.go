package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

// ignoreTimes leaves timestamps out of a comparison; tests that care check them on their own.
var ignoreTimes = cmpopts.IgnoreFields(connector.Agent{}, "CreatedAt", "UpdatedAt")

func sampleProfile(name string) connector.CardProfile {
	return connector.CardProfile{
		Name:            name,
		Description:     "Answers questions about the weather",
		Version:         "1.2.0",
		ProtocolVersion: "1.0",
		EndpointURL:     "https://agent.example.com/a2a",
		EndpointTenant:  "acme",
		Fallback:        &connector.Interface{URL: "https://agent.example.com/a2a/v03", ProtocolVersion: "0.3"},
		Streaming:       true,
		Skills: []connector.Skill{
			{
				ID:          "forecast",
				Name:        "Forecast",
				Description: "Tomorrow's weather",
				Tags:        []string{"weather"},
				Examples:    []string{"Will it rain tomorrow?"},
				// Spacing and key order as a card might have them; they must come back as is.
				InputSchema: json.RawMessage(`{"type": "object",  "properties": {"city": {"type":"string"}}, "a": 1}`),
			},
			{ID: "alerts", Name: "Alerts", Description: "Storm warnings", Tags: []string{}},
		},
		APIKeyRequired: true,
		APIKeyHeaders:  []string{"X-API-KEY", "X-Weather-Key"},
		Extensions:     []string{"https://help.aliyun.com/zh/model-studio/multimodal-integration-a2a-protocol"},
	}
}

var sampleWarnings = []connector.Problem{
	{Path: "skills[1].tags", Code: "min_items", Message: "Add tags so the dialog engine can route to this skill.", Severity: connector.SeverityWarning},
}

func newAgent(tenantID, cardURL string) connector.NewAgent {
	return connector.NewAgent{
		ID:              uuid.NewString(),
		TenantID:        tenantID,
		CardURL:         cardURL,
		ResolvedCardURL: cardURL + "/.well-known/agent-card.json",
		Card:            json.RawMessage(`{"name": "Weather", "url": "https://agent.example.com/a2a", "skills": []}`),
		Profile:         sampleProfile("Weather"),
		Warnings:        sampleWarnings,
		Credential:      &connector.Sealed{Ciphertext: []byte("sealed-key"), KeyID: "k1"},
		Enabled:         true,
	}
}

// wantAgent is what the store should return for a freshly created n.
func wantAgent(n connector.NewAgent) connector.Agent {
	kind := ""
	if n.Credential != nil {
		kind = n.CredentialKind
		if kind == "" {
			kind = connector.CredentialKindAPIKey
		}
	}
	return connector.Agent{
		CredentialSetKind: kind,
		ID:                n.ID,
		TenantID:          n.TenantID,
		CardURL:           n.CardURL,
		CardProfile:       n.Profile,
		CredentialsSet:    n.Credential != nil,
		Enabled:           n.Enabled,
		Revision:          1,
		Warnings:          n.Warnings,
	}
}

func mustCreate(t *testing.T, s *store.Store, n connector.NewAgent) connector.Agent {
	t.Helper()
	a, err := s.CreateAgent(t.Context(), n)
	if err != nil {
		t.Fatalf("CreateAgent: %v", err)
	}
	return a
}

// sameJSON reports whether a and b are the same JSON value (jsonb does not keep formatting).
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("unmarshal %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	return cmp.Equal(va, vb)
}

func countRows(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := testDB.Pool.QueryRow(t.Context(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func TestCreateAgent_then_get_and_list_return_it(t *testing.T) {
	t.Parallel()
	s := store.New(testDB.Pool)
	tenant := testDB.NewTenant(t)
	n := newAgent(tenant, "https://weather.example.com")

	before := time.Now()
	created := mustCreate(t, s, n)

	if diff := cmp.Diff(wantAgent(n), created, ignoreTimes); diff != "" {
		t.Errorf("CreateAgent (-want +got):\n%s", diff)
	}
	if created.CreatedAt.Before(before.Add(-time.Minute)) || !created.CreatedAt.Equal(created.UpdatedAt) {
		t.Errorf("CreatedAt = %v, UpdatedAt = %v; want both now and equal", created.CreatedAt, created.UpdatedAt)
	}

	got, err := s.GetAgent(t.Context(), tenant, n.ID)
	if err != nil {
		t.Fatalf("GetAgent: %v", err)
	}
	if diff := cmp.Diff(created, got); diff != "" {
		t.Errorf("GetAgent (-created +got):\n%s", diff)
	}

	list, err := s.ListAgents(t.Context(), tenant)
	if err != nil {
		t.Fatalf("ListAgents: %v", err)
	}
	if diff := cmp.Diff([]connector.Agent{created}, list); diff != "" {
		t.Errorf("ListAgents (-want +got):\n%s", diff)
	}

	secret, err := s.AgentCredential(t.Context(), tenant, n.ID)
	if err != nil {
		t.Fatalf("AgentCredential: %v", err)
	}
	if diff := cmp.Diff(n.Credential, secret); diff != "" {
		t.Errorf("AgentCredential (-want +got):\n%s", diff)
	}

	revs, err := s.Revisions(t.Context(), tenant, n.ID)
	if err != nil {
		t.Fatalf("Revisions: %v", err)
	}
	if len(revs) != 1 || revs[0].Revision != 1 || revs[0].ResolvedCardURL != n.ResolvedCardURL ||
		!sameJSON(t, n.Card, revs[0].Card) {
		t.Errorf("Revisions = %+v; want revision 1 with the card as created", revs)
	}
}

func TestCreateAgent_variants(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*connector.NewAgent)
		want   func(n connector.NewAgent, got connector.Agent) connector.Agent
	}{
		{
			name:   "without_api_key_is_not_set",
			change: func(n *connector.NewAgent) { n.Credential = nil },
		},
		{
			name:   "disabled_stays_disabled",
			change: func(n *connector.NewAgent) { n.Enabled = false },
		},
		{
			name:   "no_warnings_and_empty_profile_round_trip",
			change: func(n *connector.NewAgent) { n.Warnings = nil; n.Profile = connector.CardProfile{} },
		},
		{
			name:   "uppercase_id_is_stored_canonical",
			change: func(n *connector.NewAgent) { n.ID = "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11" },
			want: func(n connector.NewAgent, _ connector.Agent) connector.Agent {
				a := wantAgent(n)
				a.ID = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
				return a
			},
		},
		{
			name:   "empty_id_without_key_gets_a_fresh_uuid",
			change: func(n *connector.NewAgent) { n.ID = ""; n.Credential = nil },
			want: func(n connector.NewAgent, got connector.Agent) connector.Agent {
				if _, err := uuid.Parse(got.ID); err != nil {
					return connector.Agent{ID: "a UUID, not " + got.ID}
				}
				a := wantAgent(n)
				a.ID = got.ID
				return a
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := store.New(testDB.Pool)
			n := newAgent(testDB.NewTenant(t), "https://agent.example.com")
			tt.change(&n)
			got := mustCreate(t, s, n)
			want := wantAgent(n)
			if tt.want != nil {
				want = tt.want(n, got)
			}
			if diff := cmp.Diff(want, got, ignoreTimes); diff != "" {
				t.Errorf("CreateAgent (-want +got):\n%s", diff)
			}
			again, err := s.GetAgent(t.Context(), n.TenantID, got.ID)
			if err != nil {
				t.Fatalf("GetAgent: %v", err)
			}
			if diff := cmp.Diff(got, again); diff != "" {
				t.Errorf("GetAgent after create (-created +got):\n%s", diff)
			}
		})
	}
}

func TestCreateAgent_errors_leave_nothing_behind(t *testing.T) {
	t.Parallel()
	const takenURL = "https://taken.example.com"
	tests := []struct {
		name    string
		change  func(*connector.NewAgent)
		wantErr error
	}{
		{name: "same_card_url_in_tenant_is_a_conflict", change: func(n *connector.NewAgent) { n.CardURL = takenURL }, wantErr: connector.ErrConflict},
		{name: "unknown_tenant_is_not_found", change: func(n *connector.NewAgent) { n.TenantID = uuid.NewString() }, wantErr: connector.ErrNotFound},
		{name: "malformed_tenant_is_not_found", change: func(n *connector.NewAgent) { n.TenantID = "tenant-1" }, wantErr: connector.ErrNotFound},
		{name: "malformed_id_is_invalid", change: func(n *connector.NewAgent) { n.ID = "agent-1" }, wantErr: connector.ErrInvalid},
		{name: "empty_id_with_api_key_is_invalid", change: func(n *connector.NewAgent) { n.ID = "" }, wantErr: connector.ErrInvalid},
		{name: "api_key_without_key_id_is_invalid", change: func(n *connector.NewAgent) { n.Credential.KeyID = "" }, wantErr: connector.ErrInvalid},
		{name: "api_key_without_ciphertext_is_invalid", change: func(n *connector.NewAgent) { n.Credential.Ciphertext = nil }, wantErr: connector.ErrInvalid},
		{name: "empty_card_url_is_invalid", change: func(n *connector.NewAgent) { n.CardURL = "" }, wantErr: connector.ErrInvalid},
		{name: "input_schema_not_json_is_invalid", change: func(n *connector.NewAgent) { n.Profile.Skills[0].InputSchema = json.RawMessage(`{`) }, wantErr: connector.ErrInvalid},
		// The agent row is inserted before the revision; Postgres refuses the card only at the
		// second insert, so these prove the two are one transaction.
		{name: "card_not_json_is_invalid", change: func(n *connector.NewAgent) { n.Card = json.RawMessage(`{"name": "Weather"`) }, wantErr: connector.ErrInvalid},
		{name: "missing_card_is_invalid", change: func(n *connector.NewAgent) { n.Card = nil }, wantErr: connector.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := store.New(testDB.Pool)
			tenant := testDB.NewTenant(t)
			existing := mustCreate(t, s, newAgent(tenant, takenURL))

			n := newAgent(tenant, "https://new.example.com")
			tt.change(&n)
			_, err := s.CreateAgent(t.Context(), n)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("CreateAgent error = %v; want %v", err, tt.wantErr)
			}

			list, err := s.ListAgents(t.Context(), tenant)
			if err != nil {
				t.Fatalf("ListAgents: %v", err)
			}
			if diff := cmp.Diff([]connector.Agent{existing}, list); diff != "" {
				t.Errorf("agents after the failed create (-want +got):\n%s", diff)
			}
			if got := countRows(t, `select count(*) from agent_revisions where tenant_id = $1`, tenant); got != 1 {
				t.Errorf("revisions of the tenant = %d; want 1 (the existing agent's)", got)
			}
		})
	}
}

func TestCreateAgent_same_card_url_in_two_tenants_is_fine(t *testing.T) {
	t.Parallel()
	s := store.New(testDB.Pool)
	mustCreate(t, s, newAgent(testDB.NewTenant(t), "https://shared.example.com"))
	mustCreate(t, s, newAgent(testDB.NewTenant(t), "https://shared.example.com"))
}

func TestCreateAgent_concurrent_same_card_url_one_wins(t *testing.T) {
	t.Parallel()
	s := store.New(testDB.Pool)
	tenant := testDB.NewTenant(t)
	const n = 6
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = s.CreateAgent(t.Context(), newAgent(tenant, "https://race.example.com"))
		})
	}
	wg.Wait()
	var ok, conflicts int
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, connector.ErrConflict):
			conflicts++
		default:
			t.Errorf("CreateAgent: %v; want nil or ErrConflict", err)
		}
	}
	if ok != 1 || conflicts != n-1 {
		t.Errorf("%d created, %d conflicts; want 1 and %d", ok, conflicts, n-1)
	}
}

func TestListAgents_oldest_first_and_only_own(t *testing.T) {
	t.Parallel()
	s := store.New(testDB.Pool)
	tenant, other := testDB.NewTenant(t), testDB.NewTenant(t)
	mustCreate(t, s, newAgent(other, "https://other.example.com"))
	var want []connector.Agent
	for i := range 3 {
		want = append(want, mustCreate(t, s, newAgent(tenant, "https://a"+strconv.Itoa(i)+".example.com")))
	}

	got, err := s.ListAgents(t.Context(), tenant)
	if err != nil {
		t.Fatalf("ListAgents: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ListAgents (-want +got):\n%s", diff)
	}

	empty, err := s.ListAgents(t.Context(), uuid.NewString())
	if err != nil || len(empty) != 0 {
		t.Errorf("ListAgents of a tenant without agents = %v, %v; want empty, nil", empty, err)
	}
}

func TestUpdateAgent(t *testing.T) {
	t.Parallel()
	no := false
	newKey := &connector.Sealed{Ciphertext: []byte("sealed-key-2"), KeyID: "k2"}
	tests := []struct {
		name        string
		patch       connector.AgentPatch
		wantEnabled bool
		wantSecret  *connector.Sealed
		wantErr     error
		wantTouched bool
	}{
		{name: "disable", patch: connector.AgentPatch{Enabled: &no}, wantEnabled: false, wantSecret: newAgent("", "").Credential, wantTouched: true},
		{name: "rotate_key", patch: connector.AgentPatch{Credential: newKey}, wantEnabled: true, wantSecret: newKey, wantTouched: true},
		{name: "clear_key", patch: connector.AgentPatch{ClearCredential: true}, wantEnabled: true, wantSecret: nil, wantTouched: true},
		{name: "rotate_key_and_disable", patch: connector.AgentPatch{Credential: newKey, Enabled: &no}, wantEnabled: false, wantSecret: newKey, wantTouched: true},
		{name: "empty_patch_changes_nothing", patch: connector.AgentPatch{}, wantEnabled: true, wantSecret: newAgent("", "").Credential},
		{name: "set_and_clear_key_is_invalid", patch: connector.AgentPatch{Credential: newKey, ClearCredential: true}, wantErr: connector.ErrInvalid},
		{name: "bearer_token_records_its_kind", patch: connector.AgentPatch{Credential: newKey, CredentialKind: connector.CredentialKindBearerToken}, wantEnabled: true, wantSecret: newKey, wantTouched: true},
		{name: "key_without_key_id_is_invalid", patch: connector.AgentPatch{Credential: &connector.Sealed{Ciphertext: []byte("x")}}, wantErr: connector.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := store.New(testDB.Pool)
			tenant := testDB.NewTenant(t)
			before := mustCreate(t, s, newAgent(tenant, "https://agent.example.com"))

			got, err := s.UpdateAgent(t.Context(), tenant, before.ID, tt.patch)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("UpdateAgent error = %v; want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil {
				after, err := s.GetAgent(t.Context(), tenant, before.ID)
				if err != nil {
					t.Fatalf("GetAgent: %v", err)
				}
				if diff := cmp.Diff(before, after); diff != "" {
					t.Errorf("agent after a refused patch (-before +after):\n%s", diff)
				}
				return
			}

			want := before
			want.Enabled = tt.wantEnabled
			want.CredentialsSet = tt.wantSecret != nil
			if tt.patch.CredentialKind != "" {
				want.CredentialSetKind = tt.patch.CredentialKind
			}
			if !want.CredentialsSet {
				want.CredentialSetKind = ""
			}
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(connector.Agent{}, "UpdatedAt")); diff != "" {
				t.Errorf("UpdateAgent (-want +got):\n%s", diff)
			}
			if touched := got.UpdatedAt.After(before.UpdatedAt); touched != tt.wantTouched {
				t.Errorf("UpdatedAt %v -> %v; want moved: %v", before.UpdatedAt, got.UpdatedAt, tt.wantTouched)
			}
			fetched, err := s.GetAgent(t.Context(), tenant, before.ID)
			if err != nil {
				t.Fatalf("GetAgent: %v", err)
			}
			if diff := cmp.Diff(got, fetched); diff != "" {
				t.Errorf("GetAgent after update (-updated +got):\n%s", diff)
			}
			secret, err := s.AgentCredential(t.Context(), tenant, before.ID)
			if err != nil {
				t.Fatalf("AgentCredential: %v", err)
			}
			if diff := cmp.Diff(tt.wantSecret, secret); diff != "" {
				t.Errorf("AgentCredential (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAddRevision_new_revision_is_live_and_old_ones_are_kept(t *testing.T) {
	t.Parallel()
	s := store.New(testDB.Pool)
	tenant := testDB.NewTenant(t)
	n := newAgent(tenant, "https://agent.example.com")
	before := mustCreate(t, s, n)

	r := connector.Revision{
		ResolvedCardURL: "https://agent.example.com/.well-known/agent.json",
		Card:            json.RawMessage(`{"name": "Weather 2"}`),
		Profile:         sampleProfile("Weather 2"),
	}
	r.Profile.Streaming = false
	got, added, err := s.AddRevision(t.Context(), tenant, n.ID, r)
	if err != nil || !added {
		t.Fatalf("AddRevision = added %v, %v; want added", added, err)
	}
	want := before
	want.Revision = 2
	want.CardProfile = r.Profile
	want.Warnings = nil
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(connector.Agent{}, "UpdatedAt")); diff != "" {
		t.Errorf("AddRevision (-want +got):\n%s", diff)
	}
	if !got.UpdatedAt.After(before.UpdatedAt) {
		t.Errorf("UpdatedAt = %v; want after %v", got.UpdatedAt, before.UpdatedAt)
	}
	fetched, err := s.GetAgent(t.Context(), tenant, n.ID)
	if err != nil {
		t.Fatalf("GetAgent: %v", err)
	}
	if diff := cmp.Diff(got, fetched); diff != "" {
		t.Errorf("GetAgent after AddRevision (-added +got):\n%s", diff)
	}

	revs, err := s.Revisions(t.Context(), tenant, n.ID)
	if err != nil {
		t.Fatalf("Revisions: %v", err)
	}
	if len(revs) != 2 {
		t.Fatalf("Revisions = %d; want 2", len(revs))
	}
	wantRevs := []store.RevisionInfo{
		{Revision: 1, ResolvedCardURL: n.ResolvedCardURL, Card: n.Card, Profile: n.Profile, Warnings: n.Warnings},
		{Revision: 2, ResolvedCardURL: r.ResolvedCardURL, Card: r.Card, Profile: r.Profile},
	}
	opts := cmp.Options{
		cmpopts.IgnoreFields(store.RevisionInfo{}, "FetchedAt"),
		cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Card" },
			cmp.Comparer(func(a, b json.RawMessage) bool { return sameJSON(t, a, b) })),
	}
	if diff := cmp.Diff(wantRevs, revs, opts); diff != "" {
		t.Errorf("Revisions (-want +got):\n%s", diff)
	}
}

func TestAddRevision_concurrent_refreshes_get_consecutive_numbers(t *testing.T) {
	t.Parallel()
	s := store.New(testDB.Pool)
	tenant := testDB.NewTenant(t)
	n := newAgent(tenant, "https://agent.example.com")
	mustCreate(t, s, n)

	const refreshes = 8
	g, ctx := errgroup.WithContext(t.Context())
	for i := range refreshes {
		g.Go(func() error {
			_, _, err := s.AddRevision(ctx, tenant, n.ID, connector.Revision{
				ResolvedCardURL: n.ResolvedCardURL,
				Card:            json.RawMessage(`{"n": ` + strconv.Itoa(i) + `}`),
				Profile:         sampleProfile("v" + strconv.Itoa(i)),
			})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("AddRevision: %v", err)
	}

	revs, err := s.Revisions(t.Context(), tenant, n.ID)
	if err != nil {
		t.Fatalf("Revisions: %v", err)
	}
	var nums []int
	for _, r := range revs {
		nums = append(nums, r.Revision)
	}
	wantNums := []int{1, 2, 3, 4, 5, 6, 7, 8, 9}
	if diff := cmp.Diff(wantNums, nums); diff != "" {
		t.Errorf("revision numbers (-want +got):\n%s", diff)
	}
	a, err := s.GetAgent(t.Context(), tenant, n.ID)
	if err != nil {
		t.Fatalf("GetAgent: %v", err)
	}
	if a.Revision != refreshes+1 || a.Name != revs[refreshes].Profile.Name {
		t.Errorf("live revision %d %q; want %d %q", a.Revision, a.Name, refreshes+1, revs[refreshes].Profile.Name)
	}
}

func TestAddRevision_refused_card_keeps_the_old_revision_live(t *testing.T) {
	t.Parallel()
	s := store.New(testDB.Pool)
	tenant := testDB.NewTenant(t)
	n := newAgent(tenant, "https://agent.example.com")
	before := mustCreate(t, s, n)

	// Postgres refuses the card at the revision insert, after the agent row was locked: the
	// whole transaction must roll back.
	_, _, err := s.AddRevision(t.Context(), tenant, n.ID, connector.Revision{
		ResolvedCardURL: n.ResolvedCardURL,
		Card:            json.RawMessage(`{"name": `),
		Profile:         sampleProfile("Broken"),
	})
	if !errors.Is(err, connector.ErrInvalid) {
		t.Fatalf("AddRevision error = %v; want ErrInvalid", err)
	}
	after, err := s.GetAgent(t.Context(), tenant, n.ID)
	if err != nil {
		t.Fatalf("GetAgent: %v", err)
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("agent after the refused revision (-before +after):\n%s", diff)
	}
	if got := countRows(t, `select count(*) from agent_revisions where tenant_id = $1`, tenant); got != 1 {
		t.Errorf("revisions = %d; want 1", got)
	}
}

func TestDeleteAgent_takes_revisions_holds_and_contexts_with_it(t *testing.T) {
	t.Parallel()
	s := store.New(testDB.Pool)
	tenant := testDB.NewTenant(t)
	doomed := mustCreate(t, s, newAgent(tenant, "https://doomed.example.com"))
	kept := mustCreate(t, s, newAgent(tenant, "https://kept.example.com"))
	if _, _, err := s.AddRevision(t.Context(), tenant, doomed.ID, connector.Revision{ResolvedCardURL: "https://doomed.example.com/v2.json",
		Card: json.RawMessage(`{}`), Profile: sampleProfile("v2")}); err != nil {
		t.Fatalf("AddRevision: %v", err)
	}
	for i, agentID := range []string{doomed.ID, kept.ID} {
		session := "session-" + strconv.Itoa(i)
		if err := s.SaveTurn(t.Context(), connector.TurnRecord{TenantID: tenant, SessionID: session, AgentID: agentID,
			TurnID: "turn", StartedAt: time.Now(), SetHold: &connector.Hold{TaskID: "task", ContextID: "ctx",
				TurnID: "turn", ExpiresAt: time.Now().Add(10 * time.Minute)}}); err != nil {
			t.Fatalf("save hold: %v", err)
		}
		if _, err := testDB.Pool.Exec(t.Context(),
			`insert into session_contexts (tenant_id, session_id, agent_id, context_id) values ($1, $2, $3, 'ctx')`,
			tenant, session, agentID); err != nil {
			t.Fatalf("insert context: %v", err)
		}
	}

	released, err := s.DeleteAgent(t.Context(), tenant, doomed.ID)
	if err != nil {
		t.Fatalf("DeleteAgent: %v", err)
	}
	if len(released) != 1 || released[0].TaskID != "task" || released[0].SessionID != "session-0" || released[0].AgentID != doomed.ID {
		t.Errorf("released holds = %+v, want the doomed agent's one hold", released)
	}

	if _, err := s.GetAgent(t.Context(), tenant, doomed.ID); !errors.Is(err, connector.ErrNotFound) {
		t.Errorf("GetAgent after delete error = %v; want ErrNotFound", err)
	}
	if got := countRows(t, `select count(*) from sessions where tenant_id = $1 and hold_agent_id = $2`, tenant, doomed.ID); got != 0 {
		t.Errorf("holds of the deleted agent = %d; want 0", got)
	}
	if got := countRows(t, `select count(*) from sessions where tenant_id = $1 and hold_agent_id = $2`, tenant, kept.ID); got != 1 {
		t.Errorf("holds of the other agent = %d; want 1", got)
	}
	for _, table := range []string{"agent_revisions", "session_contexts"} {
		if got := countRows(t, `select count(*) from `+table+` where tenant_id = $1 and agent_id = $2`, tenant, doomed.ID); got != 0 {
			t.Errorf("%s rows of the deleted agent = %d; want 0", table, got)
		}
		if got := countRows(t, `select count(*) from `+table+` where tenant_id = $1 and agent_id = $2`, tenant, kept.ID); got != 1 {
			t.Errorf("%s rows of the other agent = %d; want 1", table, got)
		}
	}
	if _, err := s.DeleteAgent(t.Context(), tenant, doomed.ID); !errors.Is(err, connector.ErrNotFound) {
		t.Errorf("second DeleteAgent error = %v; want ErrNotFound", err)
	}
}

// agentCalls runs every per-agent method of the store for tenant and agent and returns the errors
// by method name.
func agentCalls(ctx context.Context, s *store.Store, tenant, agent string) map[string]error {
	yes := true
	errs := map[string]error{}
	_, errs["GetAgent"] = s.GetAgent(ctx, tenant, agent)
	_, errs["UpdateAgent"] = s.UpdateAgent(ctx, tenant, agent, connector.AgentPatch{Enabled: &yes})
	_, errs["UpdateAgent_empty"] = s.UpdateAgent(ctx, tenant, agent, connector.AgentPatch{})
	_, _, errs["AddRevision"] = s.AddRevision(ctx, tenant, agent, connector.Revision{Card: json.RawMessage(`{}`)})
	_, errs["Revisions"] = s.Revisions(ctx, tenant, agent)
	_, errs["AgentCredential"] = s.AgentCredential(ctx, tenant, agent)
	_, errs["DeleteAgent"] = s.DeleteAgent(ctx, tenant, agent)
	return errs
}

func TestTenantIsolation_another_tenants_agent_is_not_found_everywhere(t *testing.T) {
	t.Parallel()
	s := store.New(testDB.Pool)
	tenantA, tenantB := testDB.NewTenant(t), testDB.NewTenant(t)
	n := newAgent(tenantA, "https://a.example.com")
	n.Enabled = false
	agentA := mustCreate(t, s, n)

	for method, err := range agentCalls(t.Context(), s, tenantB, agentA.ID) {
		if !errors.Is(err, connector.ErrNotFound) {
			t.Errorf("%s as tenant B error = %v; want ErrNotFound", method, err)
		}
	}
	listB, err := s.ListAgents(t.Context(), tenantB)
	if err != nil || len(listB) != 0 {
		t.Errorf("ListAgents as tenant B = %v, %v; want empty", listB, err)
	}

	// Nothing tenant B tried touched tenant A's agent.
	after, err := s.GetAgent(t.Context(), tenantA, agentA.ID)
	if err != nil {
		t.Fatalf("GetAgent as tenant A: %v", err)
	}
	if diff := cmp.Diff(agentA, after); diff != "" {
		t.Errorf("tenant A's agent after tenant B's calls (-before +after):\n%s", diff)
	}
	secret, err := s.AgentCredential(t.Context(), tenantA, agentA.ID)
	if err != nil || secret == nil || secret.KeyID != n.Credential.KeyID {
		t.Errorf("AgentCredential as tenant A = %+v, %v; want the original key", secret, err)
	}
	if got := countRows(t, `select count(*) from agent_revisions where agent_id = $1`, agentA.ID); got != 1 {
		t.Errorf("revisions of tenant A's agent = %d; want 1", got)
	}
}

func TestMalformedIDs_are_not_found(t *testing.T) {
	t.Parallel()
	s := store.New(testDB.Pool)
	tenant := testDB.NewTenant(t)
	agent := mustCreate(t, s, newAgent(tenant, "https://agent.example.com"))
	tests := []struct {
		name, tenant, agent string
	}{
		{name: "malformed_agent_id", tenant: tenant, agent: "not-a-uuid"},
		{name: "empty_agent_id", tenant: tenant, agent: ""},
		{name: "sql_in_agent_id", tenant: tenant, agent: "' or 1=1 --"},
		{name: "malformed_tenant_id", tenant: "not-a-uuid", agent: agent.ID},
		{name: "unknown_agent_id", tenant: tenant, agent: uuid.NewString()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for method, err := range agentCalls(t.Context(), s, tt.tenant, tt.agent) {
				if !errors.Is(err, connector.ErrNotFound) {
					t.Errorf("%s error = %v; want ErrNotFound", method, err)
				}
			}
		})
	}
	if _, err := s.ListAgents(t.Context(), "not-a-uuid"); !errors.Is(err, connector.ErrNotFound) {
		t.Errorf("ListAgents with a malformed tenant error = %v; want ErrNotFound", err)
	}
	if _, err := s.GetAgent(t.Context(), tenant, agent.ID); err != nil {
		t.Errorf("GetAgent of the real agent after all that: %v", err)
	}
}

func TestTenantsAndTokens(t *testing.T) {
	t.Parallel()
	s := store.New(testDB.Pool)
	tenant, err := s.CreateTenant(t.Context(), "Acme")
	if err != nil {
		t.Fatalf("CreateTenant: %v", err)
	}
	if _, err := uuid.Parse(tenant.ID); err != nil || tenant.Name != "Acme" || tenant.CreatedAt.IsZero() {
		t.Errorf("CreateTenant = %+v; want a UUID, the name and a creation time", tenant)
	}

	hash := func(b byte) []byte {
		h := make([]byte, 32)
		h[0] = b
		copy(h[1:], uuid.New().String())
		return h
	}
	first, second := hash(1), hash(2)
	var ids []string
	for _, h := range [][]byte{first, second} {
		tok, err := s.AddTenantToken(t.Context(), tenant.ID, h)
		if err != nil {
			t.Fatalf("AddTenantToken: %v", err)
		}
		if _, err := uuid.Parse(tok.ID); err != nil || tok.TenantID != tenant.ID || tok.CreatedAt.IsZero() || tok.LastUsedAt != nil {
			t.Errorf("AddTenantToken = %+v; want an id, the tenant, a creation time and no use", tok)
		}
		ids = append(ids, tok.ID)
	}
	for i, h := range [][]byte{first, second} {
		got, tokenID, err := s.TenantByTokenHash(t.Context(), h)
		if err != nil {
			t.Fatalf("TenantByTokenHash: %v", err)
		}
		if diff := cmp.Diff(tenant, got); diff != "" {
			t.Errorf("TenantByTokenHash (-want +got):\n%s", diff)
		}
		if tokenID != ids[i] {
			t.Errorf("TenantByTokenHash token id = %q; want %q", tokenID, ids[i])
		}
	}

	errTests := []struct {
		name    string
		call    func(ctx context.Context) error
		wantErr error
	}{
		{name: "unknown_hash_is_not_found", wantErr: connector.ErrNotFound, call: func(ctx context.Context) error {
			_, _, err := s.TenantByTokenHash(ctx, hash(3))
			return err
		}},
		{name: "empty_hash_is_not_found", wantErr: connector.ErrNotFound, call: func(ctx context.Context) error {
			_, _, err := s.TenantByTokenHash(ctx, nil)
			return err
		}},
		{name: "same_hash_twice_is_a_conflict", wantErr: connector.ErrConflict, call: func(ctx context.Context) error {
			_, err := s.AddTenantToken(ctx, tenant.ID, first)
			return err
		}},
		{name: "token_for_unknown_tenant_is_not_found", wantErr: connector.ErrNotFound, call: func(ctx context.Context) error {
			_, err := s.AddTenantToken(ctx, uuid.NewString(), hash(4))
			return err
		}},
		{name: "token_for_malformed_tenant_is_not_found", wantErr: connector.ErrNotFound, call: func(ctx context.Context) error {
			_, err := s.AddTenantToken(ctx, "acme", hash(5))
			return err
		}},
		{name: "hash_not_sha256_sized_is_invalid", wantErr: connector.ErrInvalid, call: func(ctx context.Context) error {
			_, err := s.AddTenantToken(ctx, tenant.ID, []byte("short"))
			return err
		}},
		{name: "tenant_without_name_is_invalid", wantErr: connector.ErrInvalid, call: func(ctx context.Context) error {
			_, err := s.CreateTenant(ctx, "")
			return err
		}},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(t.Context()); !errors.Is(err, tt.wantErr) {
				t.Errorf("error = %v; want %v", err, tt.wantErr)
			}
		})
	}
}

func TestPing(t *testing.T) {
	t.Parallel()
	if err := store.New(testDB.Pool).Ping(t.Context()); err != nil {
		t.Errorf("Ping: %v", err)
	}
}

func TestUnreachablePostgres_is_unavailable(t *testing.T) {
	t.Parallel()
	// A port that was free a moment ago: nothing listens there, so connecting is refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	pool, err := pgxpool.New(t.Context(), "postgres://postgres@"+addr+"/postgres?sslmode=disable&connect_timeout=5")
	if err != nil {
		t.Fatalf("pgxpool.New: %v", err)
	}
	closed, err := pgxpool.New(t.Context(), testDB.URL)
	if err != nil {
		t.Fatalf("pgxpool.New: %v", err)
	}
	closed.Close()

	for name, pool := range map[string]*pgxpool.Pool{"refused": pool, "closed_pool": closed} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			s := store.New(pool)
			_, getErr := s.GetAgent(ctx, uuid.NewString(), uuid.NewString())
			_, createErr := s.CreateTenant(ctx, "Acme")
			_, createAgentErr := s.CreateAgent(ctx, newAgent(uuid.NewString(), "https://a.example.com"))
			for method, err := range map[string]error{
				"Ping":         s.Ping(ctx),
				"GetAgent":     getErr,
				"CreateTenant": createErr,
				"CreateAgent":  createAgentErr,
			} {
				if !errors.Is(err, connector.ErrUnavailable) {
					t.Errorf("%s error = %v; want ErrUnavailable", method, err)
				}
			}
		})
	}
	pool.Close()
}

// An agent whose turns moved to its card's fallback says so at that revision, to every reader
// (the turn path, ListAgents, the console); a refreshed card starts over on its preferred
// interface; another tenant, a stale revision or an agent without a fallback change nothing.
func TestMarkOnFallback(t *testing.T) {
	t.Parallel()
	s := store.New(testDB.Pool)
	tenant, other := testDB.NewTenant(t), testDB.NewTenant(t)
	n := newAgent(tenant, "https://fallback.example.com")
	a := mustCreate(t, s, n)
	noFallback := newAgent(tenant, "https://single.example.com")
	noFallback.Profile.Fallback = nil
	single := mustCreate(t, s, noFallback)

	for _, call := range []struct {
		tenant, agent string
		revision      int
	}{{other, a.ID, 1}, {tenant, a.ID, 2}, {tenant, single.ID, 1}, {tenant, "not-an-id", 1}} {
		err := s.MarkOnFallback(t.Context(), call.tenant, call.agent, call.revision)
		if err != nil && !errors.Is(err, connector.ErrNotFound) {
			t.Errorf("MarkOnFallback(%+v) = %v", call, err)
		}
	}
	for _, id := range []string{a.ID, single.ID} {
		if got, err := s.GetAgent(t.Context(), tenant, id); err != nil || got.OnFallback {
			t.Errorf("before: agent %s OnFallback %v, %v; want false", id, got.OnFallback, err)
		}
	}

	if err := s.MarkOnFallback(t.Context(), tenant, a.ID, 1); err != nil {
		t.Fatalf("MarkOnFallback: %v", err)
	}
	got, err := s.GetAgent(t.Context(), tenant, a.ID)
	if err != nil || !got.OnFallback || !got.UpdatedAt.After(a.UpdatedAt) {
		t.Fatalf("after: OnFallback %v, updated %v (was %v), %v; want true and moved", got.OnFallback, got.UpdatedAt, a.UpdatedAt, err)
	}
	if active := got.ActiveInterface(); active.URL != n.Profile.Fallback.URL || active.ProtocolVersion != "0.3" {
		t.Errorf("ActiveInterface = %+v, want the fallback", active)
	}
	list, err := s.ListAgents(t.Context(), tenant)
	if err != nil || len(list) != 2 || !list[0].OnFallback || list[1].OnFallback {
		t.Errorf("ListAgents = %+v, %v; want the first on its fallback", list, err)
	}
	held, _, err := s.AgentForTurn(t.Context(), tenant, a.ID)
	if err != nil || !held.OnFallback {
		t.Errorf("AgentForTurn: OnFallback %v, %v; want true", held.OnFallback, err)
	}

	r := connector.Revision{ResolvedCardURL: n.ResolvedCardURL, Card: json.RawMessage(`{"name": "Weather 2"}`), Profile: sampleProfile("Weather 2")}
	refreshed, added, err := s.AddRevision(t.Context(), tenant, a.ID, r)
	if err != nil || !added || refreshed.OnFallback {
		t.Errorf("after a refresh: OnFallback %v (added %v, %v); want false", refreshed.OnFallback, added, err)
	}
}
