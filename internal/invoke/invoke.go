// Package invoke runs one user turn against one A2A agent: it builds the message and headers,
// streams or sends it on the wire of the card's interface (A2A 1.0 SendStreamingMessage, or 0.x
// message/stream on `{url}/stream` falling back to `url`; the send forms poll the task while it
// works), resumes a lost stream, assembles the reply text and streams it as deltas, ends the turn
// at the first interrupted or terminal state, maps the result to a connector.Outcome, and cancels
// the agent's task when our side gives up on it (cancelAfter). See docs/architecture.md §4, step 3.
//
// It refuses to know about sessions and holds (internal/session decides what an outcome means for
// the dialog), to store anything, to retry beyond the wire client's policy (internal/a2a), to
// follow redirects, and to log user text or API keys above debug level or put them in errors,
// spans or metrics. A turn never returns a Go error: every agent failure is a Result with
// Outcome FAILED and a reason.
package invoke

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/stats"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/a2a"
	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
	"github.com/a2a-connector/a2a-connector/internal/agenttls"
	"github.com/a2a-connector/a2a-connector/internal/breaker"
	"github.com/a2a-connector/a2a-connector/internal/credential"
	"github.com/a2a-connector/a2a-connector/internal/identity"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/reqauth"
	"github.com/a2a-connector/a2a-connector/internal/secret"
)

// Defaults of Options.
const (
	DefaultTurnTimeout       = 30 * time.Second
	DefaultFirstEventTimeout = 10 * time.Second
	DefaultIdleTimeout       = 15 * time.Second
	DefaultPollInterval      = 250 * time.Millisecond
	DefaultCancelTimeout     = 3 * time.Second
	DefaultMaxTextBytes      = 256 << 10

	// maxPollInterval caps the tasks/get backoff.
	maxPollInterval = 2 * time.Second
	// extensionsHeader activates extensions at the agent (the 1.0 wire adds A2A-Extensions).
	extensionsHeader = a2aclient.LegacyExtensionsHeader
)

// Options configure an Invoker. Zero values mean the defaults.
type Options struct {
	// Client sends every agent call. It must be the netguard client built with MaxRedirects 0
	// (agent calls never follow redirects: Go would forward X-API-KEY to the new host), wrapped
	// for tracing by the caller. Nil means a netguard client with the zero Policy (https to
	// public addresses only).
	Client *http.Client
	// GRPCPolicy is the SSRF policy of agent calls over gRPC (they dial on their own, not
	// through Client): every address checked, https with TLS, plain http only where the policy
	// allows it. Nil: the zero Policy (https to public addresses only). Give the one Client's
	// policy.
	GRPCPolicy *netguard.Policy
	// RootCAs verifies agents' certificates on gRPC (HTTP calls verify with Client's, which
	// should be built with the same pool: netguard.ClientOptions.RootCAs); nil: the system
	// roots. The binaries give the system roots plus A2AC_AGENT_CA_FILE.
	RootCAs *x509.CertPool
	// GRPCStatsHandler instruments the agent calls over gRPC (telemetry's
	// AgentGRPCStatsHandler: a client span per call, as the HTTP client's transport wrapper
	// does for HTTP); nil: none.
	GRPCStatsHandler stats.Handler
	// Secrets opens the sealed API keys. Nil: a turn with an API key fails with code "api_key".
	Secrets *secret.Box
	// Identity signs the caller's identity token that agents with CallerIdentity receive on
	// every call of a turn naming a user (identity.Header); nil: such a turn fails with code
	// "api_key", saying no issuer is configured.
	Identity *identity.Issuer
	// TLS builds and keeps the TLS of agents with a CA bundle or client certificate of their
	// own; nil: a cache of this Invoker's own over RootCAs.
	TLS *agenttls.Cache
	// Tokens fetches and caches OAuth 2.0 access tokens; nil: a cache of this Invoker's own,
	// fetching through Client (so token URLs pass the same SSRF guard as agent calls).
	Tokens *credential.Tokens
	// TurnTimeout bounds a turn (default 30s); the deadline is min(ctx's deadline, this).
	TurnTimeout time.Duration
	// FirstEventTimeout bounds the wait for the first stream event, connecting included
	// (default 10s).
	FirstEventTimeout time.Duration
	// IdleTimeout bounds the wait between two stream events (default 15s). Keep-alive comments
	// do not count as events.
	IdleTimeout time.Duration
	// PollInterval is the first wait before tasks/get for a non-streaming task still submitted
	// or working (default 250ms); it doubles up to 2s.
	PollInterval time.Duration
	// CancelTimeout bounds a best-effort tasks/cancel (default 3s).
	CancelTimeout time.Duration
	// MaxRetries is how often the wire client may retry one call that got no response or 429,
	// 502, 503, 504 (0: a2aclient.DefaultMaxRetries; negative: never), when RetryBudget allows it.
	MaxRetries int
	// RetryBudget bounds the retries per agent endpoint across calls (a2aclient.RetryBudget); nil:
	// only MaxRetries bounds them. Share one per process.
	RetryBudget *a2aclient.RetryBudget
	// Breaker stops calling agents that are down (see breaker.Breaker); nil: no circuit breaking. Share
	// one per process, so that every Invoker of the process (the console's probes too) sees the
	// same agents down.
	Breaker *breaker.Breaker
	// MaxTextBytes caps the reply text (default 256 KiB).
	MaxTextBytes int
	// Logger receives debug traces of turns and the results of background cancels (default:
	// discard). User text and keys are never logged.
	Logger *slog.Logger
	// TracerProvider traces each turn (span invoke.Turn, with an event at the first text) so
	// that the agent calls' client spans hang below it; nil: no tracing.
	TracerProvider trace.TracerProvider
	// MeterProvider measures agent errors and open streams (a2ac.agent.errors,
	// a2ac.streams.active); nil: no metrics.
	MeterProvider metric.MeterProvider
	// Observe, when set, is told how the agent answered each call of every turn, on every
	// binding (a2aclient.Exchange): the console's "check my agent" judges agents by it.
	Observe func(a2aclient.Exchange)
	// OnFallback, when set, is told that an agent's turns moved to its card's fallback
	// interface (its preferred one refused the version or binding) at the agent's revision,
	// once per agent, card and replica, in the background and bounded by CancelTimeout; an
	// error is logged. The binaries record it in the store (store.MarkOnFallback, read back as
	// connector.Agent.OnFallback), so that every replica and the console know which interface
	// turns use.
	OnFallback func(ctx context.Context, tenantID, agentID string, revision int) error
}

