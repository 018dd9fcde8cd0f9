// Command console-api serves the tenant console's HTTP JSON API (agent registration, card
// validation, key rotation) and applies database migrations (`console-api migrate`).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
	"github.com/a2a-connector/a2a-connector/internal/admission"
	"github.com/a2a-connector/a2a-connector/internal/breaker"
	"github.com/a2a-connector/a2a-connector/internal/cardcheck"
	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
	"github.com/a2a-connector/a2a-connector/internal/config"
	"github.com/a2a-connector/a2a-connector/internal/console"
	"github.com/a2a-connector/a2a-connector/internal/health"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/pgpool"
	"github.com/a2a-connector/a2a-connector/internal/probe"
	"github.com/a2a-connector/a2a-connector/internal/secret"
	"github.com/a2a-connector/a2a-connector/internal/session"
	"github.com/a2a-connector/a2a-connector/internal/store"
	"github.com/a2a-connector/a2a-connector/internal/telemetry"
	"github.com/a2a-connector/a2a-connector/migrations"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) { // -h printed the usage: exit 0
		fmt.Fprintln(os.Stderr, "console-api:", err)
		os.Exit(1)
	}
}

const usage = `usage: console-api [serve|migrate] [flags]

  serve    serve the console HTTP API (default)
  migrate  apply database migrations and exit

Every setting is an environment variable (see README); each has a mirroring flag, e.g.
A2AC_CONSOLE_ADDR -> -console-addr.`

