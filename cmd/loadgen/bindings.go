package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The rows per binding and per credential (-bindings, -credentials): the same stub agent, the
// same reply, reached another way, each registered as its own agent of the loadgen tenant.
//
//   - jsonrpc: the A2A 0.3 JSON-RPC agent of agent.go (the plain c=N rows' agent);
//   - rest: A2A 1.0 over HTTP+JSON, POST {base}/rest/message:stream, SSE whose data are the
//     proto's JSON (protojson of a2a.proto's StreamResponse);
//   - grpc: A2A 1.0 over gRPC, a2a.proto's A2AService (a2a-go v2's generated code) on a second
//     port of the agent;
//   - voice: the JSON-RPC agent under a card that declares the platform's voice extension, so
//     the via side's turns carry a channel and an interruption that the connector writes into
//     the message's metadata (and the direct side sends the same metadata itself); the agent
//     refuses a call that does not activate the extension;
//   - apikey: the JSON-RPC agent behind an API key (X-API-Key);
//   - identity: the API key face's agent, registered with callerIdentity, so that the via side's
//     turns name a user and the connector adds its signed token (A2A-Caller-Identity, cached per
//     user and agent) to each call; the agent refuses a call without a JWT-shaped one (checking
//     the signature is the agent's cost, not the connector's), and the direct side sends a
//     token of the same size;
//   - oauth2: the JSON-RPC agent behind a bearer token from a client-credentials token endpoint
//     the stub agent serves itself ({base}/oauth2/token). That endpoint is deliberately tiny: it
//     exists to measure the turn path with a cached token, not OAuth conformance (the tests of
//     internal/invoke run a real OAuth 2.0 server for that). It counts the tokens it issues;
//   - sigv4: the JSON-RPC agent behind AWS Signature Version 4, checked with the AWS SDK's
//     signer (sigv4.go);
//   - mtls: the JSON-RPC agent on a TLS port that demands a client certificate of a private CA
//     (mtls.go), registered with credentials.mtls and tls.caPem;
//   - apikey-tls: the API key's agent on a TLS port of the same CA without client
//     certificates, registered with tls.caPem: the mTLS row's reference.
//
// The direct side of each row speaks the same binding with the same credential, so "added" is
// the connector's cost on that binding. The stub shares no code with the connector: only the
// generated protobuf types of a2a-go, which are the spec's, not ours.

// Target names: the values of -bindings and -credentials.
const (
	targetJSONRPC  = "jsonrpc"
	targetREST     = "rest"
	targetGRPC     = "grpc"
	targetVoice    = "voice"
	targetAPIKey   = "apikey"
	targetOAuth2   = "oauth2"
	targetIdentity = "identity"
	targetSigV4    = "sigv4"
	targetMTLS     = "mtls"
	// targetAPIKeyTLS is the API key over TLS of the same private CA: the mTLS row's like.
	targetAPIKeyTLS = "apikey-tls"
)

// targetLabels are the names rows carry, after the load.
var targetLabels = map[string]string{
	targetJSONRPC: "JSON-RPC", targetREST: "HTTP+JSON", targetGRPC: "gRPC", targetVoice: "JSON-RPC + voice",
	targetAPIKey: "JSON-RPC + API key", targetOAuth2: "JSON-RPC + OAuth2", targetIdentity: "JSON-RPC + API key + caller identity", targetSigV4: "JSON-RPC + SigV4",
	targetMTLS: "JSON-RPC + mTLS", targetAPIKeyTLS: "JSON-RPC + API key over TLS",
}

// voiceExtension is the platform's voice extension (docs/voice-extension.md), under its default
// URI; loadgen does not import the connector's packages, so it spells it.
const voiceExtension = "urn:a2a-connector:voice:v1"

