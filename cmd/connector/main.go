// Command connector is the gRPC server the dialog engine calls on every user turn; it routes the
// turn to the tenant's A2A agent and streams the agent's words back. `connector chat` plays the
// dialog engine in a terminal, for trying an agent by hand.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
	"github.com/a2a-connector/a2a-connector/internal/admission"
	"github.com/a2a-connector/a2a-connector/internal/breaker"
	"github.com/a2a-connector/a2a-connector/internal/config"
	"github.com/a2a-connector/a2a-connector/internal/grpcapi"
	agenthealth "github.com/a2a-connector/a2a-connector/internal/health"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
	"github.com/a2a-connector/a2a-connector/internal/pgpool"
	"github.com/a2a-connector/a2a-connector/internal/session"
	"github.com/a2a-connector/a2a-connector/internal/store"
	"github.com/a2a-connector/a2a-connector/internal/telemetry"
)

func main() {
	// Here, not in serve: the tuner is the process's, and tests run serve many times in one.
	// Only for serve: chat is a client, and prints nothing but the chat.
	if cmd, _ := command(os.Args[1:]); cmd == "serve" {
		tuneGC(telemetry.NewLogger(os.Stderr, os.Getenv("A2AC_LOG_LEVEL")))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) { // -h printed the usage: exit 0
		fmt.Fprintln(os.Stderr, "connector:", err)
		os.Exit(1)
	}
}

const usage = `usage: connector [serve|chat] [flags]

  serve   serve the gRPC API (default)
  chat    play the dialog engine: read lines, send each as a turn, print the reply as it streams
          (connector chat -h for its flags)

Every setting is an environment variable (see README); each has a mirroring flag, e.g.
A2AC_GRPC_ADDR -> -grpc-addr.`

func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	return runWith(ctx, args, getenv, stdin, stdout, stderr, telemetry.Options{})
}