// Invoker runs turns. It is safe for concurrent use; create one per process and Close it at
// shutdown, after the turns have drained.
type Invoker struct {
	tls     *agenttls.Cache
	client  *a2aclient.Client
	secrets *secret.Box
	tokens  *credential.Tokens
	opts    Options
	log     *slog.Logger
	obs     *observer

	// streamOnBase remembers agents whose `{url}/stream` answered 404/405 and that serve
	// message/stream on `url` itself (standard A2A servers do). Keyed by agent id and endpoint,
	// so a card update that changes the url starts over. It lives in this replica's memory only:
	// another replica learns the same fact with one extra 404 of its own, which costs a round
	// trip and nothing else, so sharing it through the store is not worth a write per agent.
	// It grows by one entry per agent and endpoint, which stays small.
	streamOnBase sync.Map // streamKey -> struct{}

	// onFallback remembers agents whose card's preferred interface refused our protocol version
	// and whose other interface (connector.CardProfile.Fallback) answered, so that later turns
	// go there at once. Like streamOnBase it is a per-replica cache of a fact any replica
	// relearns with one refused call, keyed so that a changed card starts over.
	onFallback sync.Map // fallbackKey -> struct{}

	// signers keeps each agent's SigV4 signer across turns (signers.go).
	signers signers

	// bg tracks background tasks/cancel calls; mu guards closed so that no call is added after
	// Close started waiting.
	bg     sync.WaitGroup
	mu     sync.Mutex
	closed bool
}

type streamKey struct{ agentID, endpoint string }

type fallbackKey struct{ agentID, endpoint, fallback string }

// route is one interface of an agent: where a turn sends its calls, in which wire and binding.
// Only the route knows the binding; the rest of the turn reads neutral events.
type route struct {
	url     string
	wire    a2aclient.Wire
	binding a2aclient.Binding
	tenant  string
	version string // as the card states it, for logs and traces
}

func (r route) endpoint(url string, hdr callAuth) a2aclient.Endpoint {
	// The interface's URL keys the retry budget, so that `{url}/stream`, `url` and the task
	// calls of one agent share it.
	return a2aclient.Endpoint{URL: url, Wire: r.wire, Binding: r.binding, Tenant: r.tenant, Header: hdr.header, Authorize: hdr.sign, BudgetKey: r.url}
}

