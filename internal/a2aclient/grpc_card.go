package a2aclient

import (
	"context"
	"encoding/json"
	"fmt"

	a2apbv0 "github.com/a2aproject/a2a-go/a2apb"
	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc"
)

// grpcExtendedCard asks a gRPC interface for the extended card: A2AService.GetExtendedAgentCard
// (1.0, with the tenant) or the 0.3 service's GetAgentCard, on the connection turns use, with
// their metadata (credentials, A2A-Version on 1.0), retries and error mapping; an answer over
// maxBytes is ProtocolEventTooLarge.
func (c *Client) grpcExtendedCard(ctx context.Context, ep Endpoint, cl call, maxBytes int64) (json.RawMessage, error) {
	conn, err := c.grpc.acquire(ctx, ep.URL)
	if err != nil {
		return nil, fmt.Errorf("a2a %s: %w", cl.method, err)
	}
	defer c.grpc.release(conn)
	callCtx := grpcMetadata(ctx, ep, cl.d)
	limit := grpc.MaxCallRecvMsgSize(int(min(maxBytes, 1<<30)))
	var v1 *a2apb.AgentCard
	var v0 *a2apbv0.AgentCard
	err = c.grpcAttempt(ctx, ep, conn, func() error {
		var err error
		if cl.grpcV0 {
			v0, err = conn.clientV0.GetAgentCard(callCtx, &a2apbv0.GetAgentCardRequest{}, limit)
		} else {
			v1, err = conn.client.GetExtendedAgentCard(callCtx, &a2apb.GetExtendedAgentCardRequest{Tenant: ep.Tenant}, limit)
		}
		return err
	})
	c.observeGRPC(ep, cl.op, false, err)
	if err != nil {
		return nil, c.grpcError(ctx, cl.method, conn, err)
	}
	if cl.grpcV0 {
		return cardJSONV0(cl.method, v0)
	}
	return cardJSONV1(cl.method, v1)
}
