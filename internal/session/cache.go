package session

import (
	"sync"
	"time"

	connector "github.com/a2a-connector/a2a-connector"
)

// cachedAgent is a decoded agent and its still-sealed key.
type cachedAgent struct {
	agent connector.Agent
	key   *connector.Sealed
}

// agentCache keeps decoded agents so a turn does not re-read and re-decode the card profile.
// Entries are valid only for the exact updated_at the store reports in the turn's first query,
// so the cache never serves a stale agent; it only saves work. Bounded: when full, an arbitrary
// entry is evicted (map iteration order), which is enough for a cache whose misses cost one
// indexed query.
type agentCache struct {
	mu  sync.Mutex
	max int
	m   map[string]*cachedAgent
}

func newAgentCache(max int) *agentCache {
	return &agentCache{max: max, m: make(map[string]*cachedAgent)}
}

func (c *agentCache) get(tenantID, agentID string, version time.Time) *cachedAgent {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[tenantID+"/"+agentID]
	if e == nil || !e.agent.UpdatedAt.Equal(version) {
		return nil
	}
	return e
}

func (c *agentCache) put(tenantID string, e *cachedAgent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[tenantID+"/"+e.agent.ID] = e
}
