// Package config reads the environment of both binaries into one validated struct.
//
// It is called once, from each binary's run function; nothing else reads the environment. Every
// missing or malformed setting is reported in one line naming the variable, all at once.
package config

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/secret"
)

// Config is every setting of a2a-connector. See README "Configuration".
type Config struct {
	DatabaseURL         string
	SecretKey           []byte   // A2AC_SECRET_KEY: current key, 32 bytes
	PreviousSecretKeys  [][]byte // A2AC_SECRET_KEY_PREVIOUS: comma-separated, for rotation
	AdminToken          string
	ConsoleAddr         string
	GRPCAddr            string
	AllowInsecureHTTP   bool
	AllowedCIDRs        []netip.Prefix
	SupportedExtensions []string
	// VoiceExtension (A2AC_VOICE_EXTENSION) is the URI of the platform's voice extension.
	VoiceExtension  string
	HoldTTL         time.Duration
	TurnTimeout     time.Duration
	ShutdownTimeout time.Duration
	// DrainDelay (A2AC_DRAIN_DELAY) is how long the connector keeps serving new turns after
	// SIGTERM while its gRPC health says NOT_SERVING, so that balancers move away before the
	// listener closes; 0 turns it off.
	DrainDelay time.Duration
	// InflightSync (A2AC_INFLIGHT_SYNC) is how often a connector writes its heartbeat and its
	// in-flight agent tasks; InflightStale (A2AC_INFLIGHT_STALE) is how old a heartbeat must be
	// before other replicas cancel that replica's tasks as orphans. A replica that could not
	// write its heartbeat for half of it stops taking turns first.
	InflightSync, InflightStale time.Duration
	LogLevel                    string
	MetricsAddr                 string
	// DebugAddr, when set (A2AC_DEBUG_ADDR), serves Go's pprof profiles at
	// http://DebugAddr/debug/pprof/ — for an operator's port-forward, never a Service.
	DebugAddr string
	// AgentCAFile (A2AC_AGENT_CA_FILE) is a PEM bundle of CA certificates trusted toward
	// agents besides the system roots; AgentRoots is the pool that results, to verify every
	// TLS connection to agents and their endpoints (agent calls on every binding, card and
	// JWKS fetches, extended cards, token URLs). Nil when unset: the system roots alone.
	AgentCAFile string
	AgentRoots  *x509.CertPool
	// IdentityIssuer (A2AC_IDENTITY_ISSUER) is the iss of the caller's identity tokens: the
	// platform's public console-api URL, under which agents find /.well-known/jwks.json. Unset:
	// agents that ask for the caller's identity cannot be sent it (their turns fail).
	IdentityIssuer string
	// BreakerFailures (A2AC_BREAKER_FAILURES, default 3; 0 turns breaking off) consecutive
	// "agent is down" turns open an agent's circuit breaker for BreakerCooldown (5s), doubling
	// per failed probe up to BreakerMaxCooldown (2m). RetryBudgetPercent (20) is the share of an
	// agent's calls that retries may add.
	BreakerFailures                     int
	BreakerCooldown, BreakerMaxCooldown time.Duration
	RetryBudgetPercent                  int
	// Admission caps on turns in flight in one process (A2AC_MAX_TURNS, A2AC_TENANT_MAX_TURNS,
	// A2AC_AGENT_MAX_TURNS; 0 takes internal/admission's defaults) and how often a process
	// reads the operator's per-tenant overrides (A2AC_LIMITS_REFRESH).
	Admission     AdmissionCaps
	LimitsRefresh time.Duration
	// CapSync (A2AC_CAP_SYNC) is how often a process renews its shares of the tenants' and
	// agents' caps in Postgres, which make those caps the deployment's; 0 turns sharing off
	// (every cap is the process's own).
	CapSync time.Duration
	// Ignored says, one line each, which removed settings are still set (see removed): the
	// binaries log them at start and run as if they were not.
	Ignored []string
}

// AdmissionCaps are the default concurrent-turn caps of a process; 0 means the built-in default.
type AdmissionCaps struct {
	Replica, Tenant, Agent int
}

// Need says which settings a command requires; the rest get defaults.
type Need struct {
	Database   bool
	SecretKey  bool
	AdminToken bool
}