// runWith is run with telemetry seams: tests set tel.SpanExporter and tel.MetricReader to see
// the spans and metrics of the real server; serve fills in the rest of tel.
func runWith(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer, tel telemetry.Options) error {
	cmd, args := command(args)
	switch cmd {
	case "chat":
		return chat(ctx, args, getenv, stdin, stdout, stderr)
	case "serve":
		m, err := newMain(args, getenv, stderr, tel)
		if err != nil {
			return err
		}
		return serve(ctx, m)
	default:
		fmt.Fprintln(stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
}

// command splits args into the command (serve when none is named) and its flags.
func command(args []string) (string, []string) {
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		return args[0], args[1:]
	}
	return "serve", args
}

// Server-side limits: a request is at most 16 KiB of text plus 64 KiB of metadata.
const maxRecvMsgBytes = 256 << 10

// HTTP/2 flow-control windows of the gRPC server (static: see NewServer's options). A stream's
// window holds the largest message it accepts; a connection's, several streams sending at once.
const (
	streamWindowBytes = maxRecvMsgBytes
	connWindowBytes   = 4 * maxRecvMsgBytes
)

// ownGoroutineAbove: with more turns than this open, each new one runs on a goroutine of its own
// (grpcapi.Handoff): thousands of parked turns then fit in half the stack memory, and
// a few hundred do not pay a goroutine start per turn for a saving of a few MiB.
const ownGoroutineAbove = 256

// serviceName is the OpenTelemetry service.name (OTEL_SERVICE_NAME overrides it).
const serviceName = "a2a-connector"

// version is stamped at build time (-ldflags "-X main.version=..."; see Dockerfile).
var version = "dev"

// Sessions idle this long are swept from the database, every sweepInterval.
const (
	sweepInterval = 10 * time.Minute
	sweepIdle     = 24 * time.Hour
)

// serve runs the server until ctx ends (SIGTERM) or the gRPC server fails, then stops it.
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

// Main is the connector's server: Open starts its parts, each on top of those before it, and
// Close stops them in the one order that loses no turn and no save. Its fields are set by Open;
// Close stops only what Open got to start.
type Main struct {
	cfg config.Config
	tel telemetry.Options
	log *slog.Logger

	stopTelemetry func()
	pool          *pgpool.Pool
	stopBreakers  func()
	stopLimits    func()
	stopShares    func()
	inv           *invoke.Invoker
	rec           *agenthealth.Recorder
	inflight      *session.Inflight
	router        *session.Router

	srv      *grpc.Server
	hs       *grpcapi.Health
	grpcAddr string
	served   chan struct{} // closed when srv.Serve returned, with serveErr
	serveErr error

	metricsAddr, debugAddr string

	// background ends the loops that stop as shutdown begins (as they did when the signal
	// canceled serve's context): the sweep, the periodic health flush, the limits refresh, the
	// breaker publisher and the debug server. The in-flight sync outlives the drain: its own.
	background     context.Context
	stopBackground context.CancelFunc
	stopInflight   context.CancelFunc
	loops          []chan struct{} // each closed when its goroutine returned
}

// newMain reads serve's flags and settings into the server they describe, with the telemetry
// seams of tel (tests set its exporter and reader), logging to stderr.
func newMain(args []string, getenv func(string) string, stderr io.Writer, tel telemetry.Options) (*Main, error) {
	fs := flag.NewFlagSet("connector serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, usage+"\n\nflags of serve:"); fs.PrintDefaults() }
	getenv = config.WithFlags(fs, getenv)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	cfg, err := config.Load(getenv, config.Need{Database: true, SecretKey: true})
	if err != nil {
		return nil, err
	}
	tel.MetricsAddr = cfg.MetricsAddr
	m := &Main{cfg: cfg, tel: tel, log: telemetry.NewLogger(stderr, cfg.LogLevel)}
	cfg.WarnIgnored(m.log)
	return m, nil
}

// GRPCAddr is the address the gRPC server listens on (with A2AC_GRPC_ADDR=127.0.0.1:0, the port
// the kernel chose); MetricsAddr and DebugAddr those of the Prometheus and pprof endpoints, ""
// when not served. Each is set once Open returned.
func (m *Main) GRPCAddr() string    { return m.grpcAddr }
func (m *Main) MetricsAddr() string { return m.metricsAddr }
func (m *Main) DebugAddr() string   { return m.debugAddr }

// Open starts the server: when it returns nil, the gRPC server accepts turns and health says
// SERVING. ctx bounds the opening only. On an error, Close stops what was started. Each step
// builds one part on top of those before it and sets the fields of Main that Close stops.
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
	st := store.New(m.pool.Pool)
	if err := m.openInvoker(tp, st); err != nil {
		return err
	}
	// Per-agent health for tenants: counted in memory on the turn path, flushed once a minute.
	m.rec = agenthealth.NewRecorder(st, agenthealth.RecorderOptions{Logger: m.log})
	id := replicaID()
	limiter := m.openAdmission(ctx, tp, st, id)
	hs := grpcapi.NewHealth()
	m.openSessions(tp, st, limiter, hs, id)
	srv := m.newGRPCServer(tp, limiter, hs)
	ln, err := net.Listen("tcp", m.cfg.GRPCAddr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", m.cfg.GRPCAddr, err)
	}
	if err := m.openDebug(); err != nil {
		ln.Close()
		return err
	}
	m.serveGRPC(srv, hs, ln)
	m.startLoops(ctx)
	// Tests and loadgen read the address from this line (with A2AC_GRPC_ADDR=127.0.0.1:0).
	m.log.Info("connector listening", "addr", m.grpcAddr)
	return nil
}

// limitMemory makes the container's memory limit (its cgroup), if it has one, the Go runtime's
// soft limit at 90 %: near it the GC runs more often instead of the kernel killing the process.
// GOMEMLIMIT set by the operator wins; AUTOMEMLIMIT=off turns this off, =0.8 changes the ratio.
func limitMemory(log *slog.Logger) {
	_, _ = memlimit.Set(memlimit.WithLogger(log)) // a failure is logged, and changes nothing
}

// openTelemetry starts tracing, metrics and the Prometheus endpoint, with the seams of m.tel.
func (m *Main) openTelemetry(ctx context.Context) (*telemetry.Providers, error) {
	tel := m.tel
	tel.ServiceName, tel.Version, tel.Logger = serviceName, version, m.log
	tp, stopTelemetry, err := telemetry.Start(ctx, tel)
	if err != nil {
		return nil, err
	}
	m.stopTelemetry, m.metricsAddr = stopTelemetry, tp.MetricsAddr()
	return tp, nil
}

// openPool opens the Postgres pool, sized and tuned for the turn path.
func (m *Main) openPool(ctx context.Context, tp *telemetry.Providers) error {
	var err error
	m.pool, err = pgpool.Open(ctx, m.cfg.DatabaseURL, pgpool.Options{
		// The connector writes only session state (contexts, the racing-turn order), which is
		// ephemeral: losing the last few hundred milliseconds of it in a Postgres crash costs a
		// user one re-asked question. Not waiting for the WAL flush takes a disk sync off most
		// turns' final events. A hold change the Final announces commits synchronously anyway
		// (internal/store), so a crash or a failover keeps it.
		RuntimeParams: map[string]string{"synchronous_commit": "off"},
		// pgxpool's default (4, or the CPU count) queues every turn's two round trips behind
		// each other under thousands of open streams, until saves time out.
		MaxConns:       int32(max(16, 4*runtime.GOMAXPROCS(0))),
		TracerProvider: tp.TracerProvider,
		MeterProvider:  tp.MeterProvider,
		Logger:         m.log,
	})
	return err
}

// openInvoker starts the circuit breakers and builds the invoker that runs the turns over them.
func (m *Main) openInvoker(tp *telemetry.Providers, st *store.Store) error {
	cfg := m.cfg
	box, err := cfg.SecretBox()
	if err != nil {
		return err
	}
	// Circuit breakers are the deployment's, kept in Postgres and learned by LISTEN/NOTIFY; each
	// turn is decided from this replica's copy. Their changes reach the tenants' health view.
	brk, stopBreakers := breaker.Start(m.background, store.NewCircuits(m.pool.Pool, breaker.ReplicaName("connector"), m.log),
		cfg.BreakerFailures, breaker.Options{Cooldown: cfg.BreakerCooldown, MaxCooldown: cfg.BreakerMaxCooldown,
			MeterProvider: tp.MeterProvider, ProbeHold: cfg.TurnTimeout + 10*time.Second}, m.log)
	budget := a2aclient.NewRetryBudget(a2aclient.RetryBudgetOptions{Percent: cfg.RetryBudgetPercent})
	m.stopBreakers = stopBreakers
	m.inv = invoke.New(invoke.DeploymentOptions(cfg, tp, st, box, brk, budget, m.log))
	return nil
}

// openAdmission builds the concurrent-turn caps: the tenants' and agents' for the deployment,
// shared out among the replicas by leases renewed every A2AC_CAP_SYNC in Postgres; the
// replica's own. The operator's per-tenant overrides are read every A2AC_LIMITS_REFRESH.
// Neither is on a turn.
func (m *Main) openAdmission(ctx context.Context, tp *telemetry.Providers, st *store.Store, id string) *admission.Limiter {
	cfg := m.cfg
	var shares admission.ShareStore // A2AC_CAP_SYNC=0: every cap is this process's own
	if cfg.CapSync > 0 {
		shares = admission.NewStore(m.pool.Pool)
	}
	limiter := admission.New(admission.Config{Replica: cfg.Admission.Replica, Tenant: cfg.Admission.Tenant,
		Agent: cfg.Admission.Agent, MeterProvider: tp.MeterProvider, Logger: m.log,
		Shares: shares, ReplicaID: id, Sync: cfg.CapSync})
	m.stopLimits = limiter.RefreshInBackground(m.background, cfg.LimitsRefresh, st.AllTenantLimits)
	// Joined before listening: a new replica takes its share of the caps before its first turn.
	m.stopShares = limiter.Start(ctx)
	return limiter
}

// openSessions builds the session router and the record of this replica's in-flight agent
// tasks, synced every A2AC_INFLIGHT_SYNC so that another replica cancels them if this process
// dies mid-turn; its Run sweeps the others' too. A replica whose heartbeat fails for half of
// A2AC_INFLIGHT_STALE takes no turns, so that none runs when the others take it for dead: the
// Connector service in hs (readiness, and clients that health-check it) says NOT_SERVING until
// a heartbeat succeeds again. "" (liveness) stays SERVING: the process is fine, and a restart
// would not bring the database closer.
func (m *Main) openSessions(tp *telemetry.Providers, st *store.Store, limiter *admission.Limiter, hs *grpcapi.Health, id string) {
	cfg := m.cfg
	m.inflight = session.NewInflight(session.InflightConfig{ReplicaID: id, Store: st, Canceler: m.inv,
		Sync: cfg.InflightSync, Stale: cfg.InflightStale, Logger: m.log,
		OnDatabase: func(reachable bool) {
			hs.SetServingStatus(pb.Connector_ServiceDesc.ServiceName, servingStatus(reachable))
		}})
	m.router = session.New(session.Config{
		Store: st, Invoker: m.inv, HoldTTL: cfg.HoldTTL, Logger: m.log,
		TracerProvider: tp.TracerProvider, MeterProvider: tp.MeterProvider, Health: m.rec,
		Admission: limiter, Inflight: m.inflight, VoiceExtension: cfg.VoiceExtension,
	})
}

// newGRPCServer builds the gRPC server of the Connector service over the router, with health
// (hs) and reflection.
func (m *Main) newGRPCServer(tp *telemetry.Providers, limiter *admission.Limiter, hs *grpcapi.Health) *grpc.Server {
	api := grpcapi.New(m.router, m.log, grpcapi.Options{VoiceExtension: m.cfg.VoiceExtension,
		Admission: limiter, Handoff: grpcapi.NewHandoff(ownGoroutineAbove)})
	srv := grpc.NewServer(append(tp.GRPCServerOptions(),
		// A turn that names its tenant in its metadata is refused over a cap before grpc-go
		// creates its stream: no goroutine, no decode, no span.
		grpc.InTapHandle(api.TapHandle),
		// A string that is not UTF-8 is INVALID_ARGUMENT naming its field, not grpc-go's INTERNAL.
		grpc.ForceServerCodecV2(grpcapi.Codec()),
		grpc.MaxRecvMsgSize(maxRecvMsgBytes),
		// Fixed flow-control windows turn off grpc-go's bandwidth estimation, which answers
		// nearly every request message with a PING the client must acknowledge: two more
		// frames, wake-ups and system calls per turn for nothing, since a turn's request is one
		// small message. The stream window takes the largest request whole.
		grpc.StaticStreamWindowSize(streamWindowBytes),
		grpc.StaticConnWindowSize(connWindowBytes),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			Time: time.Minute, Timeout: 20 * time.Second,
			// Clients reconnect every few minutes, so new replicas after a scale-out get their
			// share of the long-lived dialog-engine connections; the grace lets a turn finish.
			MaxConnectionAge: 5 * time.Minute, MaxConnectionAgeGrace: m.cfg.TurnTimeout + 5*time.Second,
		}),
	)...)
	pb.RegisterConnectorServer(srv, api)
	healthpb.RegisterHealthServer(srv, hs)
	reflection.Register(srv)
	return srv
}

