// Command demo-agent serves the demo A2A 0.2.5 agent of a2a-connector (the "超级AI助理" sample card
// of the platform guide) over plain HTTP. See README.md in this directory.
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
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/a2a-connector/a2a-connector/examples/demo-agent/agent"
	"github.com/a2a-connector/a2a-connector/internal/telemetry"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.LookupEnv, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) { // -h printed the usage: exit 0
		fmt.Fprintln(os.Stderr, "demo-agent:", err)
		os.Exit(1)
	}
}

// shutdownTimeout bounds the wait for running streams at shutdown; they are cut after it.
const shutdownTimeout = 5 * time.Second

// config is the binary's settings: each a flag whose default comes from an environment variable.
type config struct {
	addr       string
	publicURL  string
	apiKey     string
	chunkDelay time.Duration
	// voiceExtension is the URI of the voice extension the agent implements; "" leaves it out.
	voiceExtension string
}

// run is main without the process: testable, with its environment passed in. The environment
// is read with lookupEnv because an empty DEMO_AGENT_VOICE_EXTENSION (turn it off) and an unset
// one (the default) differ.
func run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stderr io.Writer) error {
	cfg, err := parseConfig(args, lookupEnv, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.addr, err)
	}
	publicURL := cfg.publicURL
	if publicURL == "" {
		publicURL = defaultPublicURL(ln.Addr())
	}
	a := agent.New(agent.Options{
		PublicURL:      publicURL,
		APIKey:         cfg.apiKey,
		ChunkDelay:     cfg.chunkDelay,
		Logger:         log,
		VoiceExtension: cfg.voiceExtension,
	})
	// Traces from the standard OTEL_* variables (off without an endpoint), so that an agent's
	// own server span joins the trace the connector's traceparent names (make e2e-otel checks
	// the link). Unlike the console, an agent adopts its caller's trace: the caller is the
	// connector, and the trace is the dialog engine's turn.
	tel, stopTelemetry, err := telemetry.Start(ctx, telemetry.Options{ServiceName: "a2a-demo-agent", Logger: log})
	if err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	defer stopTelemetry()
	handler := otelhttp.NewHandler(a.Handler(), "demo-agent",
		otelhttp.WithTracerProvider(tel.TracerProvider), otelhttp.WithPropagators(tel.Propagator),
		otelhttp.WithMeterProvider(tel.MeterProvider))
	// Streams outlive a plain request/response cycle, so there is no WriteTimeout; the base
	// context is cancelled when shutdown runs out of patience, which ends running streams.
	baseCtx, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
	}
	cardURL := publicURL + agent.CardPath
	if publicURL == "" {
		cardURL = "http://<host>" + agent.CardPath
	}
	log.Info("demo agent listening", "addr", ln.Addr().String(), "card", cardURL, "api_key", cfg.apiKey != "", "voice_extension", cfg.voiceExtension)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down", "timeout", shutdownTimeout.String())
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		cancelBase()
		_ = srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// parseConfig reads flags, each defaulting to its environment variable, and validates them.
func parseConfig(args []string, lookupEnv func(string) (string, bool), stderr io.Writer) (config, error) {
	getenv := func(k string) string { v, _ := lookupEnv(k); return v }
	fs := flag.NewFlagSet("demo-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	addr := getenv("DEMO_AGENT_ADDR")
	if addr == "" {
		addr = "127.0.0.1:9999"
	}
	delay := 120 * time.Millisecond
	if s := getenv("DEMO_AGENT_CHUNK_DELAY"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			return cfg, fmt.Errorf("DEMO_AGENT_CHUNK_DELAY: %q is not a duration such as 120ms", s)
		}
		delay = d
	}
	fs.StringVar(&cfg.addr, "addr", addr, "listen address (env DEMO_AGENT_ADDR)")
	fs.StringVar(&cfg.publicURL, "public-url", getenv("DEMO_AGENT_PUBLIC_URL"),
		"base URL written into the card, e.g. https://agent.example.com; default http://<listen address>, or the request's Host when listening on all interfaces (env DEMO_AGENT_PUBLIC_URL)")
	fs.StringVar(&cfg.apiKey, "api-key", getenv("DEMO_AGENT_API_KEY"),
		"require this X-API-KEY on JSON-RPC calls; prefer the env DEMO_AGENT_API_KEY, flags show in ps")
	fs.DurationVar(&cfg.chunkDelay, "chunk-delay", delay, "pause between the coach and terms skills' chunks (env DEMO_AGENT_CHUNK_DELAY)")
	voice, set := lookupEnv("DEMO_AGENT_VOICE_EXTENSION")
	if !set {
		voice = agent.VoiceExtensionURI
	}
	fs.StringVar(&cfg.voiceExtension, "voice-extension", voice,
		`URI of the platform's voice extension the card declares; "" leaves it out (an agent without it) (env DEMO_AGENT_VOICE_EXTENSION)`)
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if cfg.chunkDelay < 0 {
		return cfg, fmt.Errorf("-chunk-delay: %s is negative", cfg.chunkDelay)
	}
	if strings.ContainsAny(cfg.voiceExtension, ", \t\r\n") {
		// The URI travels in comma-separated extension headers.
		return cfg, fmt.Errorf("-voice-extension: %q has a comma or white space", cfg.voiceExtension)
	}
	if cfg.publicURL != "" {
		u, err := url.Parse(cfg.publicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return cfg, fmt.Errorf("-public-url: %q is not an absolute http(s) URL without query", cfg.publicURL)
		}
		cfg.publicURL = strings.TrimRight(cfg.publicURL, "/")
	}
	return cfg, nil
}

// defaultPublicURL is http://<listen address>, or "" (each card request's Host) when the
// address is a wildcard that no client could dial.
func defaultPublicURL(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || tcp.IP.IsUnspecified() {
		return ""
	}
	return "http://" + tcp.String()
}
