// Package agents is the lifecycle of a tenant's agent: register it from its card URL, refresh
// its card, change its key or switch it on and off, delete it, and read it with its sealed key.
// It is the one home of these jobs: the console API calls it for every change to an agent, and
// the connector's end-to-end tests register their agents through it.
//
// It fetches and judges cards through the card fetcher, seals keys with the secret box (the
// plaintext goes no further than Seal), and leaves storage to the store. It knows no HTTP: its
// errors are the store's (connector.ErrNotFound, *connector.DuplicateError), the fetcher's
// (*cardfetch.FetchError) and its own *CardError, and the console maps them to answers in its
// one table. It is not on the turn path: the session router reads agents through its own query.
package agents

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/agenttls"
	"github.com/a2a-connector/a2a-connector/internal/cardcheck"
	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
	"github.com/a2a-connector/a2a-connector/internal/credential"
	"github.com/a2a-connector/a2a-connector/internal/reqauth"
	"github.com/a2a-connector/a2a-connector/internal/secret"
)

// Store is the storage of agents the service uses (*store.Store).
type Store interface {
	CreateAgent(ctx context.Context, a connector.NewAgent) (connector.Agent, error)
	GetAgent(ctx context.Context, tenantID, agentID string) (connector.Agent, error)
	ListAgents(ctx context.Context, tenantID string) ([]connector.Agent, error)
	UpdateAgent(ctx context.Context, tenantID, agentID string, p connector.AgentPatch) (connector.Agent, error)
	AddRevision(ctx context.Context, tenantID, agentID string, r connector.Revision) (connector.Agent, bool, error)
	AgentsWithEndpoint(ctx context.Context, tenantID, endpointURL string) ([]string, error)
	// AgentWithCard is the agent CreateAgent would name in its *connector.DuplicateError; "" for none.
	AgentWithCard(ctx context.Context, tenantID, cardURL, resolvedURL string) (string, error)
	// AgentForTurn reads an agent and its sealed key (nil when none) in one query.
	AgentForTurn(ctx context.Context, tenantID, agentID string) (connector.Agent, *connector.Sealed, error)
	DeleteAgent(ctx context.Context, tenantID, agentID string) ([]connector.Hold, error)
}

// Cards fetches a card and judges it (*cardfetch.Fetcher). A fetch failure is a
// *cardfetch.FetchError; a card that was fetched comes with its report, valid or not.
type Cards interface {
	FetchAndValidateAuth(ctx context.Context, cardURL string, auth cardfetch.Auth) (cardfetch.Fetched, cardcheck.Report, error)
	// FetchExtended gets the skills of the authenticated extended card the profile offers.
	FetchExtended(ctx context.Context, p connector.CardProfile, authz reqauth.Func) ([]connector.Skill, error)
}

// CodeExtendedCardUnavailable is the warning that the card offers an authenticated extended
// card the connector could not get: the public card's skills are used.
const CodeExtendedCardUnavailable = "extended_card_unavailable"

// Authorizer authorizes requests with an agent's sealed credential (*invoke.Invoker): its
// headers, or a signature per request (AWS SigV4), for cards that are only served to callers
// with credentials.
type Authorizer interface {
	Authorizer(ctx context.Context, a *connector.Agent, sealed *connector.Sealed) (reqauth.Func, error)
	// TLSContext is ctx carrying the agent's own TLS (its CA bundle, its client certificate)
	// for the card fetches made with it.
	TLSContext(ctx context.Context, a *connector.Agent, sealed *connector.Sealed) (context.Context, error)
}

// Canceler asks an agent to cancel a task, best effort, in the background (*invoke.Invoker).
type Canceler interface {
	CancelTask(ctx context.Context, a connector.Agent, key *connector.Sealed, taskID string)
}

var _ Cards = (*cardfetch.Fetcher)(nil)

// Config wires a Service.
type Config struct {
	Store   Store
	Cards   Cards
	Secrets *secret.Box
	// Canceler cancels the tasks a deleted agent held; nil: no cancel is sent.
	Canceler Canceler
	// Authorizer sends the registration's credentials to a card URL that answers 401 or 403;
	// nil: such a card cannot be fetched.
	Authorizer Authorizer
	// Now is the clock that tells live holds from expired ones; nil means time.Now.
	Now func() time.Time
}

// Service runs the lifecycle of agents. It is safe for concurrent use.
type Service struct {
	store    Store
	cards    Cards
	secrets  *secret.Box
	canceler Canceler
	auth     Authorizer
	now      func() time.Time
}