// openDebug starts the pprof server when A2AC_DEBUG_ADDR names one; it stops with the
// background loops.
func (m *Main) openDebug() error {
	if m.cfg.DebugAddr == "" {
		return nil
	}
	wait, addr, err := serveDebug(m.background, m.cfg.DebugAddr, m.log)
	if err != nil {
		return err
	}
	m.debugAddr = addr
	m.goLoop(func(context.Context) { wait() })
	return nil
}

// serveGRPC serves srv on ln and says SERVING.
func (m *Main) serveGRPC(srv *grpc.Server, hs *grpcapi.Health, ln net.Listener) {
	m.srv, m.hs, m.grpcAddr, m.served = srv, hs, ln.Addr().String(), make(chan struct{})
	go func() { defer close(m.served); m.serveErr = srv.Serve(ln) }()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus(pb.Connector_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
}

// startLoops starts the loops of a serving replica: the in-flight sync, the session sweep and
// the periodic health flush.
func (m *Main) startLoops(ctx context.Context) {
	// Stopped in Close after the drain and before the invoker closes. Started after SERVING
	// is set, so that its NOT_SERVING, should Postgres be cut already, is the last word.
	inflightCtx, stopInflight := context.WithCancel(context.WithoutCancel(ctx))
	m.stopInflight = stopInflight
	m.goLoopCtx(inflightCtx, m.inflight.Run)
	m.goLoop(func(ctx context.Context) { m.router.Sweep(ctx, sweepInterval, sweepIdle) })
	m.goLoop(m.rec.Run)
}

// servingStatus is the health status of a server that serves, or not. (After the health
// server's Shutdown, the drain, no status changes any more: NOT_SERVING stays.)
func servingStatus(serving bool) healthpb.HealthCheckResponse_ServingStatus {
	if serving {
		return healthpb.HealthCheckResponse_SERVING
	}
	return healthpb.HealthCheckResponse_NOT_SERVING
}

// goLoop runs f in a goroutine of Main until the background context ends; Close waits for it.
func (m *Main) goLoop(f func(context.Context)) { m.goLoopCtx(m.background, f) }

func (m *Main) goLoopCtx(ctx context.Context, f func(context.Context)) {
	done := make(chan struct{})
	m.loops = append(m.loops, done)
	go func() { defer close(done); f(ctx) }()
}

// Close stops the server, in this order:
//
//  1. The background loops stop (sweep, periodic health flush, limits refresh, breaker
//     publishing, debug server); the in-flight sync and the renewal of the caps' shares go on.
//  2. Drain: health says NOT_SERVING, and new and running turns are still served for
//     A2AC_DRAIN_DELAY, while balancers that health-check move away (one needs a check or two
//     to notice); then the open health Watch streams end and the server stops accepting, lets
//     in-flight turns finish within A2AC_SHUTDOWN_TIMEOUT, and cuts what is left.
//  3. The turns are over (drained, or cut and their tasks being canceled by invoke): the
//     in-flight sync stops and deletes this replica's rows — nothing is left for another
//     replica to sweep — and the invoker finishes its background tasks/cancel.
//  4. The last health flush, of the drained turns.
//  5. The saves that finished turns left for after their Final; then the shares of the caps go
//     back to the other replicas (this replica's rows are deleted).
//  6. The breakers stop listening to the deployment's changes (they listened through the
//     drain), their last calls to Postgres end, and the publisher writes its last; then the pool
//     closes: nothing writes any more.
//  7. Telemetry, last: it flushes the spans of the drained turns.
//
// Each step after the drain is bounded (5 s); with the database away what it would have
// written is lost, and logged. Close returns the gRPC server's error, if it failed.
func (m *Main) Close() error {
	var errs []error
	if m.stopBackground != nil {
		m.stopBackground()
	}
	if m.srv != nil {
		m.drain()
		if m.serveErr != nil && !errors.Is(m.serveErr, grpc.ErrServerStopped) {
			errs = append(errs, fmt.Errorf("serve: %w", m.serveErr))
		}
	}
	if m.stopInflight != nil {
		m.stopInflight()
	}
	for _, done := range m.loops {
		<-done
	}
	closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if m.stopInflight != nil { // its Run started, and has returned
		if err := m.inflight.Close(closeCtx); err != nil {
			m.log.Warn("in-flight tasks: delete this replica's rows", slog.Any("error", err))
		}
	}
	if m.inv != nil {
		if err := m.inv.Close(closeCtx); err != nil {
			m.log.Warn("background cancels did not finish", slog.Any("error", err))
		}
	}
	if m.rec != nil {
		flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := m.rec.Close(flushCtx); err != nil {
			m.log.Warn("health: last flush", slog.Any("error", err))
		}
	}
	if m.router != nil {
		m.router.Wait()
	}
	if m.stopLimits != nil {
		m.stopLimits()
	}
	if m.stopShares != nil { // after the drain: the turns it counted have ended
		m.stopShares()
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

// drain is step 2 of Close. A server that failed meanwhile ends the drain delay early.
func (m *Main) drain() {
	m.log.Info("shutting down", "drain_delay", m.cfg.DrainDelay.String(), "timeout", m.cfg.ShutdownTimeout.String())
	m.hs.Shutdown()
	if d := m.cfg.DrainDelay; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-m.served:
		case <-t.C:
		}
		t.Stop()
	}
	m.hs.EndWatches() // else every client watching health would hold GracefulStop open
	stopped := make(chan struct{})
	go func() { m.srv.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(m.cfg.ShutdownTimeout):
		m.log.Warn("shutdown timeout: cutting remaining turns")
		m.srv.Stop()
		<-stopped
	}
	<-m.served
}

// replicaID names this process among the connector's replicas: the host name (the pod's name on
// Kubernetes), the pid and random bytes, so that a restarted pod is a new replica and never
// takes over, or deletes, the rows its killed predecessor left for the sweep.
func replicaID() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return fmt.Sprintf("%s/%d/%x", host, os.Getpid(), b)
}
