package config

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/testca"
)

var goodKey = base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoad(t *testing.T) {
	t.Parallel()
	all := Need{Database: true, SecretKey: true, AdminToken: true}
	for _, c := range []struct {
		name    string
		env     map[string]string
		need    Need
		wantErr []string // each must appear, one line each
	}{
		{"defaults_when_nothing_is_needed", nil, Need{}, nil},
		{"everything_missing_is_named_at_once", nil, all,
			[]string{"DATABASE_URL: required", "A2AC_SECRET_KEY: required", "A2AC_ADMIN_TOKEN: required"}},
		{"malformed_values_are_named", map[string]string{
			"DATABASE_URL": "postgres://x", "A2AC_SECRET_KEY": "c2hvcnQ=", "A2AC_ADMIN_TOKEN": "short",
			"A2AC_HOLD_TTL": "ten minutes", "A2AC_TURN_TIMEOUT": "-1s", "A2AC_ALLOWED_CIDRS": "10.0.0.0/33",
			"A2AC_ALLOW_INSECURE_HTTP": "maybe", "A2AC_LOG_LEVEL": "loud",
		}, all, []string{"A2AC_SECRET_KEY: key is 5 bytes", "A2AC_ADMIN_TOKEN: too short", "A2AC_HOLD_TTL:",
			"A2AC_TURN_TIMEOUT:", "A2AC_ALLOWED_CIDRS:", "A2AC_ALLOW_INSECURE_HTTP:", "A2AC_LOG_LEVEL:"}},
		{"in_flight_stale_below_three_syncs_is_refused", map[string]string{
			"A2AC_INFLIGHT_SYNC": "5s", "A2AC_INFLIGHT_STALE": "10s", "A2AC_DRAIN_DELAY": "soon",
		}, Need{}, []string{"A2AC_INFLIGHT_STALE: 10s is less than 3 × A2AC_INFLIGHT_SYNC", "A2AC_DRAIN_DELAY:"}},
		{"valid", map[string]string{
			"DATABASE_URL": "postgres://x", "A2AC_SECRET_KEY": goodKey, "A2AC_ADMIN_TOKEN": "0123456789abcdef",
			"A2AC_HOLD_TTL": "2m", "A2AC_ALLOWED_CIDRS": "127.0.0.0/8, ::1/128", "A2AC_ALLOW_INSECURE_HTTP": "true",
		}, all, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Load(env(c.env), c.need)
			if len(c.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Load accepted bad config")
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(c.wantErr) {
				t.Errorf("got %d lines, want %d:\n%s", len(lines), len(c.wantErr), err)
			}
			for _, w := range c.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%s", w, err)
				}
			}
			_ = cfg
		})
	}
}

