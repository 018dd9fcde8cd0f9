package a2aclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/a2a"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/a2a-connector/a2a-connector/internal/sdkagent"
)

// Real-world events on the gRPC binding, against grpc-go servers serving A2A 1.0's service on
// loopback: agent restarts between and during turns, servers' connection age and idle limits,
// a stream limit, many turns at once, and a peer that sends invalid SETTINGS. The Client makes
// no retries here (MaxRetries -1), so that every turn shows what the transport itself did.

// wireAgent answers SendStreamingMessage with benchReply's five events. hold, when set, runs
// after a stream's first event; an error from it ends the stream with that error.
type wireAgent struct {
	a2apb.UnimplementedA2AServiceServer
	hold func(ctx context.Context) error
}

func (a *wireAgent) SendStreamingMessage(_ *a2apb.SendMessageRequest, st grpc.ServerStreamingServer[a2apb.StreamResponse]) error {
	for i, ev := range benchReply() {
		if err := st.Send(ev); err != nil {
			return err
		}
		if i == 0 && a.hold != nil {
			if err := a.hold(st.Context()); err != nil {
				return err
			}
		}
	}
	return nil
}

// countingListener counts the connections it accepted and those of them still open.
type countingListener struct {
	net.Listener
	accepted, open atomic.Int64
	closed         chan struct{} // closed once Close closed the listener
	closeOnce      sync.Once
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.accepted.Add(1)
	l.open.Add(1)
	return &countedConn{Conn: c, l: l}, nil
}

func (l *countingListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.closed) })
	return err
}

type countedConn struct {
	net.Conn
	l    *countingListener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}

// agentProcess is one process of an agent: a grpc-go server on its own listener.
type agentProcess struct {
	gs *grpc.Server
	ln *countingListener
}

// startAgentProcess serves agent on addr ("127.0.0.1:0": a new port; an earlier process's
// address: its restart) with opts until it is stopped or the test ends.
func startAgentProcess(t *testing.T, addr string, agent a2apb.A2AServiceServer, opts ...grpc.ServerOption) *agentProcess {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	p := &agentProcess{gs: grpc.NewServer(opts...), ln: &countingListener{Listener: ln, closed: make(chan struct{})}}
	a2apb.RegisterA2AServiceServer(p.gs, agent)
	go p.gs.Serve(p.ln) //nolint:errcheck // ends with Stop or GracefulStop
	t.Cleanup(p.gs.Stop)
	return p
}

func (p *agentProcess) url() string { return "http://" + p.ln.Addr().String() }

// wireClient is a Client that calls gRPC agents on loopback without retries.
func wireClient(t *testing.T) *Client {
	t.Helper()
	return wireClientWith(t, GRPCOptions{})
}

// wireClientWith is wireClient with o's settings (its dialer and URL check are set here).
func wireClientWith(t *testing.T, o GRPCOptions) *Client {
	t.Helper()
	var d net.Dialer
	o.Dial = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	o.CheckURL = func(*url.URL) error { return nil }
	c := testClient(t, ClientOptions{MaxRetries: -1, GRPC: o})
	t.Cleanup(c.Close)
	return c
}

// errTurnDeadline is the cause of a wire turn's deadline: only a turn that hung meets it.
var errTurnDeadline = errors.New("the test's turn deadline")

// wireTurn streams one turn from the agent at u and returns how many events came and how the
// stream ended (nil: cleanly, after them). Only the deadline (a minute, which only a hung turn
// reaches) bounds it: no stream timer could end a hung turn first and pass for a clean error.
func wireTurn(ctx context.Context, c *Client, u string) (int, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, time.Minute, errTurnDeadline)
	defer cancel()
	params := &a2a.SendMessageRequest{Message: a2a.Message{Role: a2a.RoleUser, MessageID: "m", ContextID: "c", Parts: a2a.Parts{a2a.TextPart("hello")}}}
	s, err := c.SendStreamingMessage(ctx, Endpoint{URL: u, Wire: WireV1, Binding: BindingGRPC}, params, StreamOptions{})
	if err != nil {
		return 0, err
	}
	defer s.Close()
	for n := 0; ; n++ {
		if _, err := s.Next(); err != nil {
			if err == io.EOF {
				err = nil
			}
			return n, err
		}
	}
}

