package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc"
)

// The stub agent is the other end of both clients: a trivial A2A 0.3 JSON-RPC agent whose
// reply is fixed by the request text, so both clients know the exact text to expect and the
// agent costs the same whoever calls it. It is deliberately not built on the connector's
// internal/a2a package: it must not share code (or bugs) with what it measures.
//
// The request text is a list of key=value words:
//
//	id=<turn id> chunks=<N> delay=<Go duration>
//
// and the reply is a Task, then N artifact-update events (append=true after the first, the
// last with lastChunk=true) carrying replyChunk(id, i), with `delay` before each chunk after the
// first, then a completed status-update with final=true. message/send answers the same Task,
// completed, in one JSON response.

// agentMaxBody caps a request body: the load generator's requests are a few hundred bytes.
const agentMaxBody = 1 << 20

// replyChunk is the i-th text chunk of the reply to turn id; both clients compare against it.
func replyChunk(id string, i int) string {
	return id + "." + strconv.Itoa(i) + " the quick brown fox jumps over the lazy dog. "
}

// replyText is the whole reply of a turn of n chunks.
func replyText(id string, n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(replyChunk(id, i))
	}
	return b.String()
}

// turnText is the user text that asks the stub agent for n chunks, delay apart.
func turnText(id string, n int, delay time.Duration) string {
	return "id=" + id + " chunks=" + strconv.Itoa(n) + " delay=" + delay.String()
}

// replySpec is what a request text asks for.
type replySpec struct {
	id     string
	chunks int
	delay  time.Duration
}

// parseTurnText reads a turnText; words it does not know are ignored, missing ones keep def.
func parseTurnText(text string, def replySpec) (replySpec, error) {
	s := def
	for _, w := range strings.Fields(text) {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			continue
		}
		switch k {
		case "id":
			s.id = v
		case "chunks":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 10000 {
				return s, fmt.Errorf("chunks=%q: want 1..10000", v)
			}
			s.chunks = n
		case "delay":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 || d > time.Minute {
				return s, fmt.Errorf("delay=%q: want a duration up to 1m", v)
			}
			s.delay = d
		}
	}
	return s, nil
}

// stubAgent serves the card on the well-known paths and JSON-RPC on every POST (the card's url
// and url/stream alike, so the connector never needs its fallback from url/stream to url).
type stubAgent struct {
	def    replySpec
	prefix string // random, so task and context ids are unique across agent restarts
	seq    atomic.Uint64
	// open and peak count streams in progress, so a run can show how many were open at once
	// (GET peakPath reads the peak since the last read and starts a new one).
	open, peak atomic.Int64
}

// peakPath answers the largest number of streams open at once since the previous request to it.
const peakPath = "/loadgen/peak"

func newStubAgent(chunks int, delay time.Duration) *stubAgent {
	var b [4]byte
	rand.Read(b[:]) // never fails since Go 1.24
	return &stubAgent{def: replySpec{id: "x", chunks: chunks, delay: delay}, prefix: hex.EncodeToString(b[:])}
}