// voiceMetadata is what the connector writes into the message of a voice row's turn (a text
// turn on a voice channel that interrupted the previous turn), which the direct side sends too,
// so that both sides carry the same bytes.
var voiceMetadata = map[string]any{
	voiceExtension + "/input":        map[string]any{"kind": "speech"},
	voiceExtension + "/interruption": map[string]any{"messageId": "5f0c8c2e-7a43-5d51-9b1e-0c2f8a7d6e41", "heardText": voiceHeardText},
	voiceExtension + "/channel":      map[string]any{"kind": "voice", "locale": "zh-CN"},
}

// identityHeader is the header the connector sends the caller's identity token in
// (docs/api.md), spelled here since loadgen does not import the connector's packages.
const identityHeader = "A2A-Caller-Identity"

// directIdentityToken is what the direct side of the identity row sends in identityHeader: as
// long as the connector's ES256 tokens (a header naming the kid, five claims, a 64-byte
// signature), so both sides carry the same bytes.
var directIdentityToken = strings.Repeat("h", 100) + "." + strings.Repeat("c", 240) + "." + strings.Repeat("s", 86)

// voiceHeardText is what the caller heard of the interrupted reply, in the voice rows.
const voiceHeardText = "The weather tomorrow will be sunny in the morning, with"

// stubSecrets are the credentials the stub agent checks: random per run, passed to the agent in
// its environment (not its command line, which ps shows).
type stubSecrets struct {
	apiKey, clientID, clientSecret string
	awsKeyID, awsSecret            string
}

// Environment of `loadgen agent`: the credentials it checks on /apikey/ and /oauth2/.
const (
	envAPIKey       = "LOADGEN_AGENT_API_KEY"
	envClientID     = "LOADGEN_AGENT_CLIENT_ID"
	envClientSecret = "LOADGEN_AGENT_CLIENT_SECRET"
	envAWSKeyID     = "LOADGEN_AGENT_AWS_KEY_ID"
	envAWSSecret    = "LOADGEN_AGENT_AWS_SECRET"
)

func newStubSecrets() stubSecrets {
	r := func() string {
		var b [16]byte
		rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}
	return stubSecrets{apiKey: "lg-key-" + r(), clientID: "loadgen-connector", clientSecret: "lg-secret-" + r(),
		awsKeyID: "AKIALOADGEN" + strings.ToUpper(r()[:12]), awsSecret: "lg-aws-" + r()}
}

func (s stubSecrets) env() map[string]string {
	return map[string]string{envAPIKey: s.apiKey, envClientID: s.clientID, envClientSecret: s.clientSecret,
		envAWSKeyID: s.awsKeyID, envAWSSecret: s.awsSecret}
}

// faces is the stub agent's HTTP handler for every target: the JSON-RPC agent at the root (as
// before), the others under their prefix.
type faces struct {
	a        *stubAgent
	secrets  stubSecrets
	grpcAddr string // host:port of the gRPC face; "" when it does not run
	aws      *awsKey

	tokensMu sync.Mutex
	tokens   map[string]bool // access tokens issued (few: one per client process)
	issued   atomic.Int64
}

// tokensPath answers how many access tokens the token endpoint has issued.
const tokensPath = "/loadgen/tokens"

func newFaces(a *stubAgent, secrets stubSecrets, grpcAddr string) *faces {
	return &faces{a: a, secrets: secrets, grpcAddr: grpcAddr, tokens: map[string]bool{}, aws: newAWSKey(secrets.awsKeyID, secrets.awsSecret)}
}