// New returns the service c describes.
func New(c Config) *Service {
	s := &Service{store: c.Store, cards: c.Cards, secrets: c.Secrets, canceler: c.Canceler, auth: c.Authorizer, now: c.Now}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// CardError is a card that was fetched but does not meet the platform's requirements. Problems
// holds every finding, errors first, then warnings. Nothing is stored: a broken card never
// registers an agent, nor replaces the live revision of one.
type CardError struct {
	Problems []connector.Problem
}

func (e *CardError) Error() string {
	var codes []string
	for _, p := range e.Problems {
		if p.Severity == connector.SeverityError {
			codes = append(codes, p.Code)
		}
	}
	return "card invalid: " + strings.Join(codes, ", ")
}

// CodeDuplicateEndpoint is the warning that another agent of the tenant calls the same
// endpoint.
const CodeDuplicateEndpoint = "duplicate_endpoint"

// Register fetches and judges the card at cardURL and, when it is valid, stores the tenant's
// new agent, enabled, with apiKey sealed for it ("" stores no key). The card URL is stored as
// connector.CanonicalCardURL spells it, so two spellings of one URL are one registration.
//
// warnings are the agent's stored warnings and, said now but not stored, a duplicate_endpoint
// warning when other agents of the tenant call the same endpoint. Errors: *cardfetch.FetchError
// (no card), *CardError (card invalid), *connector.DuplicateError (the tenant has the card already).
func (s *Service) Register(ctx context.Context, tenantID, cardURL, apiKey string) (a connector.Agent, warnings []connector.Problem, err error) {
	var cred *credential.Credential
	if apiKey != "" {
		cred = &credential.Credential{Kind: connector.CredentialKindAPIKey, Secret: apiKey}
	}
	return s.RegisterWith(ctx, tenantID, cardURL, cred)
}

// RegisterWith is Register with any kind of credential (nil: none). A credential that cannot
// work, or of a kind the card does not take, is a *credential.FieldError and nothing is stored;
// an API key is taken whatever the card says, as it always was.
func (s *Service) RegisterWith(ctx context.Context, tenantID, cardURL string, cred *credential.Credential) (a connector.Agent, warnings []connector.Problem, err error) {
	return s.RegisterAgent(ctx, tenantID, cardURL, Registration{Credential: cred})
}

// Registration is what a tenant registers besides the card URL.
type Registration struct {
	// Credential is the agent's credential; nil for none.
	Credential *credential.Credential
	// TLSCAPem is the agent's CA bundle (PEM, CA certificates): the card fetch, and every
	// call of the agent later, trusts it besides the process-wide roots. "" for none.
	TLSCAPem string
	// CallerIdentity: send the agent the caller's identity token (connector.Agent.CallerIdentity).
	CallerIdentity bool
}

// RegisterAgent is RegisterWith with everything a registration may hold. A CA bundle that
// is not one is a *credential.FieldError naming tls.caPem.
func (s *Service) RegisterAgent(ctx context.Context, tenantID, cardURL string, r Registration) (a connector.Agent, warnings []connector.Problem, err error) {
	cred := r.Credential
	if cred != nil {
		if err := cred.Check(); err != nil {
			return connector.Agent{}, nil, err
		}
	}
	if err := checkCA(r.TLSCAPem); err != nil {
		return connector.Agent{}, nil, err
	}
	cardURL = connector.CanonicalCardURL(cardURL)
	na := connector.NewAgent{ID: uuid.NewString(), TenantID: tenantID, CardURL: cardURL, Enabled: true, TLSCAPem: r.TLSCAPem,
		CallerIdentity: r.CallerIdentity}
	if cred != nil {
		// Sealed before the fetch: a card behind authentication is fetched with it.
		if na.Credential, err = s.seal(na.ID, *cred); err != nil {
			return connector.Agent{}, nil, err
		}
		na.CredentialKind = cred.Kind
	}
	// The agent is not stored yet: its card is fetched with the TLS the POST carries.
	if ctx, err = s.tlsContext(ctx, connector.Agent{ID: na.ID, CredentialSetKind: na.CredentialKind, TLSCAPem: na.TLSCAPem}, na.Credential); err != nil {
		return connector.Agent{}, nil, err
	}
	fetched, report, err := s.cards.FetchAndValidateAuth(ctx, cardURL, s.cardAuth(connector.Agent{ID: na.ID, CredentialSetKind: na.CredentialKind}, na.Credential))
	if err != nil {
		return connector.Agent{}, nil, fmt.Errorf("register agent: %w", err)
	}
	if !report.Valid {
		return connector.Agent{}, nil, &CardError{Problems: report.Problems}
	}
	if cred != nil {
		if err := fits(*cred, report.Profile); err != nil {
			return connector.Agent{}, nil, err
		}
	}
	report = s.extended(ctx, connector.Agent{ID: na.ID, CredentialSetKind: na.CredentialKind, TLSCAPem: na.TLSCAPem}, na.Credential, report)
	na.ResolvedCardURL, na.Card, na.Profile, na.Warnings = fetched.ResolvedURL, report.Card, report.Profile, warningsOf(report.Problems)
	a, err = s.store.CreateAgent(ctx, na)
	if err != nil {
		return connector.Agent{}, nil, fmt.Errorf("register agent: %w", err)
	}
	warnings, err = s.endpointWarnings(ctx, a)
	if err != nil {
		return connector.Agent{}, nil, err
	}
	return a, warnings, nil
}

// RegisteredAs returns the id of the tenant's agent that has the card at cardURL already, the
// card having been fetched from resolvedURL: the agent Register would name in its
// *connector.DuplicateError. "" when registering the card would store a new agent. A preview
// says it before the tenant registers.
func (s *Service) RegisteredAs(ctx context.Context, tenantID, cardURL, resolvedURL string) (string, error) {
	id, err := s.store.AgentWithCard(ctx, tenantID, connector.CanonicalCardURL(cardURL), resolvedURL)
	if err != nil {
		return "", fmt.Errorf("registered as: %w", err)
	}
	return id, nil
}

// Refresh fetches the agent's card again and, when it is valid and differs from the live
// revision, stores it as the next revision. unchanged: the card, where it came from and what the
// platform makes of it are what the live revision has, and nothing was stored. warnings are as
// for Register. Errors are Register's, and connector.ErrNotFound for no such agent of the
// tenant.
func (s *Service) Refresh(ctx context.Context, tenantID, agentID string) (a connector.Agent, unchanged bool, warnings []connector.Problem, err error) {
	a, sealed, err := s.store.AgentForTurn(ctx, tenantID, agentID)
	if err != nil {
		return connector.Agent{}, false, nil, fmt.Errorf("refresh agent: %w", err)
	}
	if ctx, err = s.tlsContext(ctx, a, sealed); err != nil {
		return connector.Agent{}, false, nil, err
	}
	fetched, report, err := s.cards.FetchAndValidateAuth(ctx, a.CardURL, s.cardAuth(a, sealed))
	if err != nil {
		return connector.Agent{}, false, nil, fmt.Errorf("refresh agent %s: %w", a.ID, err)
	}
	if !report.Valid {
		return connector.Agent{}, false, nil, &CardError{Problems: report.Problems}
	}
	report = s.extended(ctx, a, sealed, report)
	a, added, err := s.store.AddRevision(ctx, tenantID, a.ID, connector.Revision{
		ResolvedCardURL: fetched.ResolvedURL, Card: report.Card, Profile: report.Profile,
		Warnings: warningsOf(report.Problems),
	})
	if err != nil {
		return connector.Agent{}, false, nil, fmt.Errorf("refresh agent: %w", err)
	}
	warnings, err = s.endpointWarnings(ctx, a)
	if err != nil {
		return connector.Agent{}, false, nil, err
	}
	return a, !added, warnings, nil
}

// Patch changes an agent's settings; nil fields stay as they are.
type Patch struct {
	// APIKey: "" removes the credential, any other string replaces it with this API key
	// (sealed for the agent).
	APIKey *string
	// Credential replaces the agent's credential, of whatever kind; with APIKey it is
	// ErrInvalid.
	Credential *credential.Credential
	// TLSCAPem replaces the agent's CA bundle; "" removes it.
	TLSCAPem *string
	Enabled  *bool
	// CallerIdentity turns the caller's identity token on or off.
	CallerIdentity *bool
}

// Update applies p and returns the agent as it now is. An agent that is not the tenant's is
// connector.ErrNotFound, and nothing is sealed for its id.
func (s *Service) Update(ctx context.Context, tenantID, agentID string, p Patch) (connector.Agent, error) {
	patch := connector.AgentPatch{Enabled: p.Enabled, TLSCAPem: p.TLSCAPem, CallerIdentity: p.CallerIdentity}
	if p.TLSCAPem != nil {
		if err := checkCA(*p.TLSCAPem); err != nil {
			return connector.Agent{}, err
		}
	}
	cred := p.Credential
	switch {
	case p.APIKey != nil && cred != nil:
		return connector.Agent{}, fmt.Errorf("update agent: both apiKey and credentials: %w", connector.ErrInvalid)
	case p.APIKey == nil:
	case *p.APIKey == "":
		patch.ClearCredential = true
	default:
		cred = &credential.Credential{Kind: connector.CredentialKindAPIKey, Secret: *p.APIKey}
	}
	if cred != nil {
		if err := cred.Check(); err != nil {
			return connector.Agent{}, err
		}
		// Check the agent is this tenant's before sealing anything for its id.
		cur, err := s.store.GetAgent(ctx, tenantID, agentID)
		if err != nil {
			return connector.Agent{}, fmt.Errorf("update agent: %w", err)
		}
		if err := fits(*cred, cur.CardProfile); err != nil {
			return connector.Agent{}, err
		}
		sealed, err := s.seal(agentID, *cred)
		if err != nil {
			return connector.Agent{}, err
		}
		patch.Credential, patch.CredentialKind = sealed, cred.Kind
	}
	a, err := s.store.UpdateAgent(ctx, tenantID, agentID, patch)
	if err != nil {
		return connector.Agent{}, fmt.Errorf("update agent: %w", err)
	}
	return a, nil
}

// Delete removes the agent, with its revisions, and frees the sessions it held. The tasks of
// holds that were still live are canceled at the agent, best effort, in the background: the
// agent and its key are read before they are gone.
func (s *Service) Delete(ctx context.Context, tenantID, agentID string) error {
	a, key, err := s.store.AgentForTurn(ctx, tenantID, agentID)
	if err != nil {
		return fmt.Errorf("delete agent: %w", err)
	}
	released, err := s.store.DeleteAgent(ctx, tenantID, agentID)
	if err != nil {
		return fmt.Errorf("delete agent: %w", err)
	}
	if s.canceler == nil {
		return nil
	}
	now := s.now()
	for _, h := range released {
		if h.ExpiresAt.After(now) && h.TaskID != "" {
			s.canceler.CancelTask(ctx, a, key, h.TaskID)
		}
	}
	return nil
}

// Get reads an agent of the tenant (connector.ErrNotFound when the tenant has none of that id).
func (s *Service) Get(ctx context.Context, tenantID, agentID string) (connector.Agent, error) {
	return s.store.GetAgent(ctx, tenantID, agentID)
}

// List reads the tenant's agents.
func (s *Service) List(ctx context.Context, tenantID string) ([]connector.Agent, error) {
	return s.store.ListAgents(ctx, tenantID)
}

// WithCredential returns the tenant's agent at its live revision and its sealed API key (nil when none),
// read together. An agent that is not the tenant's is connector.ErrNotFound.
func (s *Service) WithCredential(ctx context.Context, tenantID, agentID string) (connector.Agent, *connector.Sealed, error) {
	a, key, err := s.store.AgentForTurn(ctx, tenantID, agentID)
	if err != nil {
		return connector.Agent{}, nil, fmt.Errorf("agent with key: %w", err)
	}
	return a, key, nil
}

func (s *Service) seal(agentID string, c credential.Credential) (*connector.Sealed, error) {
	plain, err := c.Plaintext()
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", agentID, err)
	}
	sealed, err := s.secrets.Seal(agentID, plain)
	clear(plain)
	if err != nil {
		return nil, fmt.Errorf("agent %s: seal %s: %w", agentID, c.Kind, err)
	}
	return &sealed, nil
}