func (a *stubAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && (r.URL.Path == "/.well-known/agent-card.json" || r.URL.Path == "/.well-known/agent.json"):
		a.serveCard(w, r)
	case r.Method == http.MethodGet && r.URL.Path == peakPath:
		// Swap in the current count: the next peak is measured from now.
		fmt.Fprintln(w, a.peak.Swap(a.open.Load()))
	case r.Method == http.MethodPost:
		a.serveRPC(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (a *stubAgent) serveCard(w http.ResponseWriter, r *http.Request) {
	base := "http://" + r.Host
	card := map[string]any{
		"name":               "loadgen stub agent",
		"description":        "Answers every message with a fixed number of text chunks; for load generation.",
		"protocolVersion":    "0.3.0",
		"url":                base + "/",
		"preferredTransport": "JSONRPC",
		"version":            "1.0.0",
		"capabilities":       map[string]any{"streaming": true},
		"defaultInputModes":  []string{"text/plain"},
		"defaultOutputModes": []string{"text/plain"},
		"skills": []map[string]any{{
			"id": "echo-chunks", "name": "Chunks", "description": "Streams N text chunks.",
			"tags": []string{"loadgen"},
		}},
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(card)
}

// Wire shapes of the stub agent: only what it reads and writes.
type (
	rpcRequest struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  struct {
			Message struct {
				MessageID string `json:"messageId"`
				ContextID string `json:"contextId"`
				Parts     []struct {
					Kind string `json:"kind"`
					Text string `json:"text"`
				} `json:"parts"`
				// Metadata is only looked into by the voice row's face, whose turns must carry
				// the voice extension's input.
				Metadata map[string]json.RawMessage `json:"metadata"`
			} `json:"message"`
		} `json:"params"`
	}
	rpcResponse struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result,omitempty"`
		Error   *rpcError       `json:"error,omitempty"`
	}
	rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	textPart struct {
		Kind string `json:"kind"`
		Text string `json:"text"`
	}
	artifact struct {
		ArtifactID string     `json:"artifactId"`
		Parts      []textPart `json:"parts"`
	}
	taskStatus struct {
		State     string `json:"state"`
		Timestamp string `json:"timestamp,omitempty"`
	}
	taskResult struct {
		Kind      string     `json:"kind"`
		ID        string     `json:"id"`
		ContextID string     `json:"contextId"`
		Status    taskStatus `json:"status"`
		Artifacts []artifact `json:"artifacts,omitempty"`
	}
	artifactUpdate struct {
		Kind      string   `json:"kind"`
		TaskID    string   `json:"taskId"`
		ContextID string   `json:"contextId"`
		Artifact  artifact `json:"artifact"`
		Append    bool     `json:"append"`
		LastChunk bool     `json:"lastChunk"`
	}
	statusUpdate struct {
		Kind      string     `json:"kind"`
		TaskID    string     `json:"taskId"`
		ContextID string     `json:"contextId"`
		Status    taskStatus `json:"status"`
		Final     bool       `json:"final"`
	}
)

func (a *stubAgent) serveRPC(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, agentMaxBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req rpcRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeRPC(w, rpcResponse{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: &rpcError{Code: -32700, Message: "parse error: " + err.Error()}})
		return
	}
	if len(req.ID) == 0 {
		req.ID = json.RawMessage("null")
	}
	if req.Method != "message/stream" && req.Method != "message/send" {
		writeRPC(w, rpcResponse{JSONRPC: "2.0", ID: req.ID, Error: &rpcError{Code: -32601, Message: fmt.Sprintf("method %q not found", req.Method)}})
		return
	}
	var text string
	for _, p := range req.Params.Message.Parts {
		if p.Kind == "text" {
			text += p.Text
		}
	}
	spec, err := parseTurnText(text, a.def)
	if err == nil && strings.HasPrefix(r.URL.Path, "/"+targetVoice+"/") && req.Params.Message.Metadata[voiceExtension+"/input"] == nil {
		err = errors.New("a voice turn without " + voiceExtension + "/input in its metadata")
	}
	if err != nil {
		writeRPC(w, rpcResponse{JSONRPC: "2.0", ID: req.ID, Error: &rpcError{Code: -32602, Message: "invalid params: " + err.Error()}})
		return
	}
	n := a.seq.Add(1)
	taskID := a.prefix + "-t" + strconv.FormatUint(n, 10)
	contextID := req.Params.Message.ContextID
	if contextID == "" {
		contextID = a.prefix + "-c" + strconv.FormatUint(n, 10)
	}
	if req.Method == "message/send" {
		a.send(r.Context(), w, req.ID, spec, taskID, contextID)
		return
	}
	a.stream(r.Context(), w, req.ID, spec, taskID, contextID)
}

// send answers message/send: the completed task with the whole reply as one artifact.
func (a *stubAgent) send(ctx context.Context, w http.ResponseWriter, id json.RawMessage, spec replySpec, taskID, contextID string) {
	if spec.delay > 0 && spec.chunks > 1 {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(spec.chunks-1) * spec.delay):
		}
	}
	writeRPC(w, rpcResponse{JSONRPC: "2.0", ID: id, Result: taskResult{
		Kind: "task", ID: taskID, ContextID: contextID,
		Status:    taskStatus{State: "completed", Timestamp: time.Now().UTC().Format(time.RFC3339Nano)},
		Artifacts: []artifact{{ArtifactID: "reply", Parts: []textPart{{Kind: "text", Text: replyText(spec.id, spec.chunks)}}}},
	}})
}