func TestLoadDefaultsAndValues(t *testing.T) {
	t.Parallel()
	cfg, err := Load(env(map[string]string{"A2AC_SECRET_KEY": goodKey, "A2AC_HOLD_TTL": "2m",
		"A2AC_ALLOWED_CIDRS": "127.0.0.0/8", "A2AC_SUPPORTED_EXTENSIONS": " https://a , https://b "}), Need{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ConsoleAddr != ":8080" || cfg.GRPCAddr != ":9090" || cfg.TurnTimeout != 30*time.Second || cfg.HoldTTL != 2*time.Minute {
		t.Errorf("cfg = %+v", cfg)
	}
	if cfg.DrainDelay != 5*time.Second || cfg.InflightSync != 2*time.Second || cfg.InflightStale != 15*time.Second {
		t.Errorf("drain delay %s, in-flight sync %s, stale %s; want 5s, 2s, 15s", cfg.DrainDelay, cfg.InflightSync, cfg.InflightStale)
	}
	for _, off := range []string{"0", "0s"} {
		cfg, err := Load(env(map[string]string{"A2AC_DRAIN_DELAY": off}), Need{})
		if err != nil || cfg.DrainDelay != 0 {
			t.Errorf("A2AC_DRAIN_DELAY=%s: %v, %s; want off", off, err, cfg.DrainDelay)
		}
	}
	if len(cfg.AllowedCIDRs) != 1 || cfg.AllowedCIDRs[0].String() != "127.0.0.0/8" {
		t.Errorf("AllowedCIDRs = %v", cfg.AllowedCIDRs)
	}
	if strings.Join(cfg.SupportedExtensions, "|") != "https://a|https://b" {
		t.Errorf("SupportedExtensions = %q", cfg.SupportedExtensions)
	}
	if _, err := cfg.SecretBox(); err != nil {
		t.Errorf("SecretBox: %v", err)
	}
}

func TestFlagsOverrideEnvironment(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	getenv := WithFlags(fs, env(map[string]string{"A2AC_HOLD_TTL": "1m", "A2AC_GRPC_ADDR": ":1"}))
	if err := fs.Parse([]string{"-hold-ttl", "3m"}); err != nil {
		t.Fatal(err)
	}
	if getenv("A2AC_HOLD_TTL") != "3m" || getenv("A2AC_GRPC_ADDR") != ":1" {
		t.Errorf("hold ttl %q, grpc addr %q", getenv("A2AC_HOLD_TTL"), getenv("A2AC_GRPC_ADDR"))
	}
	if FlagName("DATABASE_URL") != "database-url" {
		t.Errorf("FlagName = %q", FlagName("DATABASE_URL"))
	}
}

func TestBreakerAndRetryBudgetSettings(t *testing.T) {
	t.Parallel()
	cfg, err := Load(env(map[string]string{}), Need{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BreakerFailures != 3 || cfg.BreakerCooldown != 5*time.Second || cfg.BreakerMaxCooldown != 2*time.Minute || cfg.RetryBudgetPercent != 20 {
		t.Errorf("defaults: %d, %s, %s, %d%%", cfg.BreakerFailures, cfg.BreakerCooldown, cfg.BreakerMaxCooldown, cfg.RetryBudgetPercent)
	}
	cfg, err = Load(env(map[string]string{"A2AC_BREAKER_FAILURES": "0", "A2AC_RETRY_BUDGET_PERCENT": "0"}), Need{})
	if err != nil || cfg.BreakerFailures != 0 || cfg.RetryBudgetPercent != 0 {
		t.Errorf("0 turns breaking off and leaves the minimum retries: %d, %d%%, %v", cfg.BreakerFailures, cfg.RetryBudgetPercent, err)
	}
	_, err = Load(env(map[string]string{"A2AC_BREAKER_FAILURES": "-1", "A2AC_RETRY_BUDGET_PERCENT": "101",
		"A2AC_BREAKER_COOLDOWN": "1m", "A2AC_BREAKER_MAX_COOLDOWN": "10s"}), Need{})
	for _, want := range []string{"A2AC_BREAKER_FAILURES:", "A2AC_RETRY_BUDGET_PERCENT:", "A2AC_BREAKER_MAX_COOLDOWN:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}

func TestAdmissionCaps(t *testing.T) {
	t.Parallel()
	cfg, err := Load(env(map[string]string{"A2AC_MAX_TURNS": "800", "A2AC_TENANT_MAX_TURNS": "200",
		"A2AC_AGENT_MAX_TURNS": "100", "A2AC_LIMITS_REFRESH": "2s"}), Need{})
	if err != nil {
		t.Fatal(err)
	}
	if want := (AdmissionCaps{Replica: 800, Tenant: 200, Agent: 100}); cfg.Admission != want || cfg.LimitsRefresh != 2*time.Second {
		t.Errorf("caps %+v every %s, want %+v every 2s", cfg.Admission, cfg.LimitsRefresh, want)
	}
	if cfg, _ := Load(env(nil), Need{}); cfg.Admission != (AdmissionCaps{}) || cfg.LimitsRefresh != 10*time.Second {
		t.Errorf("unset: caps %+v every %s, want zeros (the defaults) every 10s", cfg.Admission, cfg.LimitsRefresh)
	}
	for v, want := range map[string]time.Duration{"": time.Second, "250ms": 250 * time.Millisecond, "0": 0, "0s": 0} {
		if cfg, err := Load(env(map[string]string{"A2AC_CAP_SYNC": v}), Need{}); err != nil || cfg.CapSync != want {
			t.Errorf("A2AC_CAP_SYNC=%q: %s, %v; want %s", v, cfg.CapSync, err, want)
		}
	}
	_, err = Load(env(map[string]string{"A2AC_MAX_TURNS": "0", "A2AC_TENANT_MAX_TURNS": "many", "A2AC_AGENT_MAX_TURNS": "-3",
		"A2AC_CAP_SYNC": "-1s"}), Need{})
	for _, w := range []string{"A2AC_MAX_TURNS:", "A2AC_TENANT_MAX_TURNS:", "A2AC_AGENT_MAX_TURNS:", "A2AC_CAP_SYNC:"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q: %v", w, err)
		}
	}
}

// A removed setting left set does not stop a process from starting: Load says it is ignored,
// whatever its value, and WarnIgnored logs that once. Its flag is still accepted.
func TestRemovedSettingIsIgnoredWithAWarning(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"grpc-go", "h2grpc", "anything"} {
		cfg, err := Load(env(map[string]string{"A2AC_GRPC_TRANSPORT": v}), Need{})
		if err != nil {
			t.Fatalf("A2AC_GRPC_TRANSPORT=%s: %v", v, err)
		}
		if len(cfg.Ignored) != 1 || !strings.HasPrefix(cfg.Ignored[0], "A2AC_GRPC_TRANSPORT is ignored: removed") {
			t.Errorf("A2AC_GRPC_TRANSPORT=%s: Ignored = %q", v, cfg.Ignored)
		}
		var logged bytes.Buffer
		cfg.WarnIgnored(slog.New(slog.NewTextHandler(&logged, nil)))
		if n := strings.Count(logged.String(), "level=WARN"); n != 1 || !strings.Contains(logged.String(), "A2AC_GRPC_TRANSPORT") {
			t.Errorf("logged %d warnings: %s", n, logged.String())
		}
	}
	if cfg, err := Load(env(nil), Need{}); err != nil || cfg.Ignored != nil {
		t.Errorf("nothing set: Ignored = %q, %v", cfg.Ignored, err)
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	getenv := WithFlags(fs, env(nil))
	if err := fs.Parse([]string{"-grpc-transport", "grpc-go"}); err != nil {
		t.Fatalf("the removed setting's flag: %v", err)
	}
	if cfg, _ := Load(getenv, Need{}); len(cfg.Ignored) != 1 {
		t.Errorf("the removed setting's flag: Ignored = %q", cfg.Ignored)
	}
}

// TestAgentCAFile: the bundle is added to the system roots; a file that cannot be read, holds
// no certificate, a broken one, or something else than certificates stops the start with one
// line naming the setting.
func TestAgentCAFile(t *testing.T) {
	t.Parallel()
	ca := testca.New(t)
	dir := t.TempDir()
	file := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	other := testca.New(t)
	bundle := file("bundle.pem", append(append([]byte("# our CAs\n"), ca.PEM...), other.PEM...))

	cfg, err := Load(env(map[string]string{"A2AC_AGENT_CA_FILE": bundle}), Need{})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want, err := x509.SystemCertPool()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range [][]byte{ca.PEM, other.PEM} {
		if !want.AppendCertsFromPEM(p) {
			t.Fatal("test CA does not parse")
		}
	}
	if cfg.AgentCAFile != bundle || cfg.AgentRoots == nil || !cfg.AgentRoots.Equal(want) {
		t.Errorf("AgentRoots is not the system roots plus the bundle")
	}
	if cfg, err := Load(env(nil), Need{}); err != nil || cfg.AgentRoots != nil {
		t.Errorf("unset: roots %v, err %v; want none (the system roots alone)", cfg.AgentRoots, err)
	}

	key := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("secret")})
	broken := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not DER")})
	for _, tc := range []struct{ name, path, want string }{
		{"missing_file", filepath.Join(dir, "nope.pem"), "no such file"},
		{"not_pem", file("text.pem", []byte("hello")), "holds no PEM certificate"},
		{"broken_certificate", file("broken.pem", append(append([]byte{}, ca.PEM...), broken...)), "certificate 2"},
		{"private_key", file("key.pem", append(append([]byte{}, ca.PEM...), key...)), "PEM block 2 is a PRIVATE KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Load(env(map[string]string{"A2AC_AGENT_CA_FILE": tc.path}), Need{})
			if err == nil || !strings.HasPrefix(err.Error(), "A2AC_AGENT_CA_FILE: ") || !strings.Contains(err.Error(), tc.want) ||
				strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "secret") {
				t.Errorf("err = %v, want one line naming A2AC_AGENT_CA_FILE and %q", err, tc.want)
			}
		})
	}
}