// checkCA refuses a CA bundle that is not one, naming tls.caPem; "" is none.
func checkCA(caPEM string) error {
	if caPEM == "" {
		return nil
	}
	if _, err := agenttls.CheckCA(caPEM); err != nil {
		return &credential.FieldError{Field: "tls.caPem", Reason: err.Error()}
	}
	return nil
}

// PreviewContext is ctx carrying the TLS a registration with caPEM and cred would have (its CA
// bundle, its client certificate; either may be missing), for a preview of its card before
// anything is stored. Their refusals are *credential.FieldError naming the field, as
// RegisterAgent's.
func (s *Service) PreviewContext(ctx context.Context, caPEM string, cred *credential.Credential) (context.Context, error) {
	if err := checkCA(caPEM); err != nil {
		return ctx, err
	}
	// An id of its own, as a registration's: the Identity is cached under it, apart from every
	// stored agent's.
	a := connector.Agent{ID: uuid.NewString(), TLSCAPem: caPEM}
	var sealed *connector.Sealed
	if cred != nil {
		if err := cred.Check(); err != nil {
			return ctx, err
		}
		var err error
		if sealed, err = s.seal(a.ID, *cred); err != nil {
			return ctx, err
		}
		a.CredentialSetKind = cred.Kind
	}
	return s.tlsContext(ctx, a, sealed)
}

