package invoke

import (
	"context"
	"encoding/json"

	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
)

// GetExtendedAgentCard asks an agent for its authenticated extended card on the wire client
// turns use: the same guarded HTTP client, gRPC connections, limits and retry budget, in the
// interface's binding (a2aclient.Client.GetExtendedAgentCard). ep carries the credentials
// (Authorizer). The card fetcher calls it (cardfetch.Options.Agents).
func (inv *Invoker) GetExtendedAgentCard(ctx context.Context, ep a2aclient.Endpoint, maxBytes int64) (json.RawMessage, error) {
	return inv.client.GetExtendedAgentCard(ctx, ep, maxBytes)
}