// wantTurns runs n turns one after the other; each must bring the agent's five events.
func wantTurns(t *testing.T, c *Client, u string, n int) {
	t.Helper()
	for i := range n {
		if got, err := wireTurn(t.Context(), c, u); err != nil || got != 5 {
			t.Errorf("turn %d of %d: %d events, %v; want 5 and a clean end", i+1, n, got, err)
		}
	}
}

// waitFor waits until cond holds, failing the test after 20 s (only a failing test waits that
// long).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 20 s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// within waits up to 10 s for done, failing the test with what otherwise.
func within(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("not within 10 s: %s", what)
	}
}

// An agent restarted between turns (GracefulStop: GOAWAY, then the old process exits; a new
// process on the same address): the old process's stop is not held up by our idle connection,
// and the next turns reach the new process on one new connection.
func TestGRPCAgentRestartedGracefullyBetweenTurns(t *testing.T) {
	t.Parallel()
	agent := &wireAgent{}
	old := startAgentProcess(t, "127.0.0.1:0", agent)
	c := wireClient(t)
	wantTurns(t, c, old.url(), 1)

	stopped := make(chan struct{})
	go func() { old.gs.GracefulStop(); close(stopped) }()
	within(t, stopped, "the old process's GracefulStop returned (the client let go of its connection after GOAWAY)")
	next := startAgentProcess(t, old.ln.Addr().String(), agent)
	wantTurns(t, c, next.url(), 3)
	if n := next.ln.accepted.Load(); n != 1 {
		t.Errorf("the new process accepted %d connections for three turns, want 1", n)
	}
}

// An agent restarted while a turn streams from it. Gracefully: the turn in flight completes on
// the old process, turns started meanwhile reach the new one, and the old one stops once its
// turn ended. Killed (Stop): the turn in flight ends with a transport error, never as a clean
// end of stream, and later turns reach the new process.
func TestGRPCAgentRestartedDuringAStreamingTurn(t *testing.T) {
	t.Parallel()
	// holdFirst holds the first stream after its first event until proceed is closed.
	holdFirst := func(started chan<- struct{}, proceed <-chan struct{}) *wireAgent {
		var streams atomic.Int64
		return &wireAgent{hold: func(ctx context.Context) error {
			if streams.Add(1) > 1 {
				return nil
			}
			close(started)
			select {
			case <-proceed:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}}
	}
	type result struct {
		n   int
		err error
	}
	inFlight := func(c *Client, u string) <-chan result {
		out := make(chan result, 1)
		go func() {
			n, err := wireTurn(context.Background(), c, u)
			out <- result{n, err}
		}()
		return out
	}

	t.Run("graceful", func(t *testing.T) {
		t.Parallel()
		started, proceed := make(chan struct{}), make(chan struct{})
		old := startAgentProcess(t, "127.0.0.1:0", holdFirst(started, proceed))
		c := wireClient(t)
		turn := inFlight(c, old.url())
		within(t, started, "the turn's stream started")
		stopped := make(chan struct{})
		go func() { old.gs.GracefulStop(); close(stopped) }()
		within(t, old.ln.closed, "the old process stopped listening")
		next := startAgentProcess(t, old.ln.Addr().String(), &wireAgent{})
		wantTurns(t, c, next.url(), 3)
		close(proceed)
		var r result
		select {
		case r = <-turn:
		case <-time.After(time.Minute + 10*time.Second):
			t.Fatal("the turn in flight never ended")
		}
		if r.err != nil || r.n != 5 {
			t.Errorf("the turn in flight during the restart: %d events, %v; want 5 and a clean end", r.n, r.err)
		}
		within(t, stopped, "the old process's GracefulStop returned once its turn ended")
		wantTurns(t, c, next.url(), 3)
	})

	t.Run("killed", func(t *testing.T) {
		t.Parallel()
		started, proceed := make(chan struct{}), make(chan struct{})
		defer close(proceed)
		old := startAgentProcess(t, "127.0.0.1:0", holdFirst(started, proceed))
		c := wireClient(t)
		turn := inFlight(c, old.url())
		within(t, started, "the turn's stream started")
		old.gs.Stop()
		var r result
		select {
		case r = <-turn:
		case <-time.After(time.Minute + 10*time.Second):
			t.Fatal("the turn in flight never ended")
		}
		if r.err == nil || errors.Is(r.err, errTurnDeadline) || status.Code(r.err) != codes.Unavailable {
			t.Errorf("the turn in flight when the agent died: %d events, %v; want its end as UNAVAILABLE", r.n, r.err)
		}
		next := startAgentProcess(t, old.ln.Addr().String(), &wireAgent{})
		wantTurns(t, c, next.url(), 3)
	})
}

// A server's connection limits (grpc-go's keepalive.ServerParameters, as agents deploy them to
// rotate connections across replicas): once the agent closed our connection (GOAWAY, then
// close) and the line went quiet, the next turns reconnect and succeed, including when the age
// limit strikes again while they run.
func TestGRPCAgentConnectionLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		kp   keepalive.ServerParameters
	}{
		{"max_connection_idle", keepalive.ServerParameters{MaxConnectionIdle: 200 * time.Millisecond}},
		{"max_connection_age", keepalive.ServerParameters{MaxConnectionAge: 200 * time.Millisecond, MaxConnectionAgeGrace: 200 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := startAgentProcess(t, "127.0.0.1:0", &wireAgent{}, grpc.KeepaliveParams(tc.kp))
			c := wireClient(t)
			wantTurns(t, c, p.url(), 1)
			waitFor(t, "the agent closed its connection", func() bool { return p.ln.open.Load() == 0 })
			wantTurns(t, c, p.url(), 3)
			if n := p.ln.accepted.Load(); n < 2 {
				t.Errorf("%d connections accepted, want a new one after the agent closed the first", n)
			}
		})
	}
}