// tlsContext is ctx carrying a's own TLS (CA bundle, client certificate) for its card
// fetches; ctx as it is without an Authorizer or without either.
func (s *Service) tlsContext(ctx context.Context, a connector.Agent, sealed *connector.Sealed) (context.Context, error) {
	if s.auth == nil {
		return ctx, nil
	}
	tctx, err := s.auth.TLSContext(ctx, &a, sealed)
	if err != nil {
		return ctx, fmt.Errorf("agent %s: %w", a.ID, err)
	}
	return tctx, nil
}

// cardAuth sends the agent's credential to a card URL that refuses to answer without it; nil
// when there is none to send.
func (s *Service) cardAuth(a connector.Agent, sealed *connector.Sealed) cardfetch.Auth {
	if sealed == nil || s.auth == nil {
		return nil
	}
	return func(ctx context.Context) (reqauth.Func, error) {
		return s.auth.Authorizer(ctx, &a, sealed)
	}
}

// extended replaces the report's skills with those of the authenticated extended card, when the
// card offers one and the agent has credentials to ask with; when it cannot be had, a warning
// says so and the public card's skills stay.
func (s *Service) extended(ctx context.Context, a connector.Agent, sealed *connector.Sealed, report cardcheck.Report) cardcheck.Report {
	if !report.Profile.ExtendedCard || sealed == nil || s.auth == nil {
		return report
	}
	a.CardProfile = report.Profile
	authz, err := s.auth.Authorizer(ctx, &a, sealed)
	var skills []connector.Skill
	if err == nil {
		skills, err = s.cards.FetchExtended(ctx, report.Profile, authz)
	}
	if err != nil {
		report.Problems = append(report.Problems, connector.Problem{Code: CodeExtendedCardUnavailable, Severity: connector.SeverityWarning,
			Message: "The card offers an authenticated extended card, but it could not be had (" + err.Error() + "); the public card's skills are used."})
		return report
	}
	report.Profile.Skills = skills
	return report
}