func (f *faces) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if prefix, rest, ok := strings.Cut(strings.TrimPrefix(p, "/"), "/"); ok {
		switch {
		case r.Method == http.MethodGet && (rest == ".well-known/agent-card.json" || rest == ".well-known/agent.json") && prefix != "loadgen":
			f.serveCard(w, r, prefix)
			return
		case prefix == targetREST && r.Method == http.MethodPost && rest == "message:stream":
			f.serveREST(w, r)
			return
		case prefix == targetVoice && r.Method == http.MethodPost:
			if !slices.Contains(r.Header.Values("X-A2A-Extensions"), voiceExtension) {
				http.Error(w, "the voice extension is not activated", http.StatusBadRequest)
				return
			}
			f.a.serveRPC(w, r)
			return
		case (prefix == targetAPIKey || prefix == targetAPIKeyTLS) && r.Method == http.MethodPost:
			if prefix == targetAPIKeyTLS && !requireTLS(w, r, prefix) {
				return
			}
			if !equal(r.Header.Get("X-API-Key"), f.secrets.apiKey) {
				http.Error(w, "wrong or missing API key", http.StatusUnauthorized)
				return
			}
			f.a.serveRPC(w, r)
			return
		case prefix == targetIdentity && r.Method == http.MethodPost:
			if !equal(r.Header.Get("X-API-Key"), f.secrets.apiKey) || strings.Count(r.Header.Get(identityHeader), ".") != 2 {
				http.Error(w, "wrong or missing API key or caller identity", http.StatusUnauthorized)
				return
			}
			f.a.serveRPC(w, r)
			return
		case prefix == targetMTLS && r.Method == http.MethodPost:
			if requireTLS(w, r, prefix) {
				f.a.serveRPC(w, r)
			}
			return
		case prefix == targetSigV4 && r.Method == http.MethodPost:
			f.serveSigned(w, r)
			return
		case prefix == targetOAuth2 && r.Method == http.MethodPost && rest == "token":
			f.serveToken(w, r)
			return
		case prefix == targetOAuth2 && r.Method == http.MethodPost:
			tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			f.tokensMu.Lock()
			known := ok && f.tokens[tok]
			f.tokensMu.Unlock()
			if !known {
				w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
				http.Error(w, "unknown or missing access token", http.StatusUnauthorized)
				return
			}
			f.a.serveRPC(w, r)
			return
		}
	}
	if r.Method == http.MethodGet && p == tokensPath {
		fmt.Fprintln(w, f.issued.Load())
		return
	}
	f.a.ServeHTTP(w, r)
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// serveCard answers the card of a target: 1.0 cards for the HTTP+JSON and gRPC faces, 0.3 cards
// with a security scheme for the credential faces.
func (f *faces) serveCard(w http.ResponseWriter, r *http.Request, target string) {
	base := "http://" + r.Host
	if r.TLS != nil {
		base = "https://" + r.Host
	}
	if (target == targetMTLS || target == targetAPIKeyTLS) && !requireTLS(w, r, target) {
		return
	}
	card := map[string]any{
		"name":               "loadgen stub agent (" + target + ")",
		"description":        "Answers every message with a fixed number of text chunks; for load generation.",
		"version":            "1.0.0",
		"capabilities":       map[string]any{"streaming": true},
		"defaultInputModes":  []string{"text/plain"},
		"defaultOutputModes": []string{"text/plain"},
		"skills": []map[string]any{{
			"id": "echo-chunks", "name": "Chunks", "description": "Streams N text chunks.",
			"tags": []string{"loadgen"},
		}},
	}
	switch target {
	case targetREST:
		card["supportedInterfaces"] = []map[string]string{{"url": base + "/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}}
	case targetGRPC:
		if f.grpcAddr == "" {
			http.NotFound(w, r)
			return
		}
		card["supportedInterfaces"] = []map[string]string{{"url": "http://" + f.grpcAddr, "protocolBinding": "GRPC", "protocolVersion": "1.0"}}
	case targetVoice:
		card["protocolVersion"], card["url"], card["preferredTransport"] = "0.3.0", base+"/voice/", "JSONRPC"
		card["capabilities"] = map[string]any{"streaming": true, "extensions": []map[string]any{{"uri": voiceExtension}}}
	case targetAPIKey, targetIdentity, targetAPIKeyTLS:
		card["protocolVersion"], card["url"], card["preferredTransport"] = "0.3.0", base+"/"+target+"/", "JSONRPC"
		card["securitySchemes"] = map[string]any{"key": map[string]any{"type": "apiKey", "in": "header", "name": "X-API-Key"}}
		card["security"] = []map[string][]string{{"key": {}}}
	case targetMTLS:
		card["protocolVersion"], card["url"], card["preferredTransport"] = "0.3.0", base+"/mtls/", "JSONRPC"
		card["securitySchemes"] = map[string]any{"mtls": map[string]any{"type": "mutualTLS"}}
		card["security"] = []map[string][]string{{"mtls": {}}}
	case targetSigV4:
		// No scheme: A2A has none for SigV4; the tenant chooses the AWS key.
		card["protocolVersion"], card["url"], card["preferredTransport"] = "0.3.0", base+"/sigv4/", "JSONRPC"
	case targetOAuth2:
		card["protocolVersion"], card["url"], card["preferredTransport"] = "0.3.0", base+"/oauth2/", "JSONRPC"
		card["securitySchemes"] = map[string]any{"oauth": map[string]any{"type": "oauth2", "flows": map[string]any{
			"clientCredentials": map[string]any{"tokenUrl": base + "/oauth2/token", "scopes": map[string]string{"a2a": "converse"}}}}}
		card["security"] = []map[string][]string{{"oauth": {"a2a"}}}
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(card)
}

// serveSigned answers a JSON-RPC call whose SigV4 signature is valid, and refuses others 403
// with AWS's JSON error, as AgentCore does.
func (f *faces) serveSigned(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, agentMaxBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := f.aws.verify(r, body); err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_ = json.NewEncoder(w).Encode(map[string]string{"message": err.Error()})
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	f.a.serveRPC(w, r)
}

// serveToken is the client-credentials grant (RFC 6749 §4.4) reduced to what the row needs:
// the client authenticates with HTTP Basic or form fields, and gets a random token valid for an
// hour.
func (f *faces) serveToken(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, agentMaxBody)
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if r.PostForm.Get("grant_type") != "client_credentials" || !equal(id, f.secrets.clientID) || !equal(secret, f.secrets.clientSecret) {
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client"})
		return
	}
	var b [16]byte
	rand.Read(b[:])
	tok := "lg-at-" + hex.EncodeToString(b[:])
	f.tokensMu.Lock()
	f.tokens[tok] = true
	f.tokensMu.Unlock()
	f.issued.Add(1)
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
}

// v1Turn is what a 1.0 request asks for, read from its message.
func (f *faces) v1Turn(req *a2apb.SendMessageRequest) (spec replySpec, taskID, contextID string, err error) {
	var text strings.Builder
	for _, p := range req.GetMessage().GetParts() {
		text.WriteString(p.GetText())
	}
	if spec, err = parseTurnText(text.String(), f.a.def); err != nil {
		return spec, "", "", err
	}
	n := f.a.seq.Add(1)
	taskID = f.a.prefix + "-t" + strconv.FormatUint(n, 10)
	if contextID = req.GetMessage().GetContextId(); contextID == "" {
		contextID = f.a.prefix + "-c" + strconv.FormatUint(n, 10)
	}
	return spec, taskID, contextID, nil
}

// v1Events sends a 1.0 turn's events (the Task, the chunks, the completed status) through emit,
// with spec.delay between chunks, until emit fails or ctx ends.
func (f *faces) v1Events(ctx context.Context, spec replySpec, taskID, contextID string, emit func(*a2apb.StreamResponse) bool) {
	defer f.a.streamOpened()()
	if !emit(&a2apb.StreamResponse{Payload: &a2apb.StreamResponse_Task{Task: &a2apb.Task{Id: taskID, ContextId: contextID,
		Status: &a2apb.TaskStatus{State: a2apb.TaskState_TASK_STATE_SUBMITTED}}}}) {
		return
	}
	for i := range spec.chunks {
		if i > 0 && spec.delay > 0 && !sleepUntil(ctx, time.Now().Add(spec.delay)) {
			return
		}
		if !emit(&a2apb.StreamResponse{Payload: &a2apb.StreamResponse_ArtifactUpdate{ArtifactUpdate: &a2apb.TaskArtifactUpdateEvent{
			TaskId: taskID, ContextId: contextID, Append: i > 0, LastChunk: i == spec.chunks-1,
			Artifact: &a2apb.Artifact{ArtifactId: "reply", Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: replyChunk(spec.id, i)}}}},
		}}}) {
			return
		}
	}
	emit(&a2apb.StreamResponse{Payload: &a2apb.StreamResponse_StatusUpdate{StatusUpdate: &a2apb.TaskStatusUpdateEvent{
		TaskId: taskID, ContextId: contextID,
		Status: &a2apb.TaskStatus{State: a2apb.TaskState_TASK_STATE_COMPLETED, Timestamp: timestamppb.Now()},
	}}})
}

