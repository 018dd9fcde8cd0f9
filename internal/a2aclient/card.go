package a2aclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/a2a-connector/a2a-connector/internal/a2a"

	a2apbv0 "github.com/a2aproject/a2a-go/a2apb"
	sdkv03 "github.com/a2aproject/a2a-go/a2apb/pbconv"
	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	sdkv1 "github.com/a2aproject/a2a-go/v2/a2apb/v1/pbconv"
)

// The authenticated extended card, asked for like any other operation: on the interface turns
// use, in its binding and generation, through the same http.Client (the SSRF guard), gRPC
// connections, retry policy and budget, with the endpoint's credentials in Endpoint.Header.
//
//	A2A 1.0  JSON-RPC   GetExtendedAgentCard {tenant}
//	         HTTP+JSON  GET {url}[/{tenant}]/extendedAgentCard
//	         gRPC       A2AService.GetExtendedAgentCard {tenant}
//	A2A 0.3  JSON-RPC   agent/getAuthenticatedExtendedCard
//	         HTTP+JSON  GET {url}/v1/card
//	         gRPC       A2AService.GetAgentCard
//
// a2a-go v2's 0.3 compat REST server serves GET {url}/extendedAgentCard with a snake_case 0.3
// card; it is reached as for the other operations, after one 404 on /v1 (rest03legacy.go).
//
// What comes back is the card as JSON of its generation, as a card URL would serve it, for
// internal/cardcheck to judge: JSON-RPC and 1.0 HTTP+JSON answers as they are; proto answers
// (gRPC of both generations, 0.3 HTTP+JSON's proto-JSON) converted with the SDK's own
// conversion (a2a-go v2's pbconv for 1.0, a2a-go v0.3.15's for 0.3) and written as that SDK's
// card type writes itself; the compat form's snake_case keys in camelCase.

// extendedCardParams is the request of OpGetExtendedAgentCard: it has nothing but the tenant,
// which the Endpoint carries.
type extendedCardParams struct{}

// extendedCard asks ep for its extended card; maxBytes caps the answer (<= 0: MaxBodyBytes).
func (c *Client) extendedCard(ctx context.Context, ep Endpoint, maxBytes int64) (json.RawMessage, error) {
	card, err := c.askExtendedCard(ctx, ep, maxBytes)
	if err != nil {
		return nil, cardError(err)
	}
	return card, nil
}

func (c *Client) askExtendedCard(ctx context.Context, ep Endpoint, maxBytes int64) (json.RawMessage, error) {
	if maxBytes <= 0 {
		maxBytes = c.opts.MaxBodyBytes
	}
	cl, err := c.newCall(ep, OpGetExtendedAgentCard)
	if err != nil {
		return nil, err
	}
	if ep.Binding == BindingGRPC {
		return c.grpcExtendedCard(ctx, ep, cl, maxBytes)
	}
	resp, err := c.doREST(ctx, ep, &cl, extendedCardParams{}, "application/json")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if ct := mediaType(resp.Header); !isJSONType(ct) {
		return nil, unexpectedType(cl.method, ct)
	}
	body, err := c.readBodyMax(ctx, cl.method, resp.Body, maxBytes)
	if err != nil {
		return nil, err
	}
	var card []byte
	switch {
	case cl.restLegacy:
		if e, ok := restV0ErrorBody(cl.method, body, 0); ok {
			return nil, e
		}
		card, err = camelKeys(body)
	case cl.restV0:
		var pb a2apbv0.AgentCard
		if err := restV0Unmarshal(body, &pb); err != nil {
			return nil, &a2a.ProtocolError{Method: cl.method, Kind: a2a.ProtocolBadJSON, Detail: "agent card: " + err.Error(), Err: err}
		}
		return cardJSONV0(cl.method, &pb)
	case cl.rest:
		card = body
	default:
		card, err = decodeEnvelope(cl.method, body, cl.id)
		if err != nil {
			return nil, err
		}
	}
	if card = bytes.TrimSpace(card); err != nil || !json.Valid(card) || card[0] != '{' {
		return nil, &a2a.ProtocolError{Method: cl.method, Kind: a2a.ProtocolInvalidResponse, Detail: "the answer is not an agent card (a JSON object)"}
	}
	return card, nil
}

// cardJSONV1 writes a 1.0 proto card as a2a-go v2 serves cards.
func cardJSONV1(method string, pb *a2apb.AgentCard) (json.RawMessage, error) {
	card, err := sdkv1.FromProtoAgentCard(pb)
	if err != nil {
		return nil, &a2a.ProtocolError{Method: method, Kind: a2a.ProtocolInvalidResponse, Detail: "agent card: " + err.Error(), Err: err}
	}
	return marshalCard(method, card)
}

// cardJSONV0 writes a 0.3 proto card as a2a-go v0.3.15 serves cards.
func cardJSONV0(method string, pb *a2apbv0.AgentCard) (json.RawMessage, error) {
	card, err := sdkv03.FromProtoAgentCard(pb)
	if err != nil {
		return nil, &a2a.ProtocolError{Method: method, Kind: a2a.ProtocolInvalidResponse, Detail: "agent card: " + err.Error(), Err: err}
	}
	return marshalCard(method, card)
}

func marshalCard(method string, card any) (json.RawMessage, error) {
	b, err := json.Marshal(card)
	if err != nil {
		// The SDK's types marshal what its conversion produced; a failure is theirs to explain.
		return nil, fmt.Errorf("a2a %s: write the agent card as JSON: %w", method, err)
	}
	return b, nil
}

// cardError gives a refusal of the extended card its A2A meaning: the call names no task, so
// the "not found" that some servers answer without an A2A reason (a2a-go v0.3.15's gRPC
// NOT_FOUND, an HTTP 404 with an A2A body but no code) means the card is not configured.
func cardError(err error) error {
	var rpc *a2a.RPCError
	if !errors.As(err, &rpc) {
		var hse *HTTPStatusError
		if !errors.As(err, &hse) || hse.RPC == nil {
			return err
		}
		rpc = hse.RPC
	}
	if rpc.Code == a2a.CodeTaskNotFound {
		rpc.Code = a2a.CodeAuthenticatedExtendedCardNotConfigured
	}
	return err
}