// Load reads the settings from getenv (os.Getenv in production, a map in tests).
func Load(getenv func(string) string, need Need) (Config, error) {
	c := Config{
		DatabaseURL: getenv("DATABASE_URL"),
		AdminToken:  getenv("A2AC_ADMIN_TOKEN"),
		ConsoleAddr: orDefault(getenv("A2AC_CONSOLE_ADDR"), ":8080"),
		GRPCAddr:    orDefault(getenv("A2AC_GRPC_ADDR"), ":9090"),
		LogLevel:    orDefault(getenv("A2AC_LOG_LEVEL"), "info"),
		MetricsAddr: getenv("A2AC_METRICS_ADDR"),
		DebugAddr:   getenv("A2AC_DEBUG_ADDR"),
	}
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
	}

	if need.Database && c.DatabaseURL == "" {
		bad("DATABASE_URL", "required (a postgres:// URL)")
	}
	if v := getenv("A2AC_SECRET_KEY"); v != "" {
		k, err := secret.ParseKey(v)
		if err != nil {
			bad("A2AC_SECRET_KEY", "%v (want 32 random bytes, base64: `openssl rand -base64 32`)", err)
		}
		c.SecretKey = k
	} else if need.SecretKey {
		bad("A2AC_SECRET_KEY", "required (32 random bytes, base64: `openssl rand -base64 32`)")
	}
	for _, v := range splitList(getenv("A2AC_SECRET_KEY_PREVIOUS")) {
		k, err := secret.ParseKey(v)
		if err != nil {
			bad("A2AC_SECRET_KEY_PREVIOUS", "%v", err)
			continue
		}
		c.PreviousSecretKeys = append(c.PreviousSecretKeys, k)
	}
	if need.AdminToken {
		switch {
		case c.AdminToken == "":
			bad("A2AC_ADMIN_TOKEN", "required (a random string of at least 16 characters)")
		case len(c.AdminToken) < 16:
			bad("A2AC_ADMIN_TOKEN", "too short: %d characters, want at least 16", len(c.AdminToken))
		}
	}
	if v := getenv("A2AC_ALLOW_INSECURE_HTTP"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			bad("A2AC_ALLOW_INSECURE_HTTP", "%q is not a boolean", v)
		}
		c.AllowInsecureHTTP = b
	}
	for _, r := range removed {
		if getenv(r.name) != "" {
			c.Ignored = append(c.Ignored, r.name+" is ignored: "+r.why)
		}
	}
	if v := getenv("A2AC_ALLOWED_CIDRS"); v != "" {
		p, err := netguard.ParseCIDRs(v)
		if err != nil {
			bad("A2AC_ALLOWED_CIDRS", "%v", err)
		}
		c.AllowedCIDRs = p
	}
	if c.AgentCAFile = getenv("A2AC_AGENT_CA_FILE"); c.AgentCAFile != "" {
		roots, err := agentRoots(c.AgentCAFile)
		if err != nil {
			bad("A2AC_AGENT_CA_FILE", "%v", err)
		}
		c.AgentRoots = roots
	}
	if c.IdentityIssuer = strings.TrimSpace(getenv("A2AC_IDENTITY_ISSUER")); c.IdentityIssuer != "" {
		if u, err := url.Parse(c.IdentityIssuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			bad("A2AC_IDENTITY_ISSUER", "%q is not an absolute http(s) URL without query or fragment (such as https://console.example.com)", c.IdentityIssuer)
		}
	}
	c.SupportedExtensions = splitList(getenv("A2AC_SUPPORTED_EXTENSIONS"))
	c.VoiceExtension = connector.VoiceExtensionURI
	if v := getenv("A2AC_VOICE_EXTENSION"); v != "" {
		if u, err := url.Parse(v); err != nil || u.Scheme == "" || strings.ContainsAny(v, " \t,") {
			bad("A2AC_VOICE_EXTENSION", "%q is not an absolute URI (such as %s)", v, connector.VoiceExtensionURI)
		}
		c.VoiceExtension = v
	}
	c.HoldTTL = duration(getenv, "A2AC_HOLD_TTL", 10*time.Minute, bad)
	c.TurnTimeout = duration(getenv, "A2AC_TURN_TIMEOUT", 30*time.Second, bad)
	c.ShutdownTimeout = duration(getenv, "A2AC_SHUTDOWN_TIMEOUT", 25*time.Second, bad)
	c.BreakerFailures = integer(getenv, "A2AC_BREAKER_FAILURES", 3, 0, 1000, bad)
	c.BreakerCooldown = duration(getenv, "A2AC_BREAKER_COOLDOWN", 5*time.Second, bad)
	c.BreakerMaxCooldown = duration(getenv, "A2AC_BREAKER_MAX_COOLDOWN", 2*time.Minute, bad)
	if c.BreakerMaxCooldown < c.BreakerCooldown {
		bad("A2AC_BREAKER_MAX_COOLDOWN", "%s is less than A2AC_BREAKER_COOLDOWN (%s)", c.BreakerMaxCooldown, c.BreakerCooldown)
	}
	c.RetryBudgetPercent = integer(getenv, "A2AC_RETRY_BUDGET_PERCENT", 20, 0, 100, bad)
	c.Admission.Replica = positiveInt(getenv, "A2AC_MAX_TURNS", bad)
	c.Admission.Tenant = positiveInt(getenv, "A2AC_TENANT_MAX_TURNS", bad)
	c.Admission.Agent = positiveInt(getenv, "A2AC_AGENT_MAX_TURNS", bad)
	c.LimitsRefresh = duration(getenv, "A2AC_LIMITS_REFRESH", 10*time.Second, bad)
	// 0 is allowed here (off: one process alone, or a test's stacks sharing one database).
	if d, err := time.ParseDuration(getenv("A2AC_CAP_SYNC")); err == nil && d == 0 {
		c.CapSync = 0
	} else {
		c.CapSync = duration(getenv, "A2AC_CAP_SYNC", time.Second, bad)
	}
	// 0 is allowed here (off: a local run, or no balancer that reads health), unlike the others.
	if d, err := time.ParseDuration(getenv("A2AC_DRAIN_DELAY")); err == nil && d == 0 {
		c.DrainDelay = 0
	} else {
		c.DrainDelay = duration(getenv, "A2AC_DRAIN_DELAY", 5*time.Second, bad)
	}
	c.InflightSync = duration(getenv, "A2AC_INFLIGHT_SYNC", 2*time.Second, bad)
	c.InflightStale = duration(getenv, "A2AC_INFLIGHT_STALE", 15*time.Second, bad)
	if c.InflightStale < 3*c.InflightSync {
		// A live replica that misses one or two syncs (a slow database) must not look dead,
		// nor stop serving: it does at half the stale bound (session.Inflight), ≥ 1.5 syncs.
		bad("A2AC_INFLIGHT_STALE", "%s is less than 3 × A2AC_INFLIGHT_SYNC (%s)", c.InflightStale, c.InflightSync)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		bad("A2AC_LOG_LEVEL", "%q: want debug, info, warn or error", c.LogLevel)
	}
	return c, errors.Join(errs...)
}