// serveREST answers SendStreamingMessage on the HTTP+JSON binding: SSE, one write and flush
// per event, as the JSON-RPC face does.
func (f *faces) serveREST(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, agentMaxBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req a2apb.SendMessageRequest
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, &req); err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	spec, taskID, contextID, err := f.v1Turn(&req)
	if err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	var buf []byte
	f.v1Events(r.Context(), spec, taskID, contextID, func(ev *a2apb.StreamResponse) bool {
		buf = append(buf[:0], "data: "...)
		if buf, err = (protojson.MarshalOptions{}).MarshalAppend(buf, ev); err != nil {
			return false
		}
		buf = append(buf, "\n\n"...)
		if _, err := w.Write(buf); err != nil {
			return false
		}
		fl.Flush()
		return true
	})
}

// grpcFace is the gRPC face: SendStreamingMessage only.
type grpcFace struct {
	a2apb.UnimplementedA2AServiceServer
	f *faces
}

func (g grpcFace) SendStreamingMessage(req *a2apb.SendMessageRequest, stream grpc.ServerStreamingServer[a2apb.StreamResponse]) error {
	spec, taskID, contextID, err := g.f.v1Turn(req)
	if err != nil {
		return fmt.Errorf("invalid request: %w", err)
	}
	var sendErr error
	g.f.v1Events(stream.Context(), spec, taskID, contextID, func(ev *a2apb.StreamResponse) bool {
		sendErr = stream.Send(ev)
		return sendErr == nil
	})
	return sendErr
}