// We close a connection that carried no call for ConnIdleTimeout ourselves (before a proxy in
// front of the agent would), and the next turn connects again.
func TestGRPCClosesIdleConnections(t *testing.T) {
	t.Parallel()
	p := startAgentProcess(t, "127.0.0.1:0", &wireAgent{})
	c := wireClientWith(t, GRPCOptions{ConnIdleTimeout: 200 * time.Millisecond})
	wantTurns(t, c, p.url(), 1)
	waitFor(t, "the client closed its idle connection", func() bool { return p.ln.open.Load() == 0 })
	wantTurns(t, c, p.url(), 3)
	if n := p.ln.accepted.Load(); n < 2 {
		t.Errorf("%d connections accepted, want a new one after the idle one was closed", n)
	}
}

// An agent that takes one stream at a time (MaxConcurrentStreams(1)): turns started together
// wait their turn on the one connection instead of being refused.
func TestGRPCAgentMaxConcurrentStreams1(t *testing.T) {
	t.Parallel()
	const turns = 8
	var open, most atomic.Int64
	agent := &wireAgent{hold: func(context.Context) error {
		n := open.Add(1)
		defer open.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		// Long enough for the other turns to queue behind this one; no verdict depends on it.
		time.Sleep(10 * time.Millisecond)
		return nil
	}}
	p := startAgentProcess(t, "127.0.0.1:0", agent, grpc.MaxConcurrentStreams(1))
	c := wireClient(t)
	errs := make(chan error, turns)
	for range turns {
		go func() {
			n, err := wireTurn(t.Context(), c, p.url())
			if err == nil && n != 5 {
				err = fmt.Errorf("%d events, want 5", n)
			}
			errs <- err
		}()
	}
	for range turns {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if m, n := most.Load(), p.ln.accepted.Load(); m != 1 || n != 1 {
		t.Errorf("the agent saw up to %d streams at once on %d connections, want 1 on 1", m, n)
	}
}

// 200 turns streaming from one agent at the same time share one connection: grpc-go
// multiplexes them (each stream is held open until all 200 have arrived).
func TestGRPC200ConcurrentTurnsOneConnection(t *testing.T) {
	t.Parallel()
	const turns = 200
	var arrived atomic.Int64
	all := make(chan struct{})
	agent := &wireAgent{hold: func(ctx context.Context) error {
		if arrived.Add(1) == turns {
			close(all)
		}
		select {
		case <-all:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	p := startAgentProcess(t, "127.0.0.1:0", agent)
	c := wireClient(t)
	errs := make(chan error, turns)
	for range turns {
		go func() {
			n, err := wireTurn(t.Context(), c, p.url())
			if err == nil && n != 5 {
				err = fmt.Errorf("%d events, want 5", n)
			}
			errs <- err
		}()
	}
	failed := 0
	for range turns {
		if err := <-errs; err != nil {
			if failed++; failed <= 3 {
				t.Error(err)
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d turns failed", failed, turns)
	}
	if n := p.ln.accepted.Load(); n != 1 {
		t.Errorf("%d concurrent turns opened %d connections, want 1", turns, n)
	}
}

// hostileH2 is an agent that speaks HTTP/2 by hand: its preface is SETTINGS carrying the values
// it was given, it acknowledges the client's SETTINGS and PINGs, and it answers every request
// that arrived whole (its END_STREAM) with benchReply's five events and an OK status, keeping
// the connection open for the next one.
type hostileH2 struct {
	ln    net.Listener
	wg    sync.WaitGroup
	whole atomic.Int64 // requests that arrived whole
}

func startHostileH2(t *testing.T, settings []http2.Setting) *hostileH2 {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &hostileH2{ln: ln}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			h.wg.Add(1)
			go func() {
				defer h.wg.Done()
				if err := h.serve(conn, settings); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
					t.Logf("hostile agent: %v", err)
				}
			}()
		}
	}()
	return h
}

func (h *hostileH2) serve(conn net.Conn, settings []http2.Setting) error {
	defer conn.Close()
	// A client that neither sends nor hangs up must not keep this goroutine past the test.
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	// The server's preface goes out at once, as grpc-go's does.
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(settings...); err != nil {
		return err
	}
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(conn, preface); err != nil || string(preface) != http2.ClientPreface {
		return fmt.Errorf("client preface %q: %w", preface, err)
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return err
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				err = fr.WriteSettingsAck()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				err = fr.WritePing(true, f.Data)
			}
		case *http2.HeadersFrame:
			if f.StreamEnded() {
				err = h.answer(fr, f.StreamID)
			}
		case *http2.DataFrame:
			if f.StreamEnded() {
				err = h.answer(fr, f.StreamID)
			}
		}
		if err != nil {
			return err
		}
	}
}

// answer writes a whole gRPC answer on stream id: response headers, the five messages, OK.
func (h *hostileH2) answer(fr *http2.Framer, id uint32) error {
	h.whole.Add(1)
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	headers := func(end bool, fields ...string) error {
		block.Reset()
		for i := 0; i < len(fields); i += 2 {
			if err := enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]}); err != nil {
				return err
			}
		}
		return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block.Bytes(), EndHeaders: true, EndStream: end})
	}
	if err := headers(false, ":status", "200", "content-type", "application/grpc"); err != nil {
		return err
	}
	var data []byte
	for _, ev := range benchReply() {
		msg, err := proto.Marshal(ev)
		if err != nil {
			return err
		}
		data = append(data, 0, byte(len(msg)>>24), byte(len(msg)>>16), byte(len(msg)>>8), byte(len(msg)))
		data = append(data, msg...)
	}
	if err := fr.WriteData(id, false, data); err != nil {
		return err
	}
	return headers(true, "grpc-status", "0")
}

