package breaker

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"
)

const (
	// copyRefresh is how often the copies of breakers that are not closed are rewritten: a copy
	// not rewritten for a while (store.BreakerRecent) belongs to a replica that is gone.
	copyRefresh = time.Minute
	// CopyKeep is how long copies are kept before the publishers delete them.
	CopyKeep = 24 * time.Hour
	// publishTimeout bounds one write of the publisher.
	publishTimeout = 10 * time.Second
)

// Copies is where each process's copy of the breakers is written for the tenants' health view
// (agent_breakers; internal/store's Circuits writes as its process's replica).
type Copies interface {
	// PutCopies writes the newest change of each agent endpoint given.
	PutCopies(ctx context.Context, changes []Change) error
	// PruneCopies deletes copies not written for longer than keep.
	PruneCopies(ctx context.Context, keep time.Duration) error
}

// Publisher writes this process's circuit breaker changes (Options.OnChange) to Copies, for
// the tenants' health view: each process's copy of the deployment's breakers, which tells a
// replica that decides on its own (Postgres was away) from the others. Publish only stores the
// change in memory; Run writes it from a goroutine of its own, so a turn never waits for the
// database, and a slow or absent database only delays what tenants see. Changes of one agent
// coalesce: the newest wins.
type Publisher struct {
	copies Copies
	log    *slog.Logger
	notify chan struct{}

	mu      sync.Mutex
	pending map[agentKey]Change
	// current holds the breakers that are not closed, rewritten every copyRefresh.
	current map[agentKey]Change
}

type agentKey struct{ tenantID, agentID string }

// ReplicaName names this process in agent_breakers: service + "/" + its host name (the pod's
// name on Kubernetes).
func ReplicaName(service string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return service + "/" + host
}

// NewPublisher returns a publisher writing to copies.
func NewPublisher(copies Copies, log *slog.Logger) *Publisher {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Publisher{copies: copies, log: log, notify: make(chan struct{}, 1),
		pending: map[agentKey]Change{}, current: map[agentKey]Change{}}
}

// Publish records a change; it never blocks. Changes of agents that are not stored (ids that are
// not UUIDs: no tenant agent) are dropped.
func (p *Publisher) Publish(c Change) {
	if uuid.Validate(c.TenantID) != nil || uuid.Validate(c.AgentID) != nil {
		return
	}
	k := agentKey{c.TenantID, c.AgentID}
	p.mu.Lock()
	p.pending[k] = c
	if c.State == Closed {
		delete(p.current, k)
	} else {
		p.current[k] = c
	}
	p.mu.Unlock()
	select {
	case p.notify <- struct{}{}:
	default: // a write is already due
	}
}

// Run writes published changes until ctx ends, and rewrites the breakers that are not closed
// every minute. Call Flush after it returned, before the pool closes.
func (p *Publisher) Run(ctx context.Context) {
	tick := time.NewTicker(copyRefresh)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.notify:
		case <-tick.C:
			p.mu.Lock()
			for k, c := range p.current {
				if _, ok := p.pending[k]; !ok {
					p.pending[k] = c
				}
			}
			p.mu.Unlock()
			p.prune(ctx)
		}
		fctx, cancel := context.WithTimeout(ctx, publishTimeout)
		if err := p.Flush(fctx); err != nil && ctx.Err() == nil {
			p.log.Warn("health: publish breaker changes", slog.Any("error", err))
		}
		cancel()
	}
}

// Start runs Run on a goroutine of its own and returns the function that stops it: it waits for
// Run to return, then writes what is still pending, bounded by timeout (call it before the pool
// closes).
func (p *Publisher) Start(ctx context.Context, timeout time.Duration) (stop func()) {
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); p.Run(runCtx) }()
	return func() {
		cancel()
		<-done
		fctx, cancelFlush := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancelFlush()
		if err := p.Flush(fctx); err != nil {
			p.log.Warn("health: last breaker changes not written", slog.Any("error", err))
		}
	}
}

// Flush writes the pending changes. Those that could not be written stay pending, unless a
// newer change of the same agent came meanwhile.
func (p *Publisher) Flush(ctx context.Context) error {
	p.mu.Lock()
	batch := p.pending
	p.pending = make(map[agentKey]Change, len(batch))
	p.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	changes := make([]Change, 0, len(batch))
	for _, c := range batch {
		changes = append(changes, c)
	}
	err := p.copies.PutCopies(ctx, changes)
	if err != nil {
		p.mu.Lock()
		for k, c := range batch {
			if _, newer := p.pending[k]; !newer {
				p.pending[k] = c
			}
		}
		p.mu.Unlock()
	}
	return err
}

func (p *Publisher) prune(ctx context.Context) {
	pctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	if err := p.copies.PruneCopies(pctx, CopyKeep); err != nil && ctx.Err() == nil {
		p.log.Warn("health: prune breaker rows", slog.Any("error", err))
	}
}