// streamOpened counts a stream as open until the returned func is called.
func (a *stubAgent) streamOpened() func() {
	open := a.open.Add(1)
	for p := a.peak.Load(); open > p && !a.peak.CompareAndSwap(p, open); p = a.peak.Load() {
	}
	return func() { a.open.Add(-1) }
}

// turner is the direct side of a row: a bare client of one binding.
type turner interface {
	// turn runs one turn and checks it; contextID continues a session, the agent's is returned.
	turn(ctx context.Context, contextID, text, want string) (turnTiming, string, error)
	closeIdle()
}

var (
	_ turner = (*directClient)(nil)
	_ turner = (*restDirect)(nil)
	_ turner = (*grpcDirect)(nil)
)

// restDirect is the bare HTTP+JSON client: net/http, the SSE reader's loop, protojson.
type restDirect struct {
	url  string // {base}/rest
	http *http.Client
	seq  atomic.Int64
}

func (c *restDirect) closeIdle() { c.http.CloseIdleConnections() }

func (c *restDirect) turn(ctx context.Context, contextID, text, want string) (res turnTiming, newContext string, err error) {
	start := time.Now()
	body, err := protojson.Marshal(v1Request(contextID, text, c.seq.Add(1), start))
	if err != nil {
		return res, "", fmt.Errorf("encode request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url+"/message:stream", bytes.NewReader(body))
	if err != nil {
		return res, "", fmt.Errorf("new request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("A2A-Version", "1.0")
	resp, err := c.http.Do(req)
	if err != nil {
		return res, "", fmt.Errorf("post: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return res, "", fmt.Errorf("answer %s %q: %s", resp.Status, resp.Header.Get("Content-Type"), b)
	}
	var check v1Check
	br := bufio.NewReaderSize(resp.Body, 16<<10)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				return res, "", errors.New("stream ended before a completed status")
			}
			return res, "", fmt.Errorf("read stream: %w", err)
		}
		// The stub writes each event as one data line; an SSE reader for any agent would join
		// several, as directClient's does.
		data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data: "))
		if !ok {
			continue
		}
		var ev a2apb.StreamResponse
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, &ev); err != nil {
			return res, "", fmt.Errorf("decode event: %w", err)
		}
		done, err := check.event(&ev, start, want, &res)
		if err != nil || done {
			if err == nil {
				_, _ = io.Copy(io.Discard, br) // the call ends with the body
				res.total = time.Since(start)
			}
			return res, check.contextID, err
		}
	}
}

// grpcDirect is the bare gRPC client: a2a-go v2's generated A2AService client, a few
// connections round robin as the via side has.
type grpcDirect struct {
	conns   []*grpc.ClientConn
	clients []a2apb.A2AServiceClient
	next    atomic.Uint64
	seq     atomic.Int64
}

func newGRPCDirect(addr string, n int) (*grpcDirect, error) {
	g := &grpcDirect{}
	for range n {
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			g.close()
			return nil, fmt.Errorf("grpc client %s: %w", addr, err)
		}
		g.conns = append(g.conns, cc)
		g.clients = append(g.clients, a2apb.NewA2AServiceClient(cc))
	}
	return g, nil
}