// Policy is the outbound-call policy for netguard clients.
func (c Config) Policy() netguard.Policy {
	return netguard.Policy{AllowedCIDRs: c.AllowedCIDRs, AllowInsecureHTTP: c.AllowInsecureHTTP}
}

// agentRoots is the system roots plus every certificate of the PEM bundle at path. A bundle
// that holds no certificate, or one that does not parse, is an error: an operator who set the
// file meant it to be trusted, and a turn failing later on a TLS error would hide why. Blocks
// of other types (a private key put there by mistake) are errors too.
//
// A per-agent CA would be added to a clone of this pool, for that agent's connections only.
func agentRoots(path string) (*x509.CertPool, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		return nil, fmt.Errorf("the system roots, to add %s to: %w", path, err)
	}
	n := 0
	for rest := raw; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		n++
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("%s: PEM block %d is a %s, want only CERTIFICATE blocks", path, n, block.Type)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: certificate %d: %w", path, n, err)
		}
		roots.AddCert(cert)
	}
	if n == 0 {
		return nil, fmt.Errorf("%s holds no PEM certificate (want -----BEGIN CERTIFICATE----- blocks)", path)
	}
	return roots, nil
}

// SecretBox builds the API-key sealer from the current and previous keys.
func (c Config) SecretBox() (*secret.Box, error) {
	return secret.New(c.SecretKey, c.PreviousSecretKeys...)
}

