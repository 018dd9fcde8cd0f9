package cardfetch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	connector "github.com/a2a-connector/a2a-connector"
)

// FetchExtended asks the agent for its authenticated extended card, with the credentials in
// hdr, on the JSON-RPC interface the profile chose: A2A 1.0 GetExtendedAgentCard, 0.3
// agent/getAuthenticatedExtendedCard. It returns the extended card's skills, judged like a
// card's (a card that is not valid gives none: the public card's skills stay). Bounded by the
// fetch timeout and size cap, through the guarded client, never following a redirect with the
// credentials to another host.
func (f *Fetcher) FetchExtended(ctx context.Context, p connector.CardProfile, hdr http.Header) ([]connector.Skill, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	method, params := "agent/getAuthenticatedExtendedCard", map[string]any{}
	v1 := strings.HasPrefix(p.ProtocolVersion, "1.")
	if v1 {
		method = "GetExtendedAgentCard"
		if p.EndpointTenant != "" {
			params["tenant"] = p.EndpointTenant
		}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.EndpointURL, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("extended card: %w", err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if v1 {
		req.Header.Set(A2AVersionHeader, "1.0")
	}
	c := *f.client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("extended card from %s: %s", p.EndpointURL, classify(ctx, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("extended card from %s: HTTP %d", p.EndpointURL, resp.StatusCode)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, f.maxBytes+1))
	if err != nil || int64(len(raw)) > f.maxBytes {
		return nil, fmt.Errorf("extended card from %s: body unreadable or over %d bytes", p.EndpointURL, f.maxBytes)
	}
	var rpc struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &rpc); err != nil {
		return nil, fmt.Errorf("extended card from %s: not JSON-RPC", p.EndpointURL)
	}
	if rpc.Error != nil {
		return nil, fmt.Errorf("extended card from %s: agent error %d", p.EndpointURL, rpc.Error.Code)
	}
	rep := f.checker.Check(rpc.Result)
	if !rep.Valid || len(rep.Profile.Skills) == 0 {
		return nil, fmt.Errorf("extended card from %s: not a valid card", p.EndpointURL)
	}
	return rep.Profile.Skills, nil
}