func (g *grpcDirect) close() {
	for _, cc := range g.conns {
		cc.Close()
	}
}

// closeIdle keeps the connections: like the connector's pool, they live across turns.
func (g *grpcDirect) closeIdle() {}

func (g *grpcDirect) turn(ctx context.Context, contextID, text, want string) (res turnTiming, newContext string, err error) {
	c := g.clients[g.next.Add(1)%uint64(len(g.clients))]
	start := time.Now()
	stream, err := c.SendStreamingMessage(ctx, v1Request(contextID, text, g.seq.Add(1), start))
	if err != nil {
		return res, "", fmt.Errorf("SendStreamingMessage: %w", err)
	}
	var check v1Check
	completed := false
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			if !completed {
				return res, "", errors.New("stream ended before a completed status")
			}
			res.total = time.Since(start)
			return res, check.contextID, nil
		}
		if err != nil {
			return res, "", fmt.Errorf("SendStreamingMessage: %w", err)
		}
		if completed {
			return res, "", errors.New("event after the completed status")
		}
		if completed, err = check.event(ev, start, want, &res); err != nil {
			return res, "", err
		}
	}
}

// v1Request is the SendMessageRequest of a direct 1.0 turn.
func v1Request(contextID, text string, seq int64, start time.Time) *a2apb.SendMessageRequest {
	return &a2apb.SendMessageRequest{Message: &a2apb.Message{
		MessageId: "lg-" + strconv.FormatInt(seq, 10) + "-" + strconv.FormatInt(start.UnixNano(), 36),
		ContextId: contextID, Role: a2apb.Role_ROLE_USER,
		Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: text}}},
	}, Configuration: &a2apb.SendMessageConfiguration{AcceptedOutputModes: []string{"text/plain"}}}
}

// v1Check follows a 1.0 stream's events: the text so far and the context id.
type v1Check struct {
	got       strings.Builder
	contextID string
}