// close stops accepting and waits for every connection's goroutine.
func (h *hostileH2) close() {
	h.ln.Close()
	h.wg.Wait()
}

// A peer whose SETTINGS are invalid (RFC 9113 §6.5.2) costs no hung turn and no goroutine:
// two turns, the second on the connection the first left (when it left one), each end well
// before their deadline. Values grpc-go does not use leave the calls untouched and the agent's
// answers arrive: a MAX_FRAME_SIZE out of range (grpc-go writes frames of at most 16 KiB, the
// smallest any peer must take, whatever the peer says; a client that obeyed 0 would loop on
// empty frames) and ENABLE_PUSH from a server. A window over 2^31-1 is refused as a connection
// error before any request, and a header list limit of 0 makes each call fail before it is
// sent: errors, not answers.
func TestGRPCHostileSettings(t *testing.T) {
	// Not parallel: it checks that no goroutine outlives each case.
	for _, tc := range []struct {
		name     string
		settings []http2.Setting
		answered bool
	}{
		{"max_frame_size_0", []http2.Setting{{ID: http2.SettingMaxFrameSize, Val: 0}}, true},
		{"max_frame_size_over_2^24-1", []http2.Setting{{ID: http2.SettingMaxFrameSize, Val: 1 << 24}}, true},
		{"enable_push_2", []http2.Setting{{ID: http2.SettingEnablePush, Val: 2}}, true},
		{"initial_window_size_over_2^31-1", []http2.Setting{{ID: http2.SettingInitialWindowSize, Val: 1 << 31}}, false},
		{"max_header_list_size_0", []http2.Setting{{ID: http2.SettingMaxHeaderListSize, Val: 0}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			h := startHostileH2(t, tc.settings)
			c := wireClient(t)
			for i := range 2 {
				n, err := wireTurn(t.Context(), c, "http://"+h.ln.Addr().String())
				switch {
				case errors.Is(err, errTurnDeadline):
					t.Errorf("turn %d hung until its deadline (%d events)", i+1, n)
				case tc.answered && (err != nil || n != 5):
					t.Errorf("turn %d: %d events, %v; want the agent's 5 and a clean end", i+1, n, err)
				case !tc.answered && err == nil:
					t.Errorf("turn %d: %d events and a clean end; want an error", i+1, n)
				default:
					t.Logf("turn %d: %d events, %v", i+1, n, err)
				}
			}
			c.Close()
			h.close()
			if tc.answered && h.whole.Load() != 2 {
				t.Errorf("%d requests arrived whole, want 2", h.whole.Load())
			}
		})
	}
}

