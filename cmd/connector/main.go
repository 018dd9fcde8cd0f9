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
	"github.com/a2a-connector/a2a-connector/internal/admission"
	"github.com/a2a-connector/a2a-connector/internal/config"
	"github.com/a2a-connector/a2a-connector/internal/grpcapi"
	agenthealth "github.com/a2a-connector/a2a-connector/internal/health"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/pgpool"
	"github.com/a2a-connector/a2a-connector/internal/session"
	"github.com/a2a-connector/a2a-connector/internal/store"
	"github.com/a2a-connector/a2a-connector/internal/telemetry"
)

func main() {
	// Here, not in serve: the tuner is the process's, and tests run serve many times in one.
	tuneGC(telemetry.NewLogger(os.Stderr, os.Getenv("A2AC_LOG_LEVEL")))
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
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "chat":
		return chat(ctx, args, getenv, stdin, stdout, stderr)
	case "serve":
		fs := flag.NewFlagSet("connector serve", flag.ContinueOnError)
		fs.SetOutput(stderr)
		fs.Usage = func() { fmt.Fprintln(stderr, usage+"\n\nflags of serve:"); fs.PrintDefaults() }
		getenv = config.WithFlags(fs, getenv)
		if err := fs.Parse(args); err != nil {
			return err
		}
		cfg, err := config.Load(getenv, config.Need{Database: true, SecretKey: true})
		if err != nil {
			return err
		}
		tel.MetricsAddr = cfg.MetricsAddr
		return serve(ctx, cfg, tel, stderr)
	default:
		fmt.Fprintln(stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
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
// (grpcapi.OwnGoroutineAbove): thousands of parked turns then fit in half the stack memory, and
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

func serve(ctx context.Context, cfg config.Config, tel telemetry.Options, stderr io.Writer) error {
	log := telemetry.NewLogger(stderr, cfg.LogLevel)
	// The container's memory limit (its cgroup), if it has one, becomes the Go runtime's soft
	// limit at 90 %: near it the GC runs more often instead of the kernel killing the process.
	// GOMEMLIMIT set by the operator wins; AUTOMEMLIMIT=off turns this off, =0.8 changes the ratio.
	_, _ = memlimit.Set(memlimit.WithLogger(log)) // a failure is logged, and changes nothing
	tel.ServiceName, tel.Version, tel.Logger = serviceName, version, log
	tp, stopTelemetry, err := telemetry.Start(ctx, tel)
	if err != nil {
		return err
	}
	defer stopTelemetry() // last out: flush the spans of the drained turns
	pool, err := pgpool.Open(ctx, cfg.DatabaseURL, pgpool.Options{
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
		Logger:         log,
	})
	if err != nil {
		return err
	}
	defer pool.Close()
	box, err := cfg.SecretBox()
	if err != nil {
		return err
	}
	// Circuit breakers are this replica's own; their changes reach the tenants' health view
	// through Postgres, written off the turn path (stopped before the pool closes).
	breakers := agenthealth.NewBreakerPublisher(agenthealth.NewStore(pool.Pool), agenthealth.ReplicaName("connector"), log)
	defer breakers.Start(ctx, 5*time.Second)()
	breaker, budget := invoke.Resilience(cfg.BreakerFailures, cfg.BreakerCooldown, cfg.BreakerMaxCooldown, cfg.RetryBudgetPercent,
		tp.MeterProvider, breakers.Publish)
	agentPolicy := cfg.Policy()
	inv := invoke.New(invoke.Options{
		Client: netguard.NewClient(agentPolicy, netguard.ClientOptions{MaxRedirects: 0, InlineHTTP1: true,
			WrapTransport: tp.AgentTransport}),
		GRPCPolicy:     &agentPolicy,
		Secrets:        box,
		TurnTimeout:    cfg.TurnTimeout,
		Logger:         log,
		TracerProvider: tp.TracerProvider,
		MeterProvider:  tp.MeterProvider,
		Breaker:        breaker,
		RetryBudget:    budget,
	})
	// Per-agent health for tenants: counted in memory on the turn path, flushed once a minute.
	rec := agenthealth.NewRecorder(agenthealth.NewStore(pool.Pool), agenthealth.RecorderOptions{Logger: log})
	st := store.New(pool.Pool)
	// Concurrent-turn caps of this process; the operator's per-tenant overrides are read every
	// A2AC_LIMITS_REFRESH in the background, never on a turn.
	limiter := admission.New(admission.Config{Replica: cfg.Admission.Replica, Tenant: cfg.Admission.Tenant,
		Agent: cfg.Admission.Agent, MeterProvider: tp.MeterProvider, Logger: log})
	defer limiter.RefreshInBackground(ctx, cfg.LimitsRefresh, st.AllTenantLimits)()
	// This replica's in-flight agent tasks, synced every A2AC_INFLIGHT_SYNC so that another
	// replica cancels them if this process dies mid-turn; its Run sweeps the others' too.
	inflight := session.NewInflight(session.InflightConfig{ReplicaID: replicaID(), Store: st, Canceler: inv,
		Sync: cfg.InflightSync, Stale: cfg.InflightStale, Logger: log})
	router := session.New(session.Config{
		Store: st, Invoker: inv, HoldTTL: cfg.HoldTTL, Logger: log,
		TracerProvider: tp.TracerProvider, MeterProvider: tp.MeterProvider, Health: rec,
		Admission: limiter, Inflight: inflight,
	})
	// After the server has stopped (the defers run at return) and before the pool closes: the
	// saves that finished turns left for after their Final.
	defer router.Wait()

	// Outermost, so that grpc-go's goroutine waits on as few frames as possible.
	opts := []grpc.ServerOption{grpc.ChainStreamInterceptor(grpcapi.OwnGoroutineAbove(ownGoroutineAbove))}
	srv := grpc.NewServer(append(append(opts, tp.GRPCServerOptions()...),
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
			MaxConnectionAge: 5 * time.Minute, MaxConnectionAgeGrace: cfg.TurnTimeout + 5*time.Second,
		}),
	)...)
	pb.RegisterConnectorServer(srv, grpcapi.New(router, log))
	hs := grpcapi.NewHealth()
	healthpb.RegisterHealthServer(srv, hs)
	reflection.Register(srv)

	ln, err := net.Listen("tcp", cfg.GRPCAddr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.GRPCAddr, err)
	}
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus(pb.Connector_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	log.Info("connector listening", "addr", ln.Addr().String())

	if cfg.DebugAddr != "" {
		debugCtx, stopDebug := context.WithCancel(ctx)
		wait, err := serveDebug(debugCtx, cfg.DebugAddr, log)
		if err != nil {
			stopDebug()
			return err
		}
		defer func() { stopDebug(); wait() }()
	}

	// Stopped in the shutdown sequence below, after the drain and before the invoker closes.
	inflightCtx, stopInflight := context.WithCancel(context.WithoutCancel(ctx))
	inflightDone := make(chan struct{})
	go func() { defer close(inflightDone); inflight.Run(inflightCtx) }()
	defer func() { stopInflight(); <-inflightDone }() // when serve fails before the drain

	sweepCtx, stopSweep := context.WithCancel(ctx)
	swept := make(chan struct{})
	go func() { defer close(swept); router.Sweep(sweepCtx, sweepInterval, sweepIdle) }()
	defer func() { stopSweep(); <-swept }()

	// The health flusher stops after the gRPC server (this defer runs after the drain below)
	// and before the pool closes (deferred earlier), with a last flush of the drained turns.
	flushCtx, stopFlush := context.WithCancel(ctx)
	flusherDone := make(chan struct{})
	go func() { defer close(flusherDone); rec.Run(flushCtx) }()
	defer func() {
		stopFlush()
		<-flusherDone
		// Bounded like the other shutdown steps: with the database away the counts are lost.
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := rec.Close(closeCtx); err != nil {
			log.Warn("health: last flush", slog.Any("error", err))
		}
	}()

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}

	// Drain: report NOT_SERVING so load balancers move away, keep serving new and running
	// turns for the drain delay while they do (a balancer that health-checks needs a check or
	// two to notice), then stop accepting, let in-flight turns finish within the bound, and cut
	// what is left.
	log.Info("shutting down", "drain_delay", cfg.DrainDelay.String(), "timeout", cfg.ShutdownTimeout.String())
	hs.Shutdown()
	if err := drainDelay(errc, cfg.DrainDelay); err != nil {
		return err
	}
	hs.EndWatches() // else every client watching health would hold GracefulStop open
	stopped := make(chan struct{})
	go func() { srv.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(cfg.ShutdownTimeout):
		log.Warn("shutdown timeout: cutting remaining turns")
		srv.Stop()
		<-stopped
	}
	closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	// The turns are over (drained, or cut and their tasks being canceled by invoke): nothing of
	// this replica is left for another to sweep.
	stopInflight()
	<-inflightDone
	if err := inflight.Close(closeCtx); err != nil {
		log.Warn("in-flight tasks: delete this replica's rows", slog.Any("error", err))
	}
	if err := inv.Close(closeCtx); err != nil {
		log.Warn("background cancels did not finish", slog.Any("error", err))
	}
	if err := <-errc; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// drainDelay waits d with the server still serving; an error is the server failing meanwhile.
func drainDelay(errc <-chan error, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-t.C:
		return nil
	}
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
