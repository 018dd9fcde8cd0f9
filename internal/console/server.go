// Package console is the HTTP JSON API behind the tenant console: tenants and their tokens
// (operator only; a tenant lists and revokes its own tokens), agent registration from a card
// URL, key rotation, refresh, and health; and
// the embedded web console page (GET /, GET /ui/{file}) that calls it with a pasted tenant token.
//
// Handlers return errors; writeError turns them into RFC 9457 problem+json in one place. The
// package never returns, logs or traces an API key (spans get the route and the tenant id only),
// and every agent query is scoped by the tenant of the bearer token: another tenant's agent is
// 404, never 403.
package console

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/admission"
	"github.com/a2a-connector/a2a-connector/internal/agents"
	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
	"github.com/a2a-connector/a2a-connector/internal/credential"
	"github.com/a2a-connector/a2a-connector/internal/identity"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
	"github.com/a2a-connector/a2a-connector/internal/probe"
	"github.com/a2a-connector/a2a-connector/internal/secret"
	"github.com/a2a-connector/a2a-connector/internal/store"
	"github.com/a2a-connector/a2a-connector/internal/tenants"
)

// MaxBodyBytes caps every request body.
const MaxBodyBytes = 64 << 10

// Config wires a Server.
type Config struct {
	Store      *store.Store
	Cards      *cardfetch.Fetcher
	Secrets    *secret.Box
	AdminToken string
	Logger     *slog.Logger
	// Invoker asks an agent to cancel the tasks it held when the agent is deleted; nil: no
	// cancel is sent.
	Invoker *invoke.Invoker
	// Router runs the test conversations of POST /v1/agents/{id}/test (and ends them) as the
	// connector runs the engine's sessions; nil answers 501.
	Router TurnRouter
	// Prober runs POST /v1/agents/{id}/check, limited per tenant by CheckLimit; nil answers 501.
	Prober     *probe.Prober
	CheckLimit CheckLimit
	// Health reads GET /v1/agents/{id}/health; nil answers 501.
	Health HealthSummaries
	// Admission caps the checks this process runs at once, as the connector caps turns (the
	// test turns are capped by Router's own); nil: no caps.
	Admission *admission.Limiter
	// VoiceExtension is the URI of the platform's voice extension (A2AC_VOICE_EXTENSION), which
	// the agent resource says each agent declares or not; "" is connector.VoiceExtensionURI.
	// Router and Prober must use the same.
	VoiceExtension string
	// Identity publishes the caller's identity keys (GET /.well-known/jwks.json) and rotates
	// them (POST /v1/identity/keys/rotate); nil answers 501.
	Identity *identity.Issuer
}

// Agents is the agents' lifecycle the console runs (*agents.Service): every read and change of
// an agent goes through it.
type Agents interface {
	Get(ctx context.Context, tenantID, agentID string) (connector.Agent, error)
	List(ctx context.Context, tenantID string) ([]connector.Agent, error)
	RegisteredAs(ctx context.Context, tenantID, cardURL, resolvedURL string) (string, error)
	RegisterAgent(ctx context.Context, tenantID, cardURL string, r agents.Registration) (connector.Agent, []connector.Problem, error)
	Refresh(ctx context.Context, tenantID, agentID string) (a connector.Agent, unchanged bool, warnings []connector.Problem, err error)
	Update(ctx context.Context, tenantID, agentID string, p agents.Patch) (connector.Agent, error)
	Delete(ctx context.Context, tenantID, agentID string) error
	WithCredential(ctx context.Context, tenantID, agentID string) (connector.Agent, *connector.Sealed, error)
	PreviewContext(ctx context.Context, caPEM string, cred *credential.Credential) (context.Context, error)
}

// Tenants is the tenants' lifecycle the console runs (*tenants.Service): tenants, their tokens
// and the authentication of tenant requests.
type Tenants interface {
	Create(ctx context.Context, name string) (t connector.Tenant, token string, tok store.Token, err error)
	AddToken(ctx context.Context, tenantID string) (token string, tok store.Token, err error)
	Authenticate(ctx context.Context, token string) (t connector.Tenant, tokenID string, err error)
	List(ctx context.Context) ([]store.TenantInfo, error)
	Get(ctx context.Context, tenantID string) (store.TenantInfo, error)
	SetLimits(ctx context.Context, tenantID string, l connector.TenantLimits) (store.TenantInfo, error)
	Delete(ctx context.Context, tenantID string) error
	Tokens(ctx context.Context, tenantID string) ([]store.Token, error)
	DeleteToken(ctx context.Context, tenantID, tokenID string) error
}