// event takes one event; done once the completed status has come with exactly want.
func (c *v1Check) event(ev *a2apb.StreamResponse, start time.Time, want string, res *turnTiming) (done bool, err error) {
	switch e := ev.GetPayload().(type) {
	case *a2apb.StreamResponse_Task:
		c.contextID = e.Task.GetContextId()
	case *a2apb.StreamResponse_ArtifactUpdate:
		for _, p := range e.ArtifactUpdate.GetArtifact().GetParts() {
			if t := p.GetText(); t != "" {
				if res.firstText == 0 {
					res.firstText = time.Since(start)
				}
				c.got.WriteString(t)
			}
		}
	case *a2apb.StreamResponse_StatusUpdate:
		switch st := e.StatusUpdate.GetStatus().GetState(); st {
		case a2apb.TaskState_TASK_STATE_SUBMITTED, a2apb.TaskState_TASK_STATE_WORKING:
		case a2apb.TaskState_TASK_STATE_COMPLETED:
			if c.got.String() != want {
				return false, fmt.Errorf("text %q, want %q", trim(c.got.String()), trim(want))
			}
			return true, nil
		default:
			return false, fmt.Errorf("ended in state %s, want completed", st)
		}
	}
	return false, nil
}

// fetchToken gets an access token from the stub's token endpoint, as the direct side of the
// OAuth2 row's client would once per process.
func fetchToken(ctx context.Context, tokenURL string, s stubSecrets) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tokenURL, strings.NewReader("grant_type=client_credentials"))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(s.clientID, s.clientSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("token %s: %w", tokenURL, err)
	}
	defer resp.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&out); err != nil || out.AccessToken == "" {
		return "", fmt.Errorf("token %s: %s: no access token (%v)", tokenURL, resp.Status, err)
	}
	return out.AccessToken, nil
}

// newTargets makes the bare client of each -bindings and -credentials target. tokensBefore is
// the token endpoint's count once the direct side has its token (-1 without an oauth2 row), so
// that the report counts the connector's requests only.
func newTargets(ctx context.Context, o options, s *stack, plain *directClient, maxConns int) (map[string]target, int64, func(), error) {
	targets := map[string]target{}
	var closers []func()
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	tokensBefore := int64(-1)
	for _, t := range o.targetNames() {
		var d turner
		switch t {
		case targetJSONRPC:
			d = plain
		case targetREST:
			d = &restDirect{url: s.agentURL + "/rest", http: newDirectClient("", maxConns).http}
		case targetGRPC:
			g, err := newGRPCDirect(s.agentGRPC, o.conns)
			if err != nil {
				closeAll()
				return nil, 0, nil, err
			}
			closers = append(closers, g.close)
			d = g
		case targetVoice:
			c := newDirectClient(s.agentURL+"/voice/", maxConns)
			c.header = http.Header{"X-A2A-Extensions": {voiceExtension}}
			c.metadata = voiceMetadata
			d = c
		case targetAPIKey:
			c := newDirectClient(s.agentURL+"/apikey/", maxConns)
			c.header = http.Header{"X-Api-Key": {s.secrets.apiKey}}
			d = c
		case targetIdentity:
			c := newDirectClient(s.agentURL+"/identity/", maxConns)
			c.header = http.Header{"X-Api-Key": {s.secrets.apiKey}, identityHeader: {directIdentityToken}}
			d = c
		case targetOAuth2:
			tok, err := fetchToken(ctx, s.agentURL+"/oauth2/token", s.secrets)
			if err != nil {
				closeAll()
				return nil, 0, nil, err
			}
			c := newDirectClient(s.agentURL+"/oauth2/", maxConns)
			c.header = http.Header{"Authorization": {"Bearer " + tok}}
			d = c
			if tokensBefore, err = s.tokensIssued(ctx); err != nil {
				closeAll()
				return nil, 0, nil, err
			}
		}
		switch t {
		case targetSigV4:
			c := newDirectClient(s.agentURL+"/sigv4/", maxConns)
			c.sign = newAWSKey(s.secrets.awsKeyID, s.secrets.awsSecret).sign
			d = c
		case targetMTLS, targetAPIKeyTLS:
			c, err := s.tlsDirect(t, maxConns)
			if err != nil {
				closeAll()
				return nil, 0, nil, err
			}
			d = c
		}
		targets[t] = target{agent: s.targets[t], direct: d, voice: t == targetVoice, caller: t == targetIdentity}
	}
	return targets, tokensBefore, closeAll, nil
}

