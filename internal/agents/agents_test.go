package agents_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/examples/demo-agent/agent"
	"github.com/a2a-connector/a2a-connector/internal/agents"
	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/pgtest"
	"github.com/a2a-connector/a2a-connector/internal/secret"
	"github.com/a2a-connector/a2a-connector/internal/store"
)

var testDB *pgtest.DB

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m, &testDB)) }

// loopback lets card fetches and agent calls reach the test's servers over plain HTTP.
var loopback = netguard.Policy{AllowInsecureHTTP: true, AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}

func newBox(t *testing.T) *secret.Box {
	t.Helper()
	box, err := secret.New(bytes.Repeat([]byte{9}, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// newService is a service over the package's database whose fetches may reach loopback.
func newService(t *testing.T, c agents.Config) *agents.Service {
	t.Helper()
	c.Store = store.New(testDB.Pool)
	c.Cards = cardfetch.New(cardfetch.Options{AllowInsecureHTTP: true,
		Client: netguard.NewClient(loopback, netguard.ClientOptions{MaxRedirects: 3})})
	if c.Secrets == nil {
		c.Secrets = newBox(t)
	}
	return agents.New(c)
}

// card is a valid A2A 0.2.5 card naming endpoint.
func card(name, endpoint string) string {
	return fmt.Sprintf(`{
  "name": %q, "description": "Answers questions.", "protocolVersion": "0.2.5",
  "url": %q, "version": "1.0.0", "capabilities": {"streaming": true},
  "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
  "skills": [{"id": "ask", "name": "Ask", "description": "Answers.", "tags": ["demo"]}]
}`, name, endpoint)
}

func TestRegisterTheDemoAgentWithItsKey(t *testing.T) {
	t.Parallel()
	demo := httptest.NewServer(agent.New(agent.Options{APIKey: "demo-key"}).Handler())
	t.Cleanup(demo.Close)
	box := newBox(t)
	svc := newService(t, agents.Config{Secrets: box})
	tenant, other := testDB.NewTenant(t), testDB.NewTenant(t)

	// The URL as a tenant might type it: upper-case scheme, trailing slash.
	a, warnings, err := svc.Register(t.Context(), tenant, strings.Replace(demo.URL, "http://", "HTTP://", 1)+"/", "demo-key")
	if err != nil {
		t.Fatal(err)
	}
	if a.CardURL != demo.URL || !a.Enabled || !a.CredentialsSet || a.Revision != 1 || a.EndpointURL == "" || len(warnings) != 0 {
		t.Errorf("registered %+v, warnings %v; want the canonical URL, enabled, with a key, revision 1, no warnings", a, warnings)
	}

	got, key, err := svc.WithCredential(t.Context(), tenant, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != a.ID || got.Revision != a.Revision || got.CardURL != a.CardURL {
		t.Errorf("WithCredential agent = %+v; want %+v", got, a)
	}
	if key == nil {
		t.Fatal("WithCredential: no key")
	}
	plain, err := box.Open(a.ID, *key)
	if err != nil || string(plain) != "demo-key" {
		t.Errorf("the stored key opens to %q, %v; want demo-key", plain, err)
	}

	// The same agent again, by its well-known path: already registered, naming the agent.
	_, _, err = svc.Register(t.Context(), tenant, demo.URL+agent.CardPath, "")
	var dup *connector.DuplicateError
	if !errors.As(err, &dup) || dup.AgentID != a.ID {
		t.Errorf("second registration: %v; want a DuplicateError naming %s", err, a.ID)
	}
	// Another tenant neither sees it nor its key, and registers the agent as its own.
	if _, _, err := svc.WithCredential(t.Context(), other, a.ID); !errors.Is(err, connector.ErrNotFound) {
		t.Errorf("WithCredential of another tenant's agent: %v; want ErrNotFound", err)
	}
	b, _, err := svc.Register(t.Context(), other, demo.URL, "")
	if err != nil || b.CredentialsSet {
		t.Errorf("other tenant's registration: %+v, %v; want an agent without key", b, err)
	}
	if _, key, err := svc.WithCredential(t.Context(), other, b.ID); err != nil || key != nil {
		t.Errorf("WithCredential of an agent without key = %v, %v; want nil, nil", key, err)
	}
}

func TestRegisterRefusesWhatIsNoUsableCard(t *testing.T) {
	t.Parallel()
	cards := fixtureagent.NewCardHost(t, false)
	svc := newService(t, agents.Config{})
	tenant := testDB.NewTenant(t)
	st := store.New(testDB.Pool)

	_, _, err := svc.Register(t.Context(), tenant, fixtureagent.RefusedURL(t), "")
	var fe *cardfetch.FetchError
	if !errors.As(err, &fe) || fe.Kind != cardfetch.KindRefused {
		t.Errorf("nothing listening: %v; want a refused FetchError", err)
	}
	_, _, err = svc.Register(t.Context(), tenant, cards.URL+"/missing.json", "")
	if !errors.As(err, &fe) || fe.Kind != cardfetch.KindHTTPStatus || fe.StatusCode != http.StatusNotFound {
		t.Errorf("no card there: %v; want a FetchError with status 404", err)
	}
	_, _, err = svc.Register(t.Context(), tenant, cards.Set("/nameless.json", `{"protocolVersion": "0.2.5"}`), "key")
	var ce *agents.CardError
	if !errors.As(err, &ce) || len(ce.Problems) == 0 || ce.Problems[0].Severity != connector.SeverityError {
		t.Errorf("invalid card: %v; want a CardError with its problems, errors first", err)
	}
	if list, err := st.ListAgents(t.Context(), tenant); err != nil || len(list) != 0 {
		t.Errorf("agents after refusals = %v, %v; want none", list, err)
	}
}

func TestSecondCardForOneEndpointIsAWarning(t *testing.T) {
	t.Parallel()
	cards := fixtureagent.NewCardHost(t, false)
	svc := newService(t, agents.Config{})
	tenant := testDB.NewTenant(t)
	endpoint := "https://agent.example.com/a2a"

	first, warnings, err := svc.Register(t.Context(), tenant, cards.Set("/one.json", card("One", endpoint)), "")
	if err != nil || len(warnings) != 0 {
		t.Fatalf("first: %v, warnings %v; want none", err, warnings)
	}
	second, warnings, err := svc.Register(t.Context(), tenant, cards.Set("/two.json", card("Two", endpoint)), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || warnings[0].Code != agents.CodeDuplicateEndpoint || !strings.Contains(warnings[0].Message, first.ID) {
		t.Errorf("second: warnings %v; want one duplicate_endpoint naming %s", warnings, first.ID)
	}
	if len(second.Warnings) != 0 {
		t.Errorf("stored warnings %v; want none (duplicate_endpoint is said, not stored)", second.Warnings)
	}
	// Refreshing the first names the second.
	_, unchanged, warnings, err := svc.Refresh(t.Context(), tenant, first.ID)
	if err != nil || !unchanged || len(warnings) != 1 || !strings.Contains(warnings[0].Message, second.ID) {
		t.Errorf("refresh of the first: unchanged %v, warnings %v, %v; want unchanged naming %s", unchanged, warnings, err, second.ID)
	}
}

func TestRefreshStoresOnlyANewValidCard(t *testing.T) {
	t.Parallel()
	cards := fixtureagent.NewCardHost(t, false)
	svc := newService(t, agents.Config{})
	tenant := testDB.NewTenant(t)
	url := cards.Set("/agent.json", card("Weather", "https://agent.example.com/a2a"))
	a, _, err := svc.Register(t.Context(), tenant, url, "")
	if err != nil {
		t.Fatal(err)
	}

	got, unchanged, _, err := svc.Refresh(t.Context(), tenant, a.ID)
	if err != nil || !unchanged || got.Revision != 1 {
		t.Errorf("refresh of the same card: revision %d, unchanged %v, %v; want revision 1, unchanged", got.Revision, unchanged, err)
	}
	cards.Set("/agent.json", card("Weather 2", "https://agent.example.com/a2a"))
	got, unchanged, _, err = svc.Refresh(t.Context(), tenant, a.ID)
	if err != nil || unchanged || got.Revision != 2 || got.Name != "Weather 2" {
		t.Errorf("refresh of a new card: %q revision %d, unchanged %v, %v; want Weather 2 at revision 2", got.Name, got.Revision, unchanged, err)
	}
	cards.Set("/agent.json", `{"name": "broken"}`)
	var ce *agents.CardError
	if _, _, _, err := svc.Refresh(t.Context(), tenant, a.ID); !errors.As(err, &ce) {
		t.Errorf("refresh of a broken card: %v; want a CardError", err)
	}
	if live, _, err := svc.WithCredential(t.Context(), tenant, a.ID); err != nil || live.Revision != 2 || live.Name != "Weather 2" {
		t.Errorf("after a broken card the agent is %q at revision %d, %v; want Weather 2 at revision 2", live.Name, live.Revision, err)
	}
	if _, _, _, err := svc.Refresh(t.Context(), testDB.NewTenant(t), a.ID); !errors.Is(err, connector.ErrNotFound) {
		t.Errorf("refresh by another tenant: %v; want ErrNotFound", err)
	}
}

func TestUpdateSealsReplacesAndClearsTheKey(t *testing.T) {
	t.Parallel()
	cards := fixtureagent.NewCardHost(t, false)
	box := newBox(t)
	svc := newService(t, agents.Config{Secrets: box})
	tenant := testDB.NewTenant(t)
	a, _, err := svc.Register(t.Context(), tenant, cards.Set("/agent.json", card("Keyed", "https://agent.example.com/a2a")), "")
	if err != nil {
		t.Fatal(err)
	}
	ptr := func(s string) *string { return &s }
	off := false

	got, err := svc.Update(t.Context(), tenant, a.ID, agents.Patch{APIKey: ptr("new-key"), Enabled: &off})
	if err != nil || !got.CredentialsSet || got.Enabled {
		t.Fatalf("set key and disable: %+v, %v", got, err)
	}
	_, key, err := svc.WithCredential(t.Context(), tenant, a.ID)
	if err != nil || key == nil {
		t.Fatalf("WithCredential = %v, %v; want the key", key, err)
	}
	if plain, err := box.Open(a.ID, *key); err != nil || string(plain) != "new-key" {
		t.Errorf("the key opens to %q, %v; want new-key", plain, err)
	}
	got, err = svc.Update(t.Context(), tenant, a.ID, agents.Patch{APIKey: ptr("")})
	if err != nil || got.CredentialsSet || got.Enabled {
		t.Errorf("clear key: %+v, %v; want no key, still disabled", got, err)
	}
	if _, err := svc.Update(t.Context(), testDB.NewTenant(t), a.ID, agents.Patch{APIKey: ptr("x")}); !errors.Is(err, connector.ErrNotFound) {
		t.Errorf("another tenant sets the key: %v; want ErrNotFound", err)
	}
}

// Deleting an agent cancels at the agent the tasks of the holds that were live by the service's
// clock, and only those, and frees the sessions.
func TestDeleteCancelsLiveHeldTasks(t *testing.T) {
	t.Parallel()
	fx := fixtureagent.New(t)
	cards := fixtureagent.NewCardHost(t, false)
	box := newBox(t)
	inv := invoke.New(invoke.Options{Client: netguard.NewClient(loopback, netguard.ClientOptions{}), Secrets: box})
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	svc := newService(t, agents.Config{Secrets: box, Canceler: inv, Now: func() time.Time { return now }})
	tenant := testDB.NewTenant(t)
	a, _, err := svc.Register(t.Context(), tenant, cards.Set("/agent.json", card("Held", fx.URL)), "the-key")
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(testDB.Pool)
	for session, expires := range map[string]time.Time{"live": now.Add(time.Minute), "expired": now.Add(-time.Minute)} {
		if err := st.SaveTurn(t.Context(), connector.TurnRecord{TenantID: tenant, SessionID: session, AgentID: a.ID,
			TurnID: "t-" + session, StartedAt: time.Now(), SetHold: &connector.Hold{TaskID: "task-" + session,
				TurnID: "t-" + session, ExpiresAt: expires}}); err != nil {
			t.Fatal(err)
		}
	}

	if err := svc.Delete(t.Context(), tenant, a.ID); err != nil {
		t.Fatal(err)
	}
	// Close waits for the background cancels.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 30*time.Second)
	defer cancel()
	if err := inv.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"task-live"}, fx.Cancels()); diff != "" {
		t.Errorf("tasks/cancel sent (-want +got):\n%s", diff)
	}
	if _, _, err := svc.WithCredential(t.Context(), tenant, a.ID); !errors.Is(err, connector.ErrNotFound) {
		t.Errorf("WithCredential after delete: %v; want ErrNotFound", err)
	}
	if l, err := st.LookupTurn(t.Context(), tenant, "live", "", time.Now()); err != nil || l.Hold != nil {
		t.Errorf("session still held after delete: %+v, %v", l.Hold, err)
	}
	if err := svc.Delete(t.Context(), tenant, a.ID); !errors.Is(err, connector.ErrNotFound) {
		t.Errorf("second delete: %v; want ErrNotFound", err)
	}
}
