package nginxtest_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/google/uuid"
	"google.golang.org/grpc"

	"github.com/a2a-connector/a2a-connector/internal/a2a"
	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
	"github.com/a2a-connector/a2a-connector/internal/fixtureagent"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/nginxtest"
)

// turnTimeout bounds one turn: far beyond what a turn takes here, so that only a turn that
// would never end reaches it.
const turnTimeout = 20 * time.Second

// binding is one way of calling an agent: the connector's binding and wire generation.
type binding struct {
	name    string
	binding a2aclient.Binding
	wire    a2aclient.Wire
}

func (b binding) grpc() bool { return b.binding == a2aclient.BindingGRPC }

// bindings are the connector's bindings, JSON-RPC in both wire generations.
var bindings = []binding{
	{"jsonrpc_0.x", a2aclient.BindingJSONRPC, a2aclient.WireV0},
	{"jsonrpc_1.0", a2aclient.BindingJSONRPC, a2aclient.WireV1},
	{"httpjson_1.0", a2aclient.BindingHTTPJSON, a2aclient.WireV1},
	{"grpc_1.0", a2aclient.BindingGRPC, a2aclient.WireV1},
}

// agentClient is the connector's agent client as internal/invoke builds it for the binaries:
// the SSRF-guarded netguard client sending HTTP/1.1 with internal/h1 (InlineHTTP1), gRPC
// through the guard's dialer; loopback and plain HTTP allowed, as in local setups, and roots
// (nginx's self-signed certificate) trusted.
func agentClient(t *testing.T, roots *x509.CertPool) *a2aclient.Client {
	t.Helper()
	pol := netguard.Policy{AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, AllowInsecureHTTP: true}
	hc := netguard.NewClient(pol, netguard.ClientOptions{InlineHTTP1: true, RootCAs: roots})
	t.Cleanup(hc.CloseIdleConnections)
	c := a2aclient.NewClient(hc, a2aclient.ClientOptions{GRPC: a2aclient.GRPCOptions{
		Dial: pol.Dialer(0), CheckURL: pol.CheckURL,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots},
	}})
	t.Cleanup(c.Close)
	return c
}

// fixtureAgent starts internal/fixtureagent's agent of b (its default behaviour: three
// chunks of a streamed reply) and returns it with its URL.
func fixtureAgent(t *testing.T, b binding) (*fixtureagent.Server, *url.URL) {
	t.Helper()
	var s *fixtureagent.Server
	switch {
	case b.grpc():
		s = fixtureagent.NewGRPC(t)
	case b.binding == a2aclient.BindingHTTPJSON:
		s = fixtureagent.NewREST(t)
	case b.wire == a2aclient.WireV1:
		s = fixtureagent.NewV1(t)
	default:
		s = fixtureagent.New(t)
	}
	s.SetChunkDelay(5 * time.Millisecond)
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	return s, u
}

// fixtureReply is what the fixture agent answers every turn.
var fixtureReply = fixtureagent.StreamText(3)

// Long keep-alive timeouts, for the tests whose subject is not an idle close: far longer than
// any test, so that no idle close lands between two turns on a slow machine.
const keepLong = "keepalive_timeout 60s;"

// proxy starts nginx in front of the agent at origin ("127.0.0.1:port") for binding b, as
// deployments configure it: HTTP/1.1 to the agent with kept-alive upstream connections and no
// buffering (SSE passes as it comes), or grpc_pass; TLS with HTTP/2 by ALPN, or plain. http
// holds the test's http{} directives (keepalive_timeout, keepalive_requests).
func proxy(t *testing.T, b binding, origin string, withTLS bool, http string) *nginxtest.Nginx {
	t.Helper()
	location := `location / {
		proxy_pass http://agent;
		proxy_http_version 1.1;
		proxy_set_header Connection "";
		proxy_buffering off;
		proxy_read_timeout 60s;
	}`
	if b.grpc() {
		location = `location / {
			grpc_pass grpc://agent;
			grpc_read_timeout 60s;
		}`
	}
	return nginxtest.Start(t, nginxtest.Options{
		TLS: withTLS,
		// Plain gRPC is HTTP/2 with prior knowledge, which an HTTP/1.1 listener cannot take.
		HTTP2:  withTLS || b.grpc(),
		HTTP:   http + "\n\tupstream agent { server " + origin + "; keepalive 8; }",
		Server: location,
	})
}