// streamsOnSuffix reports whether the route streams on `{url}/stream` first: the platform's
// convention, for 0.x JSON-RPC agents only (1.0 and HTTP+JSON have their own stream paths).
func (r route) streamsOnSuffix() bool {
	return r.wire == a2aclient.WireV0 && r.binding == a2aclient.BindingJSONRPC
}

func routeOf(url, version, tenant, binding string) route {
	// cardcheck chose a binding the connector speaks; an unknown name here (a stored profile
	// from a newer replica) is tried as JSON-RPC, the binding every agent had before.
	b, _ := a2aclient.BindingFor(binding)
	return route{url: url, wire: a2aclient.WireFor(version), binding: b, tenant: tenant, version: version}
}

// routes returns the interface a turn starts on and the one it may switch to: the card's
// preferred interface and its fallback, or, once turns moved to the fallback (this replica
// saw it, or the store says so), the fallback alone.
func (inv *Invoker) routes(a *connector.Agent) (route, *route) {
	primary := routeOf(a.EndpointURL, a.ProtocolVersion, a.EndpointTenant, a.EndpointBinding)
	fb := a.Fallback
	if fb == nil || fb.URL == "" {
		return primary, nil
	}
	alt := routeOf(fb.URL, fb.ProtocolVersion, fb.Tenant, fb.Binding)
	if alt.wire == primary.wire && alt.binding == primary.binding && alt.url == primary.url {
		return primary, nil
	}
	if a.OnFallback {
		return alt, nil
	}
	if _, ok := inv.onFallback.Load(fallbackKey{agentID: a.ID, endpoint: a.EndpointURL, fallback: fb.URL}); ok {
		return alt, nil
	}
	return primary, &alt
}

// remember records that agent a's turns moved to its fallback interface, and has
// Options.OnFallback record it beyond this replica the first time.
func (inv *Invoker) remember(ctx context.Context, a *connector.Agent, to route) {
	if a.Fallback == nil || to.url != a.Fallback.URL {
		return
	}
	key := fallbackKey{agentID: a.ID, endpoint: a.EndpointURL, fallback: a.Fallback.URL}
	if _, known := inv.onFallback.LoadOrStore(key, struct{}{}); known || a.OnFallback || inv.opts.OnFallback == nil {
		return
	}
	tenantID, agentID, revision := a.TenantID, a.ID, a.Revision
	inv.background(ctx, "move to the fallback interface not recorded", agentID, func(ctx context.Context) {
		if err := inv.opts.OnFallback(ctx, tenantID, agentID, revision); err != nil {
			inv.log.WarnContext(ctx, "move to the fallback interface not recorded", "agent_id", agentID, "error", err.Error())
		}
	})
}

// background runs fn on its own goroutine, with ctx's values but not its end, bounded by
// CancelTimeout; Close waits for it. After Close it is dropped, with a warning saying what.
func (inv *Invoker) background(ctx context.Context, dropped, agentID string, fn func(ctx context.Context)) {
	inv.mu.Lock()
	if inv.closed {
		inv.mu.Unlock()
		inv.log.WarnContext(ctx, dropped+": invoker closed", "agent_id", agentID)
		return
	}
	inv.bg.Add(1)
	inv.mu.Unlock()
	bgCtx := context.WithoutCancel(ctx)
	go func() {
		defer inv.bg.Done()
		ctx, cancel := context.WithTimeout(bgCtx, inv.opts.CancelTimeout)
		defer cancel()
		fn(ctx)
	}()
}

