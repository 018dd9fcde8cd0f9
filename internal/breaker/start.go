package breaker

import (
	"context"
	"log/slog"
	"time"
)

// Deployment is where a deployment keeps its breakers (internal/store's Circuits, on Postgres):
// the Share every process asks, the listener that keeps a process's Breaker in step with what
// the others change, and the processes' copies for the health view.
type Deployment interface {
	Share
	Copies
	// Listen hands every change of the deployment's breakers to b (Learn, Resync) until ctx
	// ends, listening again after a lost connection.
	Listen(ctx context.Context, b *Breaker)
}

// Start builds the circuit breaker of a process from its settings (failures, and o without
// Share and OnChange), shared by the deployment d: its changes are logged, published for the
// health view (Publisher, whose loop ends with background), and learned from the other
// processes (d.Listen) until stop. stop waits for the breaker's calls to the deployment and
// writes the last changes: call it after the turns drained, before the pool closes. The breaker
// is nil when failures is 0 (breaking off).
func Start(background context.Context, d Deployment, failures int, o Options, log *slog.Logger) (*Breaker, func()) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	publisher := NewPublisher(d, log)
	stopPublisher := publisher.Start(background, 5*time.Second)
	o.Share = d
	o.OnChange = func(c Change) {
		// Rare (an agent going down or coming back), and what an operator looks for first.
		log.Info("agent circuit breaker changed", "tenant_id", c.TenantID, "agent_id", c.AgentID, "state", c.State,
			"learned_from_deployment", c.Learned)
		publisher.Publish(c)
	}
	if failures <= 0 {
		return nil, stopPublisher
	}
	o.Failures = failures
	b := New(o)
	// Listening outlives the drain (background ends as shutdown begins): draining turns still
	// learn what the other replicas find.
	ctx, cancel := context.WithCancel(context.WithoutCancel(background))
	done := make(chan struct{})
	go func() { defer close(done); d.Listen(ctx, b) }()
	return b, func() {
		cancel()
		<-done
		cctx, cancelClose := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancelClose()
		if err := b.Close(cctx); err != nil {
			log.Warn("circuit breakers: last calls to the deployment", "error", err.Error())
		}
		stopPublisher()
	}
}
