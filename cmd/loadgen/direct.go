package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// directClient is the bare A2A client: net/http, a hand-written SSE reader and encoding/json,
// nothing of the connector. It is the baseline a turn through the connector is compared with:
// the least any client must do to get the same text from the same agent.
type directClient struct {
	url   string
	http  *http.Client
	rpcID atomic.Int64
	// header is sent on every call: the credential of the API-key and OAuth2 rows.
	header http.Header
	// metadata, when set, is the message's metadata on every call (the voice row's).
	metadata map[string]any
	// sign, when set, signs every call (the SigV4 row's), after its headers are set.
	sign func(*http.Request, []byte) error
}

func newDirectClient(url string, maxConns int) *directClient {
	tr := &http.Transport{
		// Generous: opening thousands of streams at once overflows the agent's listen backlog,
		// and the kernel retries a dropped SYN after 1 s, 3 s, 7 s; the baseline should see
		// that as latency, like the connector's turns do, not as failures.
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second}).DialContext,
		MaxIdleConns:        maxConns,
		MaxIdleConnsPerHost: maxConns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &directClient{url: url, http: &http.Client{Transport: tr}}
}

// closeIdle drops pooled connections between phases, so the agent does not keep thousands of
// idle sockets from a direct phase while the connector's phase runs.
func (c *directClient) closeIdle() { c.http.CloseIdleConnections() }

// sseEvent is the part of a streamed JSON-RPC response the bare client looks at.
type sseEvent struct {
	ID     json.RawMessage `json:"id"`
	Error  *rpcError       `json:"error"`
	Result struct {
		Kind      string `json:"kind"`
		ContextID string `json:"contextId"`
		Status    struct {
			State string `json:"state"`
		} `json:"status"`
		Final    bool `json:"final"`
		Append   bool `json:"append"`
		Artifact struct {
			Parts []struct {
				Kind string `json:"kind"`
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"artifact"`
	} `json:"result"`
}

// turn runs one message/stream turn and checks it: it must end in a completed status-update
// with final=true, and the streamed text must be exactly want. contextID continues a session
// ("" starts one); the agent's context id is returned for the next turn.
func (c *directClient) turn(ctx context.Context, contextID, text, want string) (res turnTiming, newContext string, err error) {
	start := time.Now()
	id := c.rpcID.Add(1)
	msg := map[string]any{
		"kind": "message", "role": "user", "messageId": "lg-" + strconv.FormatInt(id, 10) + "-" + strconv.FormatInt(start.UnixNano(), 36),
		"parts": []map[string]string{{"kind": "text", "text": text}},
	}
	if contextID != "" {
		msg["contextId"] = contextID
	}
	if c.metadata != nil {
		msg["metadata"] = c.metadata
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "message/stream",
		"params": map[string]any{"message": msg, "configuration": map[string]any{"acceptedOutputModes": []string{"text/plain"}}}})
	if err != nil {
		return res, "", fmt.Errorf("encode request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return res, "", fmt.Errorf("new request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range c.header {
		req.Header[k] = v
	}
	if c.sign != nil {
		if err := c.sign(req, body); err != nil {
			return res, "", fmt.Errorf("sign: %w", err)
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return res, "", fmt.Errorf("post: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return res, "", fmt.Errorf("answer %s %q: %s", resp.Status, resp.Header.Get("Content-Type"), b)
	}

	wantID := []byte(strconv.FormatInt(id, 10))
	var got strings.Builder
	var data []byte
	haveData := false
	br := bufio.NewReaderSize(resp.Body, 16<<10)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				return res, "", errors.New("stream ended before a final completed status")
			}
			return res, "", fmt.Errorf("read stream: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) > 0 {
			if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				rest = bytes.TrimPrefix(rest, []byte(" "))
				if haveData {
					data = append(data, '\n')
				}
				data = append(data, rest...)
				haveData = true
			}
			continue // id:, event:, comments: ignored
		}
		if !haveData {
			continue
		}
		var ev sseEvent
		err = json.Unmarshal(data, &ev)
		data, haveData = data[:0], false
		switch {
		case err != nil:
			return res, "", fmt.Errorf("decode event: %w", err)
		case !bytes.Equal(ev.ID, wantID):
			return res, "", fmt.Errorf("event for JSON-RPC id %s, want %s", ev.ID, wantID)
		case ev.Error != nil:
			return res, "", fmt.Errorf("JSON-RPC error %d: %s", ev.Error.Code, ev.Error.Message)
		}
		r := &ev.Result
		if newContext == "" {
			newContext = r.ContextID
		}
		switch r.Kind {
		case "artifact-update":
			for _, p := range r.Artifact.Parts {
				if p.Kind == "text" && p.Text != "" {
					if res.firstText == 0 {
						res.firstText = time.Since(start)
					}
					got.WriteString(p.Text)
				}
			}
		case "status-update":
			if r.Status.State == "working" || r.Status.State == "submitted" {
				continue
			}
			switch {
			case r.Status.State != "completed" || !r.Final:
				return res, "", fmt.Errorf("ended in state %q (final=%v), want completed", r.Status.State, r.Final)
			case got.String() != want:
				return res, "", fmt.Errorf("text %q, want %q", trim(got.String()), trim(want))
			}
			// Read the body to its end: the call ends there, and its connection goes back to
			// the pool.
			_, _ = io.Copy(io.Discard, br)
			res.total = time.Since(start)
			return res, newContext, nil
		}
	}
}

// trim shortens a text for an error message.
func trim(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