// A web server where a gRPC agent should be (an HTTP/2 server that answers every request with
// a page): a 200 page is a protocol error, as a 2xx that is not A2A is on the other bindings;
// a 404 says the method is not there (METHOD_NOT_FOUND, the cue to fall back); a 503 is no
// answer, a transport failure the breaker counts as "down".
func TestGRPCNonGRPCAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		check  func(error) bool
		want   string
	}{
		{http.StatusOK, func(err error) bool {
			var pe *a2a.ProtocolError
			return errors.As(err, &pe) && pe.Kind == a2a.ProtocolUnexpectedContentType && pe.Detail == `content type "text/html"`
		}, `*ProtocolError unexpected_content_type, content type "text/html"`},
		{http.StatusNotFound, func(err error) bool {
			var re *a2a.RPCError
			return errors.As(err, &re) && re.Code == a2a.CodeMethodNotFound
		}, "*RPCError METHOD_NOT_FOUND"},
		{http.StatusServiceUnavailable, func(err error) bool {
			var re *a2a.RPCError
			return !errors.As(err, &re) && status.Code(err) == codes.Unavailable
		}, "UNAVAILABLE, no *RPCError"},
	} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			t.Parallel()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			var protocols http.Protocols
			protocols.SetUnencryptedHTTP2(true)
			srv := &http.Server{Protocols: &protocols, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(tc.status)
				io.WriteString(w, "<html><body>Welcome to nginx!</body></html>")
			})}
			go srv.Serve(ln) //nolint:errcheck // ends with Close
			t.Cleanup(func() { srv.Close() })
			c := wireClient(t)
			n, err := wireTurn(t.Context(), c, "http://"+ln.Addr().String())
			if n != 0 || !tc.check(err) {
				t.Errorf("turn: %d events, %v (%T); want %s", n, err, err, tc.want)
			}
		})
	}
}