// Reads are what the console reads from the store itself (*store.Store): readiness, an agent's
// revisions (for "check my agent") and its circuit breakers (for its health).
type Reads interface {
	Ping(ctx context.Context) error
	Revisions(ctx context.Context, tenantID, agentID string) ([]store.RevisionInfo, error)
	DeploymentBreakers(ctx context.Context, tenantID, agentID string) ([]store.DeploymentBreaker, error)
	ReplicaBreakers(ctx context.Context, tenantID, agentID string) ([]store.ReplicaBreaker, error)
}

// Server serves the console API.
type Server struct {
	store     Reads
	cards     *cardfetch.Fetcher
	agents    Agents
	tenants   Tenants
	adminHash [sha256.Size]byte
	log       *slog.Logger
	router    TurnRouter
	prober    *probe.Prober
	checks    *checkLimiter
	health    HealthSummaries
	admit     *admission.Limiter
	voice     string
	identity  *identity.Issuer
	mux       *http.ServeMux
	routes    []route
	web       map[string]webAsset
}

type access int

const (
	public access = iota
	admin
	tenant
)

// route is one documented endpoint; the OpenAPI test compares this table with openapi.json.
type route struct {
	method, path string
	access       access
	handle       func(w http.ResponseWriter, r *http.Request) error
}

// newAgents is the lifecycle service of c's agents: every change to an agent goes through it.
func newAgents(c Config) *agents.Service {
	ac := agents.Config{Store: c.Store, Cards: c.Cards, Secrets: c.Secrets}
	if c.Invoker != nil {
		// Not a nil *Invoker in a non-nil interface: no invoker sends no cancel.
		ac.Canceler = c.Invoker
		ac.Authorizer = c.Invoker // cards behind authentication are fetched with the credentials
	}
	return agents.New(ac)
}

// New builds the server and registers its routes.
func New(c Config) *Server {
	s := &Server{
		store:     c.Store,
		cards:     c.Cards,
		agents:    newAgents(c),
		tenants:   tenants.New(c.Store),
		adminHash: sha256.Sum256([]byte(c.AdminToken)),
		log:       c.Logger,
		router:    c.Router,
		prober:    c.Prober,
		checks:    newCheckLimiter(c.CheckLimit),
		health:    c.Health,
		admit:     c.Admission,
		voice:     cmp.Or(c.VoiceExtension, connector.VoiceExtensionURI),
		identity:  c.Identity,
		mux:       http.NewServeMux(),
		web:       loadWebAssets(),
	}
	s.routes = []route{
		{"GET", "/healthz", public, s.healthz},
		{"GET", "/readyz", public, s.readyz},
		{"GET", "/openapi.json", public, s.openAPI},
		{"GET", "/api-docs", public, s.apiDocs},
		{"GET", "/.well-known/jwks.json", public, s.jwks},
		// The web console is public: the page and its assets hold no data; every call it makes
		// carries the tenant token the user pastes.
		{"GET", "/", public, s.webIndex},
		{"GET", "/ui/{file}", public, s.webAssetFile},
		{"POST", "/v1/tenants", admin, s.createTenant},
		{"GET", "/v1/tenants", admin, s.listTenants},
		{"GET", "/v1/tenants/{tenantId}", admin, s.getTenant},
		{"PATCH", "/v1/tenants/{tenantId}", admin, s.patchTenant},
		{"DELETE", "/v1/tenants/{tenantId}", admin, s.deleteTenant},
		{"POST", "/v1/tenants/{tenantId}/tokens", admin, s.createToken},
		{"GET", "/v1/tenants/{tenantId}/tokens", admin, s.listTenantTokens},
		{"DELETE", "/v1/tenants/{tenantId}/tokens/{tokenId}", admin, s.deleteTenantToken},
		{"POST", "/v1/identity/keys/rotate", admin, s.rotateIdentityKey},
		{"GET", "/v1/tokens", tenant, s.listOwnTokens},
		{"DELETE", "/v1/tokens/{tokenId}", tenant, s.deleteOwnToken},
		{"POST", "/v1/agents/validate", tenant, s.validateCard},
		{"POST", "/v1/agents", tenant, s.createAgent},
		{"GET", "/v1/agents", tenant, s.listAgents},
		{"GET", "/v1/agents/{id}", tenant, s.getAgent},
		{"PATCH", "/v1/agents/{id}", tenant, s.patchAgent},
		{"DELETE", "/v1/agents/{id}", tenant, s.deleteAgent},
		{"POST", "/v1/agents/{id}/refresh", tenant, s.refreshAgent},
		{"POST", "/v1/agents/{id}/test", tenant, s.testAgent},
		{"DELETE", "/v1/agents/{id}/test/{sessionId}", tenant, s.endTestSession},
		{"POST", "/v1/agents/{id}/check", tenant, s.checkAgent},
		{"GET", "/v1/agents/{id}/health", tenant, s.agentHealth},
	}
	for _, rt := range s.routes {
		pattern := rt.path
		if pattern == "/" {
			// "GET /" alone would be a prefix pattern catching every unknown GET path.
			pattern = "/{$}"
		}
		s.mux.Handle(rt.method+" "+pattern, s.wrap(rt))
	}
	return s
}

