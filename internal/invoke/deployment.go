package invoke

import (
	"context"
	"log/slog"

	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
	"github.com/a2a-connector/a2a-connector/internal/breaker"
	"github.com/a2a-connector/a2a-connector/internal/config"
	"github.com/a2a-connector/a2a-connector/internal/identity"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/secret"
	"github.com/a2a-connector/a2a-connector/internal/telemetry"
)

// DeploymentStore is what the Options of DeploymentOptions keep in Postgres (store.Store is one):
// the caller-identity signing keys, and which agents' turns moved to their card's fallback
// interface.
type DeploymentStore interface {
	identity.Keys
	MarkOnFallback(ctx context.Context, tenantID, agentID string, revision int) error
}

// DeploymentOptions are the Options with which a binary of the deployment (cmd/connector,
// cmd/console-api) calls the tenants' agents, in one place so that both call them alike:
//   - agents, and their token URLs, are reached through the SSRF guard of cfg's policy, on every
//     binding (the HTTP client, and the policy gRPC calls dial with), without redirects;
//   - their certificates are verified against the system roots plus A2AC_AGENT_CA_FILE, on
//     every binding too;
//   - every call is traced by tp (a client span per call, traceparent naming it, on HTTP and on
//     gRPC alike);
//   - API keys are opened with box, identity tokens signed with st's keys for cfg's issuer,
//     and a move to a card's fallback interface recorded in st;
//   - brk and budget are the process's circuit breakers and retry budget.
func DeploymentOptions(cfg config.Config, tp *telemetry.Providers, st DeploymentStore, box *secret.Box,
	brk *breaker.Breaker, budget *a2aclient.RetryBudget, log *slog.Logger) Options {
	policy := cfg.Policy()
	return Options{
		Client: netguard.NewClient(policy, netguard.ClientOptions{MaxRedirects: 0, InlineHTTP1: true,
			WrapTransport: tp.AgentTransport, RootCAs: cfg.AgentRoots, Logger: log}),
		GRPCPolicy:       &policy,
		RootCAs:          cfg.AgentRoots,
		GRPCStatsHandler: tp.AgentGRPCStatsHandler(),
		Secrets:          box,
		Identity:         identity.New(identity.Options{Keys: st, Secrets: box, Issuer: cfg.IdentityIssuer}),
		TurnTimeout:      cfg.TurnTimeout,
		Logger:           log,
		TracerProvider:   tp.TracerProvider,
		MeterProvider:    tp.MeterProvider,
		Breaker:          brk,
		RetryBudget:      budget,
		OnFallback:       st.MarkOnFallback,
	}
}