func duration(getenv func(string) string, name string, def time.Duration, bad func(string, string, ...any)) time.Duration {
	v := getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		bad(name, "%q is not a positive duration (e.g. 30s, 10m)", v)
		return def
	}
	return d
}

func integer(getenv func(string) string, name string, def, lo, hi int, bad func(string, string, ...any)) int {
	v := getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < lo || n > hi {
		bad(name, "%q is not a whole number from %d to %d", v, lo, hi)
		return def
	}
	return n
}

// positiveInt reads a count that must be at least 1; unset is 0 (the caller's default).
func positiveInt(getenv func(string) string, name string, bad func(string, string, ...any)) int {
	v := getenv(name)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		bad(name, "%q is not a positive integer", v)
		return 0
	}
	return n
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// names lists every setting Load reads, in the order of the README table (besides the removed
// ones below, which it reads only to say they are ignored).
var names = []string{
	"DATABASE_URL", "A2AC_SECRET_KEY", "A2AC_SECRET_KEY_PREVIOUS", "A2AC_ADMIN_TOKEN",
	"A2AC_CONSOLE_ADDR", "A2AC_GRPC_ADDR", "A2AC_ALLOW_INSECURE_HTTP", "A2AC_ALLOWED_CIDRS",
	"A2AC_AGENT_CA_FILE", "A2AC_IDENTITY_ISSUER", "A2AC_SUPPORTED_EXTENSIONS", "A2AC_VOICE_EXTENSION", "A2AC_HOLD_TTL", "A2AC_TURN_TIMEOUT", "A2AC_SHUTDOWN_TIMEOUT",
	"A2AC_DRAIN_DELAY", "A2AC_INFLIGHT_SYNC", "A2AC_INFLIGHT_STALE",
	"A2AC_LOG_LEVEL", "A2AC_METRICS_ADDR", "A2AC_DEBUG_ADDR",
	"A2AC_BREAKER_FAILURES", "A2AC_BREAKER_COOLDOWN", "A2AC_BREAKER_MAX_COOLDOWN", "A2AC_RETRY_BUDGET_PERCENT",
	"A2AC_MAX_TURNS", "A2AC_TENANT_MAX_TURNS", "A2AC_AGENT_MAX_TURNS", "A2AC_LIMITS_REFRESH", "A2AC_CAP_SYNC",
}

// WarnIgnored logs each of c.Ignored as a warning: once, as a binary starts.
func (c Config) WarnIgnored(log *slog.Logger) {
	for _, line := range c.Ignored {
		log.Warn(line)
	}
}

// removed are settings that no longer do anything. One left set (say, in a deployment made for
// an older release) must not stop an upgraded process from starting, since nothing is lost by
// ignoring it; Load reports it in Config.Ignored, with why, so the operator can drop it.
var removed = []struct{ name, why string }{
	{"A2AC_GRPC_TRANSPORT", "removed; gRPC agents are always called with grpc-go's transport"},
}

// FlagName is the command-line flag that mirrors an environment variable:
// A2AC_HOLD_TTL -> -hold-ttl, DATABASE_URL -> -database-url.
func FlagName(env string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(env, "A2AC_")), "_", "-")
}

// WithFlags registers one flag per setting on fs and returns a getenv in which a flag given on
// the command line wins over the environment. Call fs.Parse before using the result.
func WithFlags(fs *flag.FlagSet, getenv func(string) string) func(string) string {
	set := make(map[string]*string, len(names)+len(removed))
	for _, n := range names {
		set[n] = fs.String(FlagName(n), "", "overrides $"+n)
	}
	for _, r := range removed {
		set[r.name] = fs.String(FlagName(r.name), "", "ignored: "+r.why)
	}
	return func(name string) string {
		if v, ok := set[name]; ok && *v != "" {
			return *v
		}
		return getenv(name)
	}
}
