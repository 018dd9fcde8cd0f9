package store_test

import (
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

func TestCardKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://agent.example.com/.well-known/agent-card.json":        "https://agent.example.com",
		"https://agent.example.com/.well-known/agent.json":             "https://agent.example.com",
		"HTTPS://Agent.Example.com:443/.well-known/agent.json#x":       "https://agent.example.com",
		"https://agent.example.com/":                                   "https://agent.example.com",
		"https://agent.example.com:8443/a/.well-known/agent-card.json": "https://agent.example.com:8443/a",
		"https://agent.example.com/card.json":                          "https://agent.example.com/card.json",
		// A query may choose another card: the path stays whole.
		"https://agent.example.com/.well-known/agent.json?v=2": "https://agent.example.com/.well-known/agent.json?v=2",
		"http://[::1]:80/.well-known/agent.json":               "http://[::1]",
	} {
		if got := store.CardKey(in); got != want {
			t.Errorf("CardKey(%q) = %q; want %q", in, got, want)
		}
	}
}

// TestCreateAgent_one_registration_per_card_key: the bare origin and both well-known paths of
// one agent are one registration; the refusal names the agent that has it.
func TestCreateAgent_one_registration_per_card_key(t *testing.T) {
	t.Parallel()
	s := store.New(testDB.Pool)
	tenant := testDB.NewTenant(t)
	first := newAgent(tenant, "https://one.example.com")
	first.ResolvedCardURL = "https://one.example.com/.well-known/agent-card.json"
	created := mustCreate(t, s, first)

	for _, c := range []struct{ cardURL, resolved string }{
		{"https://one.example.com/.well-known/agent.json", "https://one.example.com/.well-known/agent.json"},
		{"https://one.example.com/.well-known/agent-card.json", "https://One.example.com:443/.well-known/agent-card.json"},
		// The same pasted URL, whatever it resolves to now.
		{"https://one.example.com", "https://one.example.com/elsewhere.json"},
	} {
		n := newAgent(tenant, c.cardURL)
		n.ResolvedCardURL = c.resolved
		_, err := s.CreateAgent(t.Context(), n)
		var dup *connector.DuplicateError
		if !errors.As(err, &dup) || !errors.Is(err, connector.ErrConflict) || dup.AgentID != created.ID {
			t.Errorf("CreateAgent %s (resolved %s) error = %v; want a DuplicateError naming %s", c.cardURL, c.resolved, err, created.ID)
		}
	}
	// Another tenant may register the same card.
	mustCreate(t, s, newAgent(testDB.NewTenant(t), "https://one.example.com"))

	n := newAgent(tenant, "https://one.example.com/x")
	n.ResolvedCardURL = ""
	if _, err := s.CreateAgent(t.Context(), n); !errors.Is(err, connector.ErrInvalid) {
		t.Errorf("CreateAgent without a resolved URL error = %v; want ErrInvalid", err)
	}
}

// TestCreateAgent_racing_registrations_of_one_agent_register_one: the constraint, not a check
// before the insert, decides.
func TestCreateAgent_racing_registrations_of_one_agent_register_one(t *testing.T) {
	t.Parallel()
	s := store.New(testDB.Pool)
	tenant := testDB.NewTenant(t)
	const racers = 8
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		won  []string
		dups []*connector.DuplicateError
	)
	for i := range racers {
		wg.Go(func() {
			n := newAgent(tenant, "https://race.example.com/"+strconv.Itoa(i))
			n.ResolvedCardURL = "https://race.example.com/.well-known/agent-card.json"
			a, err := s.CreateAgent(t.Context(), n)
			mu.Lock()
			defer mu.Unlock()
			var dup *connector.DuplicateError
			switch {
			case err == nil:
				won = append(won, a.ID)
			case errors.As(err, &dup):
				dups = append(dups, dup)
			default:
				t.Errorf("CreateAgent: %v", err)
			}
		})
	}
	wg.Wait()
	if len(won) != 1 || len(dups) != racers-1 {
		t.Fatalf("%d registered, %d refused as duplicates; want 1 and %d", len(won), len(dups), racers-1)
	}
	for _, d := range dups {
		if d.AgentID != won[0] {
			t.Errorf("duplicate names %q; want the winner %s", d.AgentID, won[0])
		}
	}
}