// targetNames are the agents besides the plain one that the run registers: those of the
// -bindings and -credentials rows, and the long streams' binding.
func (o options) targetNames() []string {
	names := append(slices.Clip(o.bindings), o.credentials...)
	if o.longBinding != "" && !slices.Contains(names, o.longBinding) {
		names = append(names, o.longBinding)
	}
	return names
}

// targetNotes are the lines under the table that set each -bindings and -credentials row beside
// its reference: a binding's added p50 and first text beside JSON-RPC's, OAuth2's beside the API
// key's, and the token requests the connector made during the run.
func targetNotes(o options, rows []row, tokens int64, tokensErr error) []string {
	byKey := map[string]row{}
	for _, r := range rows {
		if r.target != "" {
			byKey[r.target+"@"+strconv.Itoa(r.c)] = r
		}
	}
	added := func(r row, xs func(*phaseStats) []time.Duration) (float64, bool) {
		if r.direct == nil || r.via == nil || len(xs(r.direct)) == 0 || len(xs(r.via)) == 0 {
			return 0, false
		}
		return percentile(xs(r.via), 0.5) - percentile(xs(r.direct), 0.5), true
	}
	lat := func(s *phaseStats) []time.Duration { return s.lat }
	first := func(s *phaseStats) []time.Duration { return s.first }
	// beside is "+a ms, first text +b ms (x % / y % of ref's)".
	beside := func(r, ref row, refOK bool) string {
		a, ok1 := added(r, lat)
		b, ok2 := added(r, first)
		if !ok1 || !ok2 {
			return "—"
		}
		line := signed(a) + " / " + signed(b)
		if refOK {
			ra, _ := added(ref, lat)
			rb, _ := added(ref, first)
			if ra > 0 && rb > 0 {
				line += fmt.Sprintf(" (%.0f %% / %.0f %%)", 100*a/ra, 100*b/rb)
			}
		}
		return line
	}
	var notes []string
	for _, c := range o.bindingsC {
		var parts []string
		ref, refOK := byKey[targetJSONRPC+"@"+strconv.Itoa(c)]
		for _, t := range o.bindings {
			if r, ok := byKey[t+"@"+strconv.Itoa(c)]; ok {
				parts = append(parts, targetLabels[t]+" "+beside(r, ref, refOK && t != targetJSONRPC))
			}
		}
		keyRef, keyOK := byKey[targetAPIKey+"@"+strconv.Itoa(c)]
		tlsRef, tlsOK := byKey[targetAPIKeyTLS+"@"+strconv.Itoa(c)]
		for _, t := range o.credentials {
			if r, ok := byKey[t+"@"+strconv.Itoa(c)]; ok {
				ref, refOK := keyRef, keyOK && t != targetAPIKey
				if t == targetMTLS && tlsOK {
					// Like with like: both over TLS of the same CA, one with a client certificate.
					ref, refOK = tlsRef, true
				}
				parts = append(parts, targetLabels[t]+" "+beside(r, ref, refOK))
			}
		}
		if len(parts) > 0 {
			notes = append(notes, fmt.Sprintf("c=%d added p50 / first text p50 ms (%% of JSON-RPC's; OAuth2, SigV4, caller identity and API key over TLS: of the API key's; mTLS: of the API key over TLS's when it runs, else of the API key's): %s", c, strings.Join(parts, " · ")))
		}
	}
	if slices.Contains(o.credentials, targetOAuth2) {
		var turns int
		for _, r := range rows {
			if r.target == targetOAuth2 && r.via != nil {
				turns += r.via.turns + r.via.errors
			}
		}
		if tokensErr != nil {
			notes = append(notes, "OAuth2: token requests by the connector unknown: "+tokensErr.Error())
		} else {
			notes = append(notes, fmt.Sprintf("OAuth2: the connector asked the token endpoint %d times for its %d measured turns (the endpoint is loadgen's own, a stub for the turn path, not an OAuth conformance check)", tokens, turns))
		}
	}
	return notes
}