// The turn's W3C trace context reaches the agent in the gRPC metadata of both generations,
// streaming and not: traceparent with the caller's trace id and span, tracestate as it came.
// Baggage stays inside the platform. Seen from the agent's side: a2a-go v2's gRPC handlers
// (1.0 and 0.3) with an interceptor recording what arrived.
func TestGRPCCarriesTraceContext(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	got := map[string]metadata.MD{}
	peer := sdkagent.New(t, sdkagent.Options{Streaming: true, GRPC: true, GRPCV0: true,
		ObserveGRPC: func(method string, md metadata.MD, _ any) {
			mu.Lock()
			got[method] = md.Copy()
			mu.Unlock()
		}})
	ts, err := trace.ParseTraceState("platform=dialog,vendor=x1")
	if err != nil {
		t.Fatal(err)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
		TraceState: ts,
	})
	member, err := baggage.NewMember("platform.user", "u-1234")
	if err != nil {
		t.Fatal(err)
	}
	bag, err := baggage.New(member)
	if err != nil {
		t.Fatal(err)
	}
	ctx := baggage.ContextWithBaggage(trace.ContextWithSpanContext(t.Context(), sc), bag)

	c := wireClient(t)
	params := &a2a.SendMessageRequest{Message: a2a.Message{Role: a2a.RoleUser, MessageID: "m-trace", Parts: a2a.Parts{a2a.TextPart("hello")}}}
	for _, tc := range []struct {
		gen     string
		ep      Endpoint
		service string
	}{
		{"1.0", Endpoint{URL: peer.GRPCURL, Wire: WireV1, Binding: BindingGRPC}, "/lf.a2a.v1.A2AService/"},
		{"0.3", Endpoint{URL: peer.GRPCV0URL, Wire: WireV0, Binding: BindingGRPC}, "/a2a.v1.A2AService/"},
	} {
		if _, err := c.SendMessage(ctx, tc.ep, params); err != nil {
			t.Fatalf("%s SendMessage: %v", tc.gen, err)
		}
		s, err := c.SendStreamingMessage(ctx, tc.ep, params, StreamOptions{IdleTimeout: 20 * time.Second})
		if err != nil {
			t.Fatalf("%s SendStreamingMessage: %v", tc.gen, err)
		}
		for err == nil {
			_, err = s.Next()
		}
		s.Close()
		if err != io.EOF {
			t.Fatalf("%s stream: %v", tc.gen, err)
		}
		for _, method := range []string{"SendMessage", "SendStreamingMessage"} {
			mu.Lock()
			md, ok := got[tc.service+method]
			mu.Unlock()
			if !ok {
				t.Errorf("%s %s: the agent saw no such call (it saw %v)", tc.gen, method, keysOf(got, &mu))
				continue
			}
			want := fmt.Sprintf("00-%s-%s-01", sc.TraceID(), sc.SpanID())
			if tp := md.Get("traceparent"); len(tp) != 1 || tp[0] != want {
				t.Errorf("%s %s: agent got traceparent %q, want %q", tc.gen, method, tp, want)
			}
			if st := md.Get("tracestate"); len(st) != 1 || st[0] != ts.String() {
				t.Errorf("%s %s: agent got tracestate %q, want %q", tc.gen, method, st, ts.String())
			}
			if b := md.Get("baggage"); len(b) != 0 {
				t.Errorf("%s %s: agent got baggage %q; it must not leave the platform", tc.gen, method, b)
			}
		}
	}

	// A call without trace context sends none.
	mu.Lock()
	clear(got)
	mu.Unlock()
	if _, err := c.SendMessage(t.Context(), Endpoint{URL: peer.GRPCURL, Wire: WireV1, Binding: BindingGRPC}, params); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	md := got["/lf.a2a.v1.A2AService/SendMessage"]
	mu.Unlock()
	if tp := md.Get("traceparent"); len(tp) != 0 {
		t.Errorf("a call without trace context sent traceparent %q", tp)
	}
}

func keysOf(m map[string]metadata.MD, mu *sync.Mutex) []string {
	mu.Lock()
	defer mu.Unlock()
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A stream reset with INTERNAL_ERROR (what nginx's grpc_pass sends when the agent behind it
// dies mid-stream, and what an HTTP/2 server sends when its handler panics) is the connection
// failing, not the agent's A2A error: the turn sees a transport failure it may resume from, as
// an HTTP agent's cut stream reads "unexpected EOF", and never an *RPCError INTERNAL.
func TestGRPCStreamResetIsATransportFailure(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{Protocols: &protocols, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/grpc")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // RST_STREAM INTERNAL_ERROR, no trailers
	}), ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(ln) //nolint:errcheck // ends with Close
	t.Cleanup(func() { srv.Close() })
	n, err := wireTurn(t.Context(), wireClient(t), "http://"+ln.Addr().String())
	var re *a2a.RPCError
	if n != 0 || err == nil || errors.As(err, &re) || errors.Is(err, errTurnDeadline) {
		t.Fatalf("turn: %d events, %v (%T); want no event and a transport failure, not an *RPCError", n, err, err)
	}
}