// fits refuses a credential of a kind the card does not take: it could never be sent the way
// the agent wants (connector.CredentialFits: the bearer kinds stand in for one another). An API
// key is always taken (a key for a card that asks for nothing was
// accepted before kinds existed), and so is anything for a card that asks for nothing.
func fits(c credential.Credential, p connector.CardProfile) error {
	want := p.Credential()
	if c.Kind == connector.CredentialKindAPIKey || want == connector.CredentialKindNone ||
		connector.CredentialFits(c.Kind, want) || slices.ContainsFunc(p.CredentialKinds, func(k string) bool { return connector.CredentialFits(c.Kind, k) }) {
		return nil
	}
	return &credential.FieldError{Field: "credentials." + c.Kind,
		Reason: fmt.Sprintf("the agent's card asks for %s, not %s", want, c.Kind)}
}

// endpointWarnings is a's stored warnings, plus a duplicate_endpoint warning when other agents
// of the tenant call a's endpoint: one agent registered twice under two card URLs (which the
// store refuses only when the cards came from the same place). It is said when registering and
// refreshing, not stored: it holds only as long as the other agent does. Never nil.
func (s *Service) endpointWarnings(ctx context.Context, a connector.Agent) ([]connector.Problem, error) {
	warnings := append([]connector.Problem{}, a.Warnings...)
	if a.EndpointURL == "" {
		return warnings, nil
	}
	ids, err := s.store.AgentsWithEndpoint(ctx, a.TenantID, a.EndpointURL)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", a.ID, err)
	}
	var others []string
	for _, id := range ids {
		if id != a.ID {
			others = append(others, id)
		}
	}
	if len(others) == 0 {
		return warnings, nil
	}
	return append(warnings, connector.Problem{
		Code: CodeDuplicateEndpoint, Severity: connector.SeverityWarning,
		Message: fmt.Sprintf("Your agent %s already calls the endpoint %s, from another card URL. "+
			"If both are the same agent, delete one: the dialog engine would see it twice.", strings.Join(others, ", "), a.EndpointURL),
	}), nil
}

// warningsOf is the problems of warning severity: what is stored with a valid card.
func warningsOf(problems []connector.Problem) []connector.Problem {
	out := []connector.Problem{}
	for _, p := range problems {
		if p.Severity == connector.SeverityWarning {
			out = append(out, p)
		}
	}
	return out
}