// endpoint is the agent at path behind n, as the connector calls it with b.
func endpoint(n *nginxtest.Nginx, b binding, path string) a2aclient.Endpoint {
	return a2aclient.Endpoint{URL: n.URL + path, Binding: b.binding, Wire: b.wire}
}

// turn makes one turn with text, streamed or not, and returns the reply's text. A turn that
// does not end in the completed state is an error.
func turn(ctx context.Context, c *a2aclient.Client, ep a2aclient.Endpoint, stream bool, text string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, turnTimeout)
	defer cancel()
	req := &a2a.SendMessageRequest{Message: a2a.Message{Role: a2a.RoleUser, MessageID: uuid.NewString(), Parts: a2a.Parts{a2a.TextPart(text)}}}
	if !stream {
		ev, err := c.SendMessage(ctx, ep, req)
		if err != nil {
			return "", err
		}
		task, ok := ev.(*a2a.Task)
		if !ok {
			return "", fmt.Errorf("result is %T, want a task", ev)
		}
		if task.Status.State != a2a.TaskStateCompleted {
			return "", fmt.Errorf("task state %s, want completed", task.Status.State)
		}
		var reply strings.Builder
		for _, a := range task.Artifacts {
			for _, p := range a.Parts {
				reply.WriteString(p.Text)
			}
		}
		return reply.String(), nil
	}
	s, err := c.SendStreamingMessage(ctx, ep, req, a2aclient.StreamOptions{})
	if err != nil {
		return "", err
	}
	defer s.Close()
	return readStream(s)
}

// readStream reads s to its end and returns the text of its artifact chunks (append honoured);
// a stream that ends other than with a completed status is an error, returned with the text
// read so far.
func readStream(s *a2aclient.Stream) (string, error) {
	var reply string
	var last a2a.TaskState
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			if last != a2a.TaskStateCompleted {
				return reply, fmt.Errorf("stream ended in state %q, want completed", last)
			}
			return reply, nil
		}
		if err != nil {
			return reply, err
		}
		switch ev := ev.(type) {
		case *a2a.TaskArtifactUpdateEvent:
			if !ev.Append {
				reply = ""
			}
			for _, p := range ev.Artifact.Parts {
				reply += p.Text
			}
		case *a2a.TaskStatusUpdateEvent:
			last = ev.Status.State
		case *a2a.Task:
			last = ev.Status.State
		}
	}
}

// mustTurn makes a turn (streamed on odd rounds) and fails the test unless it gets want.
func mustTurn(t *testing.T, c *a2aclient.Client, ep a2aclient.Endpoint, round int, text, want string) {
	t.Helper()
	stream := round%2 == 1
	got, err := turn(t.Context(), c, ep, stream, text)
	if err != nil || got != want {
		t.Errorf("turn %d (stream %t): reply %q, error %v; want %q", round, stream, got, err, want)
	}
}

// sdkAgent is an agent on the official A2A Go SDK v2, on one loopback address of its own for its
// whole life, that can be restarted there as a redeployed process comes back: a stop with a bounded
// grace (the SDK's server: http.Server.Shutdown or grpc GracefulStop, then a hard stop), then a
// new handler (the old one's tasks are gone) on the same address. Over HTTP it serves A2A 0.3
// JSON-RPC at /v0 (the SDK's compat handler), 1.0 JSON-RPC at /v1 and 1.0 HTTP+JSON under
// /rest; over gRPC the 1.0 service.
type sdkAgent struct {
	t    *testing.T
	addr string
	grpc bool
	stop func(grace time.Duration)
}

// sdkPath is where sdkAgent serves binding b.
func sdkPath(b binding) string {
	switch {
	case b.grpc():
		return ""
	case b.binding == a2aclient.BindingHTTPJSON:
		return "/rest"
	case b.wire == a2aclient.WireV1:
		return "/v1"
	}
	return "/v0"
}

func startSDKAgent(t *testing.T, grpc bool) *sdkAgent {
	t.Helper()
	// Its own address: nothing else can take its port while it restarts.
	ln, err := net.Listen("tcp4", net.JoinHostPort(nginxtest.LoopbackIP(), "0"))
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	a := &sdkAgent{t: t, addr: ln.Addr().String(), grpc: grpc}
	a.serve(ln)
	t.Cleanup(func() { a.stop(0) })
	return a
}