// Handler returns the http.Handler of the API.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// probeMethods are the methods tried to fill the Allow header of a 405.
var probeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
	http.MethodPatch, http.MethodDelete, http.MethodOptions}

// serveHTTP routes with the mux, and answers what it has no route for itself, as problem+json:
// 405 with Allow when the path is known under other methods, else 404. (The mux would answer
// both in plain text; a catch-all "/" route would turn every 405 into a 404.)
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pattern := s.mux.Handler(r); pattern != "" {
		s.mux.ServeHTTP(w, r)
		return
	}
	var allow []string
	for _, m := range probeMethods {
		probe := &http.Request{Method: m, URL: r.URL, Host: r.Host, Header: http.Header{}}
		if _, pattern := s.mux.Handler(probe); pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		s.writeError(w, r, errNoRoute)
		return
	}
	s.writeError(w, r, &apiError{status: http.StatusMethodNotAllowed, code: "method_not_allowed",
		detail: "This method is not allowed here; use " + strings.Join(allow, ", ") + ".",
		allow:  strings.Join(allow, ", ")})
}

type (
	tenantKey struct{}
	tokenKey  struct{}
)

func tenantFrom(ctx context.Context) connector.Tenant {
	t, _ := ctx.Value(tenantKey{}).(connector.Tenant)
	return t
}

// tokenIDFrom is the id of the tenant token that authenticated the request.
func tokenIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(tokenKey{}).(string)
	return id
}

// wrap adds body limits, authentication, error writing and one access-log line.
func (s *Server) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		r.Body = http.MaxBytesReader(rec, r.Body, MaxBodyBytes)
		if span := trace.SpanFromContext(r.Context()); span.IsRecording() {
			// The server span (telemetry.Providers.HTTPHandler) wraps the whole mux, so otelhttp
			// learns the route only after the handler and then renames the span without setting
			// http.route; the route is known here.
			span.SetAttributes(semconv.HTTPRoute(rt.path))
		}
		ctx, err := s.authenticate(r, rt.access)
		if err == nil {
			if span := trace.SpanFromContext(ctx); span.IsRecording() && rt.access == tenant {
				// The server span (telemetry.Providers.HTTPHandler) says whose request it was.
				span.SetAttributes(attribute.String("a2ac.tenant.id", tenantFrom(ctx).ID))
			}
			r = r.WithContext(ctx)
			err = rt.handle(rec, r)
		}
		if err != nil {
			s.writeError(rec, r, err)
		}
		if rt.access != public || rec.status >= 500 {
			s.log.LogAttrs(r.Context(), slog.LevelInfo, "http request",
				slog.String("method", r.Method), slog.String("route", rt.path),
				slog.Int("status", rec.status), slog.Duration("duration", time.Since(start)),
				slog.String("tenant_id", tenantFrom(r.Context()).ID))
		}
	})
}

// authenticate checks the bearer token for the route's access level and, for tenant routes,
// puts the tenant into the request context.
func (s *Server) authenticate(r *http.Request, a access) (context.Context, error) {
	ctx := r.Context()
	if a == public {
		return ctx, nil
	}
	token, ok := bearer(r)
	if !ok {
		return ctx, errUnauthenticated
	}
	switch a {
	case admin:
		h := sha256.Sum256([]byte(token))
		if subtle.ConstantTimeCompare(h[:], s.adminHash[:]) != 1 {
			return ctx, errUnauthenticated
		}
		return ctx, nil
	default:
		// By the token's SHA-256, read afresh: a revoked token fails on its next request.
		t, tokenID, err := s.tenants.Authenticate(ctx, token)
		if err != nil {
			return ctx, authError(err)
		}
		return context.WithValue(context.WithValue(ctx, tenantKey{}, t), tokenKey{}, tokenID), nil
	}
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	return strings.TrimSpace(h[len(prefix):]), true
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