// stream answers message/stream with SSE, one write and flush per event, as a real agent that
// forwards a model's tokens would.
func (a *stubAgent) stream(ctx context.Context, w http.ResponseWriter, id json.RawMessage, spec replySpec, taskID, contextID string) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	defer a.streamOpened()()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	var buf bytes.Buffer
	emit := func(result any) bool {
		buf.Reset()
		buf.WriteString("data: ")
		b, err := json.Marshal(rpcResponse{JSONRPC: "2.0", ID: id, Result: result})
		if err != nil {
			return false // unreachable: the shapes are plain structs
		}
		buf.Write(b)
		buf.WriteString("\n\n")
		if _, err := w.Write(buf.Bytes()); err != nil {
			return false
		}
		fl.Flush()
		return true
	}
	if !emit(taskResult{Kind: "task", ID: taskID, ContextID: contextID, Status: taskStatus{State: "submitted"}}) {
		return
	}
	var timer *time.Timer
	for i := range spec.chunks {
		if i > 0 && spec.delay > 0 {
			if timer == nil {
				timer = time.NewTimer(spec.delay)
				defer timer.Stop()
			} else {
				timer.Reset(spec.delay)
			}
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
		}
		if !emit(artifactUpdate{Kind: "artifact-update", TaskID: taskID, ContextID: contextID,
			Artifact: artifact{ArtifactID: "reply", Parts: []textPart{{Kind: "text", Text: replyChunk(spec.id, i)}}},
			Append:   i > 0, LastChunk: i == spec.chunks-1}) {
			return
		}
	}
	emit(statusUpdate{Kind: "status-update", TaskID: taskID, ContextID: contextID,
		Status: taskStatus{State: "completed", Timestamp: time.Now().UTC().Format(time.RFC3339Nano)}, Final: true})
}

func writeRPC(w http.ResponseWriter, res rpcResponse) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(res)
}

// runAgent is `loadgen agent`: serve the stub agent until ctx ends. It prints
// "listening on http://HOST:PORT grpc HOST:PORT2" on stdout once it accepts connections, which
// is how the load generator learns the ports it chose with :0 (the second is the gRPC face's,
// on the same host).
func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("loadgen agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	chunks := fs.Int("chunks", 3, "text chunks per reply when the request text does not say")
	delay := fs.Duration("chunk-delay", 0, "pause between chunks when the request text does not say")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("agent: listen %s: %w", *addr, err)
	}
	host, _, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		ln.Close()
		return fmt.Errorf("agent: %w", err)
	}
	gln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		ln.Close()
		return fmt.Errorf("agent: listen %s (gRPC): %w", host, err)
	}
	f := newFaces(newStubAgent(*chunks, *delay), stubSecrets{
		apiKey: os.Getenv(envAPIKey), clientID: os.Getenv(envClientID), clientSecret: os.Getenv(envClientSecret),
		awsKeyID: os.Getenv(envAWSKeyID), awsSecret: os.Getenv(envAWSSecret)}, gln.Addr().String())
	srv := &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	servers := []*http.Server{srv}
	gs := grpc.NewServer()
	a2apb.RegisterA2AServiceServer(gs, grpcFace{f: f})
	ready := fmt.Sprintf("listening on http://%s grpc %s", ln.Addr(), gln.Addr())
	errc := make(chan error, 4)
	serves := 2
	mutual, plain, withTLS, err := agentTLS(os.Getenv)
	if err != nil {
		ln.Close()
		gln.Close()
		return err
	}
	if withTLS {
		// The mtls and apikey-tls rows' ports: HTTP/2 and HTTP/1.1 over TLS (ServeTLS offers
		// both), one demanding a client certificate.
		for _, side := range []struct {
			name string
			cfg  *tls.Config
		}{{"mtls", mutual}, {"tls", plain}} {
			tln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
			if err != nil {
				for _, s := range servers {
					s.Close()
				}
				ln.Close()
				gln.Close()
				return fmt.Errorf("agent: listen %s (%s): %w", host, side.name, err)
			}
			ts := &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second, TLSConfig: side.cfg}
			servers = append(servers, ts)
			ready += " " + side.name + " " + tln.Addr().String()
			serves++
			go func() { errc <- ts.ServeTLS(tln, "", "") }()
		}
	}
	fmt.Fprintln(stdout, ready)
	go func() { errc <- srv.Serve(ln) }()
	go func() { errc <- gs.Serve(gln) }()
	select {
	case err := <-errc:
		gs.Stop()
		for _, s := range servers {
			s.Close()
		}
		for range serves - 1 {
			<-errc
		}
		return fmt.Errorf("agent: serve: %w", err)
	case <-ctx.Done():
	}
	// Streams still open end with the load generator that drives them.
	gs.Stop()
	<-errc
	// Streams still open end with the load generator that drives them; do not wait for them.
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	for _, s := range servers {
		if err := s.Shutdown(shutCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("agent: shutdown: %w", err)
		}
		s.Close()
	}
	return nil
}