func TestAddRevision_the_same_card_adds_nothing(t *testing.T) {
	t.Parallel()
	s := store.New(testDB.Pool)
	tenant := testDB.NewTenant(t)
	n := newAgent(tenant, "https://same.example.com")
	before := mustCreate(t, s, n)

	// The same JSON value, keys reordered and respaced: jsonb compares values.
	same := connector.Revision{
		ResolvedCardURL: n.ResolvedCardURL,
		Card:            json.RawMessage(`{"skills":[],  "url":"https://agent.example.com/a2a","name":"Weather"}`),
		Profile:         n.Profile,
		Warnings:        n.Warnings,
	}
	got, added, err := s.AddRevision(t.Context(), tenant, n.ID, same)
	if err != nil || added {
		t.Fatalf("AddRevision of the same card = added %v, %v; want not added", added, err)
	}
	if diff := cmp.Diff(before, got); diff != "" {
		t.Errorf("agent after an unchanged refresh (-before +after):\n%s", diff)
	}
	if n := countRows(t, `select count(*) from agent_revisions where tenant_id = $1`, tenant); n != 1 {
		t.Errorf("revisions = %d; want 1", n)
	}

	// Each part that differs makes a revision.
	for i, change := range []func(r *connector.Revision){
		func(r *connector.Revision) { r.Card = json.RawMessage(`{"name": "Weather", "skills": [1]}`) },
		func(r *connector.Revision) { r.ResolvedCardURL = "https://same.example.com/.well-known/agent.json" },
		func(r *connector.Revision) { r.Profile.Streaming = !r.Profile.Streaming },
		func(r *connector.Revision) { r.Warnings = nil },
	} {
		r := same
		r.Profile = sampleProfile("Weather")
		change(&r)
		a, added, err := s.AddRevision(t.Context(), tenant, n.ID, r)
		if err != nil || !added || a.Revision != i+2 {
			t.Errorf("change %d: AddRevision = revision %d, added %v, %v; want revision %d added", i, a.Revision, added, err, i+2)
		}
		// And the same again adds nothing.
		if a, added, err := s.AddRevision(t.Context(), tenant, n.ID, r); err != nil || added || a.Revision != i+2 {
			t.Errorf("change %d again: AddRevision = revision %d, added %v, %v; want revision %d kept", i, a.Revision, added, err, i+2)
		}
	}
}

func TestAddRevision_moving_onto_another_agents_card_is_a_duplicate(t *testing.T) {
	t.Parallel()
	s := store.New(testDB.Pool)
	tenant := testDB.NewTenant(t)
	holder := mustCreate(t, s, newAgent(tenant, "https://holder.example.com"))
	mover := newAgent(tenant, "https://mover.example.com")
	before := mustCreate(t, s, mover)

	_, _, err := s.AddRevision(t.Context(), tenant, mover.ID, connector.Revision{
		// The mover's card URL now redirects to the holder's card.
		ResolvedCardURL: "https://holder.example.com/.well-known/agent.json",
		Card:            json.RawMessage(`{"name": "moved"}`),
		Profile:         sampleProfile("moved"),
	})
	var dup *connector.DuplicateError
	if !errors.As(err, &dup) || dup.AgentID != holder.ID {
		t.Fatalf("AddRevision error = %v; want a DuplicateError naming %s", err, holder.ID)
	}
	after, err := s.GetAgent(t.Context(), tenant, mover.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("mover after the refused revision (-before +after):\n%s", diff)
	}
}

func TestAgentsWithEndpoint(t *testing.T) {
	t.Parallel()
	s := store.New(testDB.Pool)
	tenant := testDB.NewTenant(t)
	a := mustCreate(t, s, newAgent(tenant, "https://a.example.com"))
	b := mustCreate(t, s, newAgent(tenant, "https://b.example.com"))
	other := newAgent(tenant, "https://c.example.com")
	other.Profile.EndpointURL = "https://c.example.com/a2a"
	mustCreate(t, s, other)
	mustCreate(t, s, newAgent(testDB.NewTenant(t), "https://a.example.com"))

	got, err := s.AgentsWithEndpoint(t.Context(), tenant, sampleProfile("x").EndpointURL)
	if err != nil {
		t.Fatalf("AgentsWithEndpoint: %v", err)
	}
	if diff := cmp.Diff([]string{a.ID, b.ID}, got); diff != "" {
		t.Errorf("AgentsWithEndpoint (-want +got):\n%s", diff)
	}
	if got, err := s.AgentsWithEndpoint(t.Context(), tenant, "https://nobody.example.com"); err != nil || len(got) != 0 {
		t.Errorf("AgentsWithEndpoint of an unused endpoint = %v, %v; want none", got, err)
	}
	if _, err := s.AgentsWithEndpoint(t.Context(), uuid.NewString()[:8], "x"); !errors.Is(err, connector.ErrNotFound) {
		t.Errorf("AgentsWithEndpoint with a malformed tenant error = %v; want ErrNotFound", err)
	}
}