// run is main without the process: testable, with its environment passed in.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("console-api "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, usage+"\n\nflags:"); fs.PrintDefaults() }
	getenv = config.WithFlags(fs, getenv)
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch cmd {
	case "migrate":
		cfg, err := config.Load(getenv, config.Need{Database: true})
		if err != nil {
			return err
		}
		return migrate(ctx, cfg.DatabaseURL)
	case "serve":
		cfg, err := serveConfig(getenv)
		if err != nil {
			return err
		}
		return serve(ctx, newMain(cfg, getenv, stderr))
	default:
		fmt.Fprintln(stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
}

// migrate applies the migrations over one connection. DATABASE_URL is the pods' URL, which may
// carry pgxpool's settings (pool_max_conns, ...): parsed as a pool's, those are taken out, where
// pgx.Connect would send them to Postgres as unknown parameters and be refused (FATAL 42704).
func migrate(ctx context.Context, databaseURL string) error {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return fmt.Errorf("migrate: database: %w", err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = pgpool.DefaultConnectTimeout
	}
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		return fmt.Errorf("migrate: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := migrations.Apply(ctx, conn); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// serviceName is the OpenTelemetry service.name (OTEL_SERVICE_NAME overrides it).
const serviceName = "a2a-connector-console-api"

// version is stamped at build time (-ldflags "-X main.version=..."; see Dockerfile).
var version = "dev"

// serve runs the server until ctx ends (SIGTERM) or the HTTP server fails, then stops it.
func serve(ctx context.Context, m *Main) error {
	if err := m.Open(ctx); err != nil {
		return errors.Join(err, m.Close())
	}
	select {
	case <-ctx.Done():
	case <-m.served: // the server failed: Close says why
	}
	return m.Close()
}

// Main is the console API's server: Open starts its parts, each on top of those before it, and
// Close stops them in one written order. Its fields are set by Open; Close stops only what Open
// got to start. Call Close once.
type Main struct {
	cfg    config.Config
	getenv func(string) string
	log    *slog.Logger

	stopTelemetry func()
	pool          *pgpool.Pool
	stopBreakers  func()
	stopLimits    func()
	inv           *invoke.Invoker
	router        *session.Router

	srv      *http.Server
	addr     string
	served   chan struct{} // closed when srv.Serve returned, with serveErr
	serveErr error

	// background ends the breaker publisher and the limits refresh as shutdown begins (as the
	// signal's context did before).
	background     context.Context
	stopBackground context.CancelFunc
}

// serveConfig reads serve's settings.
func serveConfig(getenv func(string) string) (config.Config, error) {
	return config.Load(getenv, config.Need{Database: true, SecretKey: true, AdminToken: true})
}

// newMain is the server cfg describes; getenv carries the OTEL_* settings.
func newMain(cfg config.Config, getenv func(string) string, stderr io.Writer) *Main {
	m := &Main{cfg: cfg, getenv: getenv, log: telemetry.NewLogger(stderr, cfg.LogLevel)}
	cfg.WarnIgnored(m.log)
	return m
}

// Addr is the address the HTTP server listens on (with A2AC_CONSOLE_ADDR=127.0.0.1:0, the port
// the kernel chose), once Open returned.
func (m *Main) Addr() string { return m.addr }

// Open starts the server: when it returns nil, the HTTP server accepts requests. ctx bounds the
// opening only. On an error, Close stops what was started. Each step builds one part on top of
// those before it and sets the fields of Main that Close stops.
func (m *Main) Open(ctx context.Context) error {
	m.background, m.stopBackground = context.WithCancel(context.WithoutCancel(ctx))
	limitMemory(m.log)
	tp, err := m.openTelemetry(ctx)
	if err != nil {
		return err
	}
	if err := m.openPool(ctx, tp); err != nil {
		return err
	}
	box, err := m.cfg.SecretBox()
	if err != nil {
		return err
	}
	st := store.New(m.pool.Pool)
	invOpts := m.openInvoker(tp, st, box)
	cards := m.newCards(tp)
	limiter := m.openAdmission(tp, st)
	m.openSessions(tp, st, limiter)
	api := m.newConsole(st, box, cards, invOpts, limiter)
	if err := m.serveHTTP(tp, api); err != nil {
		return err
	}
	// Tests and loadgen read the address from this line (with A2AC_CONSOLE_ADDR=127.0.0.1:0).
	m.log.Info("console api listening", "addr", m.addr)
	return nil
}

// limitMemory makes the container's memory limit (its cgroup), if it has one, the Go runtime's
// soft limit at 90 %: near it the GC runs more often instead of the kernel killing the process.
// GOMEMLIMIT set by the operator wins; AUTOMEMLIMIT=off turns this off, =0.8 changes the ratio.
func limitMemory(log *slog.Logger) {
	_, _ = memlimit.Set(memlimit.WithLogger(log)) // a failure is logged, and changes nothing
}

// openTelemetry starts tracing, metrics and the Prometheus endpoint.
func (m *Main) openTelemetry(ctx context.Context) (*telemetry.Providers, error) {
	tp, stopTelemetry, err := telemetry.Start(ctx, telemetry.Options{ServiceName: serviceName, Version: version,
		MetricsAddr: m.cfg.MetricsAddr, Logger: m.log})
	if err != nil {
		return nil, err
	}
	m.stopTelemetry = stopTelemetry
	return tp, nil
}

// openPool opens the Postgres pool.
func (m *Main) openPool(ctx context.Context, tp *telemetry.Providers) error {
	var err error
	m.pool, err = pgpool.Open(ctx, m.cfg.DatabaseURL, pgpool.Options{
		TracerProvider: tp.TracerProvider, MeterProvider: tp.MeterProvider, Logger: m.log})
	return err
}

// openInvoker starts the circuit breakers and builds the invoker of test turns and extended
// cards over them; it returns the invoker's options, which "check my agent" runs its turns with.
func (m *Main) openInvoker(tp *telemetry.Providers, st *store.Store, box *secret.Box) invoke.Options {
	cfg := m.cfg
	// Try-it and "check my agent" turns share the deployment's breakers (with the connector
	// replicas) and this process's retry budget.
	brk, stopBreakers := breaker.Start(m.background, store.NewCircuits(m.pool.Pool, breaker.ReplicaName("console-api"), m.log),
		cfg.BreakerFailures, breaker.Options{Cooldown: cfg.BreakerCooldown, MaxCooldown: cfg.BreakerMaxCooldown,
			MeterProvider: tp.MeterProvider, ProbeHold: cfg.TurnTimeout + 10*time.Second}, m.log)
	budget := a2aclient.NewRetryBudget(a2aclient.RetryBudgetOptions{Percent: cfg.RetryBudgetPercent})
	m.stopBreakers = stopBreakers
	// The same identity keys as the connector's: console-api publishes them (JWKS), rotates
	// them, and signs the tokens of its own test turns.
	invOpts := invoke.DeploymentOptions(cfg, tp, st, box, brk, budget, m.log)
	m.inv = invoke.New(invOpts)
	return invOpts
}

// newCards builds the card fetcher of registrations, refreshes and checks.
func (m *Main) newCards(tp *telemetry.Providers) *cardfetch.Fetcher {
	cfg := m.cfg
	return cardfetch.New(cardfetch.Options{
		// Card fetches are not wrapped in otelhttp: its span would carry the full card URL,
		// which may hold a token. cardfetch records the host only.
		Client:            netguard.NewClient(cfg.Policy(), netguard.ClientOptions{MaxRedirects: 3, RootCAs: cfg.AgentRoots}),
		AllowInsecureHTTP: cfg.AllowInsecureHTTP,
		Checker: cardcheck.New(cardcheck.Options{AllowInsecureHTTP: cfg.AllowInsecureHTTP,
			SupportedExtensions: cfg.SupportedExtensions, VoiceExtension: cfg.VoiceExtension}),
		TracerProvider: tp.TracerProvider,
		MeterProvider:  tp.MeterProvider,
		// Authenticated extended cards are asked for on the client turns use, in the agent's
		// own binding.
		Agents: m.inv,
	})
}

// openAdmission builds the caps of the console's test turns and checks: they count against the
// tenant's and agent's caps like the connector's turns, in this process's own counts: they are
// few, and a share of every cap held for them would come out of the connectors'
// (docs/operations.md, "Admission caps").
func (m *Main) openAdmission(tp *telemetry.Providers, st *store.Store) *admission.Limiter {
	cfg := m.cfg
	limiter := admission.New(admission.Config{Replica: cfg.Admission.Replica, Tenant: cfg.Admission.Tenant,
		Agent: cfg.Admission.Agent, MeterProvider: tp.MeterProvider, Logger: m.log})
	m.stopLimits = limiter.RefreshInBackground(m.background, cfg.LimitsRefresh, st.AllTenantLimits)
	return limiter
}

// openSessions builds the session router of test conversations ("try it"): the connector's own,
// so that holds, continuation and release work as for the dialog engine, in sessions of their
// own. They are not recorded for the agent's health view (no Health), which shows production
// turns only (docs/api.md).
func (m *Main) openSessions(tp *telemetry.Providers, st *store.Store, limiter *admission.Limiter) {
	m.router = session.New(session.Config{
		Store: st, Invoker: m.inv, HoldTTL: m.cfg.HoldTTL, Logger: m.log,
		TracerProvider: tp.TracerProvider, MeterProvider: tp.MeterProvider, Admission: limiter,
		VoiceExtension: m.cfg.VoiceExtension,
	})
}

// newConsole builds the console API over the parts opened before it.
func (m *Main) newConsole(st *store.Store, box *secret.Box, cards *cardfetch.Fetcher, invOpts invoke.Options,
	limiter *admission.Limiter) *console.Server {
	cfg := m.cfg
	return console.New(console.Config{
		Store:      st,
		Cards:      cards,
		Secrets:    box,
		AdminToken: cfg.AdminToken,
		Logger:     m.log,
		Invoker:    m.inv,
		Health:     health.NewSummaries(st),
		Router:     m.router,
		// "Check my agent" runs its turns with the options of real turns (internal/probe).
		Prober:         probe.New(probe.Config{Cards: cards, Invoke: invOpts, VoiceExtension: cfg.VoiceExtension}),
		Admission:      limiter,
		VoiceExtension: cfg.VoiceExtension,
		Identity:       invOpts.Identity,
	})
}

// serveHTTP serves api's handler on A2AC_CONSOLE_ADDR.
func (m *Main) serveHTTP(tp *telemetry.Providers, api *console.Server) error {
	srv := &http.Server{
		Addr:              m.cfg.ConsoleAddr,
		Handler:           tp.HTTPHandler(api.Handler(), "console-api"),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      90 * time.Second, // a test turn may take the whole turn timeout
		IdleTimeout:       120 * time.Second,
	}
	ln, err := net.Listen("tcp", m.cfg.ConsoleAddr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", m.cfg.ConsoleAddr, err)
	}
	m.srv, m.addr, m.served = srv, ln.Addr().String(), make(chan struct{})
	go func() { defer close(m.served); m.serveErr = srv.Serve(ln) }()
	return nil
}

// Close stops the server, in this order:
//
//  1. The breaker publisher's loop and the limits refresh stop.
//  2. The HTTP server stops accepting and lets requests in flight (a test turn may be one)
//     finish within A2AC_SHUTDOWN_TIMEOUT.
//  3. The saves that test turns left for after their Final.
//  4. The invoker finishes its background tasks/cancel (bounded: 5 s).
//  5. The breakers stop listening, their last calls to Postgres end, and the publisher writes
//     its last; then the pool closes: nothing writes any more.
//  6. Telemetry, last: it flushes the spans of the drained requests.
//
// Close returns the HTTP server's error, if it failed, or the shutdown's, if requests were
// still running at the timeout.
func (m *Main) Close() error {
	var errs []error
	if m.stopBackground != nil {
		m.stopBackground()
	}
	if m.srv != nil {
		m.log.Info("shutting down", "timeout", m.cfg.ShutdownTimeout.String())
		shutdownCtx, cancel := context.WithTimeout(context.Background(), m.cfg.ShutdownTimeout)
		if err := m.srv.Shutdown(shutdownCtx); err != nil {
			errs = append(errs, fmt.Errorf("shutdown: %w", err))
		}
		cancel()
		<-m.served
		if !errors.Is(m.serveErr, http.ErrServerClosed) {
			errs = append(errs, fmt.Errorf("serve: %w", m.serveErr))
		}
	}
	if m.router != nil {
		m.router.Wait()
	}
	if m.stopLimits != nil {
		m.stopLimits()
	}
	if m.inv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = m.inv.Close(ctx)
		cancel()
	}
	if m.stopBreakers != nil {
		m.stopBreakers()
	}
	if m.pool != nil {
		m.pool.Close()
	}
	if m.stopTelemetry != nil {
		m.stopTelemetry()
	}
	return errors.Join(errs...)
}