func (a *sdkAgent) serve(ln net.Listener) {
	// The SDK runs a task on after its caller has gone; a process that exits ends it too.
	exit := make(chan struct{})
	h := a2asrv.NewHandler(sdkExecutor{exit: exit}, a2asrv.WithLogger(slog.New(slog.DiscardHandler)))
	done := make(chan struct{})
	if a.grpc {
		gs := grpc.NewServer()
		a2agrpc.NewHandler(h).RegisterWith(gs)
		go func() {
			defer close(done)
			gs.Serve(ln) //nolint:errcheck // ends with Stop
		}()
		a.stop = func(grace time.Duration) {
			hard := time.AfterFunc(grace, gs.Stop)
			gs.GracefulStop()
			hard.Stop()
			close(exit)
			<-done
		}
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/v0", a2av0.NewJSONRPCHandler(h))
	mux.Handle("/v1", a2asrv.NewJSONRPCHandler(h))
	mux.Handle("/rest/", http.StripPrefix("/rest", a2asrv.NewRESTHandler(h)))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(done)
		srv.Serve(ln) //nolint:errcheck // ends with Close
	}()
	a.stop = func(grace time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		_ = srv.Shutdown(ctx)
		srv.Close()
		close(exit)
		<-done
	}
}

// restart stops the agent, giving running calls grace to end, and starts a new one on the same
// address.
func (a *sdkAgent) restart(grace time.Duration) {
	a.t.Helper()
	a.stop(grace)
	a.stop = func(time.Duration) {}
	// Go's listeners set SO_REUSEADDR, so TIME_WAIT does not hold the address; but a socket of
	// the old process not yet closed (an accepted connection the server is still tearing down)
	// can refuse the bind for a moment on a busy machine. Wait for the address, not for a time.
	var ln net.Listener
	deadline := time.Now().Add(20 * time.Second)
	for {
		var err error
		if ln, err = net.Listen("tcp", a.addr); err == nil {
			break
		}
		if !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			a.t.Fatalf("listen again on %s: %v", a.addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	a.serve(ln)
}

// slowText makes sdkExecutor keep the task working for seconds, reporting progress every
// slowEvery, so that a restart lands in the middle of it.
const (
	slowText  = "slow"
	slowEvery = 20 * time.Millisecond
)

// sdkReply is sdkExecutor's reply to text.
func sdkReply(text string) string { return "echo: " + text }

// sdkExecutor answers a message with one artifact, sdkReply of its text, and completes; a
// message starting with slowText first reports working for ten seconds, or until exit is closed
// (the agent's process ends).
type sdkExecutor struct{ exit <-chan struct{} }

func (e sdkExecutor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[sdk.Event, error] {
	return func(yield func(sdk.Event, error) bool) {
		var text strings.Builder
		for _, p := range ec.Message.Parts {
			text.WriteString(p.Text())
		}
		if !yield(sdk.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if strings.HasPrefix(text.String(), slowText) {
			tick := time.NewTicker(slowEvery)
			defer tick.Stop()
			for range int(10 * time.Second / slowEvery) {
				select {
				case <-ctx.Done():
					return
				case <-e.exit:
					// The SDK waits for a task's last state: without one its goroutines stay.
					yield(sdk.NewStatusUpdateEvent(ec, sdk.TaskStateFailed, nil), nil)
					return
				case <-tick.C:
				}
				if !yield(sdk.NewStatusUpdateEvent(ec, sdk.TaskStateWorking, nil), nil) {
					return
				}
			}
		}
		art := sdk.NewArtifactEvent(ec, sdk.NewTextPart(sdkReply(text.String())))
		art.LastChunk = true
		if yield(art, nil) {
			yield(sdk.NewStatusUpdateEvent(ec, sdk.TaskStateCompleted, nil), nil)
		}
	}
}

func (sdkExecutor) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[sdk.Event, error] {
	return func(yield func(sdk.Event, error) bool) {
		yield(sdk.NewStatusUpdateEvent(ec, sdk.TaskStateCanceled, nil), nil)
	}
}