// New returns an Invoker.
func New(o Options) *Invoker {
	if o.Client == nil {
		o.Client = netguard.NewClient(netguard.Policy{}, netguard.ClientOptions{InlineHTTP1: true})
	}
	if o.TurnTimeout <= 0 {
		o.TurnTimeout = DefaultTurnTimeout
	}
	if o.FirstEventTimeout <= 0 {
		o.FirstEventTimeout = DefaultFirstEventTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.CancelTimeout <= 0 {
		o.CancelTimeout = DefaultCancelTimeout
	}
	if o.MaxTextBytes <= 0 {
		o.MaxTextBytes = DefaultMaxTextBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Tokens == nil {
		o.Tokens = credential.NewTokens(credential.TokensOptions{Client: o.Client})
	}
	if o.TLS == nil {
		o.TLS = agenttls.NewCache(o.RootCAs, nil)
	}
	pol := netguard.Policy{}
	if o.GRPCPolicy != nil {
		pol = *o.GRPCPolicy
	}
	grpcOpts := a2aclient.GRPCOptions{Dial: pol.Dialer(0), CheckURL: pol.CheckURL, StatsHandler: o.GRPCStatsHandler}
	if o.RootCAs != nil {
		grpcOpts.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: o.RootCAs}
	}
	return &Invoker{
		tls:     o.TLS,
		tokens:  o.Tokens,
		client:  a2aclient.NewClient(o.Client, a2aclient.ClientOptions{MaxRetries: o.MaxRetries, RetryBudget: o.RetryBudget, GRPC: grpcOpts, Observe: o.Observe}),
		secrets: o.Secrets,
		opts:    o,
		log:     o.Logger,
		obs:     newObserver(o.TracerProvider, o.MeterProvider, o.Logger),
	}
}

// Turn runs one turn. emit is called synchronously, in order, from the calling goroutine, and
// never after Turn returns. Turn never panics on agent input and returns within the turn
// deadline plus a little slack, with a Result that is never nil.
func (inv *Invoker) Turn(ctx context.Context, req connector.TurnRequest, emit func(connector.TurnEvent)) *connector.TurnResult {
	if emit == nil {
		emit = func(connector.TurnEvent) {}
	}
	ctx, span := inv.obs.start(ctx, req)
	turnCtx, cancel := context.WithTimeout(ctx, inv.opts.TurnTimeout)
	defer cancel()
	t := newTurn(inv, span, ctx, turnCtx, &req, emit)
	// Checked first: the arguments of a disabled Debug call are still boxed, every turn.
	debug := inv.log.Enabled(ctx, slog.LevelDebug)
	if debug {
		t.logStart()
	}
	var res *connector.TurnResult
	if refused := t.admit(); refused != nil {
		res = refused
	} else {
		res = t.result(t.run())
	}
	if debug {
		t.logEnd(res)
	}
	inv.obs.end(ctx, span, res)
	return res
}

// admit asks the breaker for the turn; a refused turn gets its Result at once. Our side ended
// it without calling the agent, so it counts as interrupted: the hold stays as it was.
func (t *turn) admit() *connector.TurnResult {
	b := t.inv.opts.Breaker
	if b == nil || t.req.Agent.EndpointURL == "" {
		return nil
	}
	rt, _ := t.inv.routes(t.req.Agent)
	tk, refused := b.Allow(t.parent, t.req.Agent, rt.url)
	if refused != nil {
		return &connector.TurnResult{Outcome: connector.OutcomeFailed, Err: refused, Interrupted: true,
			TaskID: t.req.TaskID, ContextID: t.req.ContextID}
	}
	t.ticket = &tk
	return nil
}

// rekey moves the turn's breaker ticket to the interface the turn moved to (t.rt), so that how
// the turn goes is told to that interface's breaker: the one it left answered (it refused the
// protocol version), which is all that turn says about it. It returns the refusal when the new
// interface's breaker is open.
func (t *turn) rekey() *connector.TurnError {
	if t.ticket == nil {
		return nil
	}
	b := t.inv.opts.Breaker
	b.Done(t.parent, *t.ticket, up, "")
	t.ticket = nil
	tk, refused := b.Allow(t.parent, t.req.Agent, t.rt.url)
	if refused != nil {
		t.refusal = refused
		return refused
	}
	t.ticket = &tk
	return nil
}

// report tells the breaker how an admitted turn went.
func (t *turn) report(f *failure, res *connector.TurnResult) {
	if t.ticket == nil {
		return
	}
	v := t.verdict(f)
	cause := ""
	if v == down && res.Err != nil {
		cause = res.Err.Code + ": " + a2aclient.Clip(res.Err.Message, 200, "…")
	}
	t.inv.opts.Breaker.Done(t.parent, *t.ticket, v, cause)
}

// newTurn puts the turn's state on the heap. Not inlined on purpose: inlined, the turn lived in
// Turn's stack frame, which stays on the goroutine's stack while the agent streams; a parked
// turn's stack must fit in 8 KiB (docs/performance.md, "Goroutine stacks of open streams").
//
//go:noinline
func newTurn(inv *Invoker, span trace.Span, parent, ctx context.Context, req *connector.TurnRequest, emit func(connector.TurnEvent)) *turn {
	return &turn{
		inv:       inv,
		span:      span,
		parent:    parent,
		ctx:       ctx,
		req:       *req,
		emit:      emit,
		asm:       newAssembler(inv.opts.MaxTextBytes),
		taskID:    req.TaskID,
		contextID: req.ContextID,
	}
}

func (t *turn) logStart() {
	t.inv.log.DebugContext(t.parent, "turn start", "agent_id", t.req.Agent.ID, "streaming", t.req.Agent.Streaming,
		"continuing", t.req.TaskID != "", "text_bytes", len(t.req.Text))
}

func (t *turn) logEnd(res *connector.TurnResult) {
	t.inv.log.DebugContext(t.parent, "turn end", "agent_id", t.req.Agent.ID, "outcome", res.Outcome, "state", res.State,
		"task_id", res.TaskID, "error", errCode(res.Err), "interrupted", res.Interrupted)
}

func errCode(e *connector.TurnError) string {
	if e == nil {
		return ""
	}
	return e.Code
}

// CancelTask sends tasks/cancel for taskID in the background, bounded by CancelTimeout. The call
// keeps ctx's values (trace) but not its cancellation, so it may run after the caller is gone.
// Failures are logged, never returned: the cancel is best effort. After Close it does nothing.
func (inv *Invoker) CancelTask(ctx context.Context, agent connector.Agent, sealed *connector.Sealed, taskID string) {
	if taskID == "" {
		return
	}
	var key *connector.Sealed
	if sealed != nil {
		k := *sealed
		key = &k
	}
	inv.background(ctx, "tasks/cancel of task "+taskID+" dropped", agent.ID, func(ctx context.Context) {
		ctx, herr := inv.withTLS(ctx, &agent, key)
		if herr != nil {
			inv.log.WarnContext(ctx, "tasks/cancel not sent", "agent_id", agent.ID, "task_id", taskID, "error", herr.Message)
			return
		}
		hdr, _, herr := inv.header(ctx, &agent, key)
		if herr != nil {
			inv.log.WarnContext(ctx, "tasks/cancel not sent", "agent_id", agent.ID, "task_id", taskID, "error", herr.Message)
			return
		}
		rt, _ := inv.routes(&agent)
		_, err := inv.client.CancelTask(ctx, rt.endpoint(rt.url, hdr), a2a.CancelTaskRequest{ID: taskID})
		if err != nil {
			inv.log.InfoContext(ctx, "tasks/cancel failed", "agent_id", agent.ID, "task_id", taskID, "error", err.Error())
			return
		}
		inv.log.DebugContext(ctx, "tasks/cancel sent", "agent_id", agent.ID, "task_id", taskID)
	})
}

// Close stops accepting background cancels and waits for the running ones, at most until ctx
// ends (each is bounded by CancelTimeout anyway).
func (inv *Invoker) Close(ctx context.Context) error {
	inv.mu.Lock()
	inv.closed = true
	inv.mu.Unlock()
	done := make(chan struct{})
	go func() {
		// Ends when the cancels end, each within CancelTimeout, even if ctx ends first.
		inv.bg.Wait()
		close(done)
	}()
	select {
	case <-done:
		inv.client.Close() // the pooled gRPC connections; nothing calls agents any more
		return nil
	case <-ctx.Done():
		return fmt.Errorf("invoke: close: waiting for background cancels: %w", context.Cause(ctx))
	}
}

// callAuth is what authorizes every call of a turn: headers (the credential, activated
// extensions) and, for an AWS key, the signature each attempt gets (reqauth).
type callAuth struct {
	header http.Header
	sign   reqauth.Func
}

// header builds the headers of every call to the agent: its credential (authorize) and the
// activated extensions. accessToken is the OAuth 2.0 token sent, if any.
func (inv *Invoker) header(ctx context.Context, agent *connector.Agent, sealed *connector.Sealed) (_ callAuth, accessToken string, _ *connector.TurnError) {
	var a callAuth
	a.header = make(http.Header, 2)
	if sealed != nil {
		var herr *connector.TurnError
		if accessToken, a.sign, herr = inv.authorize(ctx, a.header, agent, sealed); herr != nil {
			return callAuth{}, "", herr
		}
	}
	if len(agent.Extensions) > 0 {
		// One header line per URI, not one comma-joined line: a2a-go's servers compare each
		// line with a required extension's URI, so "a, b" activates neither (a2a-go v2.3.1 then
		// refuses an agent's required extension with -32008).
		a.header[http.CanonicalHeaderKey(extensionsHeader)] = slices.Clone(agent.Extensions)
	}
	return a, accessToken, nil
}

// validHeaderName reports whether s is an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// validHeaderValue refuses control characters (CR and LF above all), which would otherwise fail
// the request with an error naming the header.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return s != ""
}
