package grpcapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	connector "github.com/a2a-connector/a2a-connector"
	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/admission"
	"github.com/a2a-connector/a2a-connector/internal/hostile"
)

const (
	tenantA = "6d0f6a52-0c1b-4e0e-9a55-0a2f7c1e0001"
	tenantB = "6d0f6a52-0c1b-4e0e-9a55-0a2f7c1e0002"
)

// countingRouter runs every turn it gets to a COMPLETED Final at once and counts them: what
// reaches it was admitted by the edge. The rest of the Router is not called by these tests.
type countingRouter struct {
	Router
	turns atomic.Int32
}

func (r *countingRouter) HandleTurn(_ context.Context, t connector.Turn, sink connector.TurnSink) error {
	r.turns.Add(1)
	if err := sink.Started(&connector.Agent{ID: t.AgentID}, false, ""); err != nil {
		return err
	}
	return sink.Final(connector.TurnFinal{Outcome: connector.OutcomeCompleted, Text: t.Text})
}

// tapServer is a real gRPC server on loopback serving Server with the connector's options (tap
// handle, codec), over a real admission.Limiter with a tenant cap of 1, every turn handed to a
// goroutine of its own. streams counts the streams grpc-go created and handed to a handler.
type tapServer struct {
	router  *countingRouter
	limiter *admission.Limiter
	conn    *grpc.ClientConn
	streams atomic.Int32
	stop    func()
}

func startTapServer(t testing.TB) *tapServer {
	t.Helper()
	ts := &tapServer{router: &countingRouter{}, limiter: admission.New(admission.Config{Replica: 100, Tenant: 1, Agent: 1})}
	api := New(ts.router, slog.New(slog.DiscardHandler), Options{Admission: ts.limiter, Handoff: NewHandoff(0)})
	srv := grpc.NewServer(grpc.InTapHandle(api.TapHandle), grpc.ForceServerCodecV2(Codec()),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			ts.streams.Add(1)
			return h(srv, ss)
		}))
	pb.RegisterConnectorServer(srv, api)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(ln) }()
	ts.conn, err = grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	ts.stop = func() {
		ts.conn.Close()
		stopped := make(chan struct{})
		go func() { srv.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(10 * time.Second): // an ended turn lets it stop in milliseconds
			srv.Stop()
			t.Error("the server did not stop gracefully: a turn's goroutine did not end")
		}
		<-served
	}
	t.Cleanup(ts.stop)
	return ts
}

// fill takes tenant's one place, as a turn in flight does, until the test ends.
func (ts *tapServer) fill(t testing.TB, tenant string) {
	t.Helper()
	p, err := ts.limiter.Acquire(t.Context(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Release)
}

// notProtobuf is no protobuf message: a field tag with wire type 7, which does not exist.
var notProtobuf = []byte{0x0f, 0xff, 0xff}

// rawTurn calls HandleTurn with body as the request's bytes and the metadata kv, and returns the
// call's status once it ended.
func (ts *tapServer) rawTurn(ctx context.Context, body []byte, kv ...string) *status.Status {
	ctx = metadata.AppendToOutgoingContext(ctx, kv...)
	s, err := ts.conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, pb.Connector_HandleTurn_FullMethodName, grpc.ForceCodec(hostile.RawCodec{}))
	if err != nil {
		return status.Convert(err)
	}
	if err := s.SendMsg(&body); err != nil && !errors.Is(err, io.EOF) {
		return status.Convert(err)
	}
	_ = s.CloseSend()
	for {
		var ev []byte
		if err := s.RecvMsg(&ev); err != nil {
			if errors.Is(err, io.EOF) {
				return status.New(codes.OK, "")
			}
			return status.Convert(err)
		}
	}
}

// request is a valid HandleTurn request of tenant, as bytes.
func request(t testing.TB, tenant string) []byte {
	t.Helper()
	b, err := Codec().Marshal(&pb.HandleTurnRequest{TenantId: tenant, SessionId: "s-" + t.Name(), TurnId: "t1", AgentId: "a1", Text: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	return b.Materialize()
}

// A turn over its tenant's cap that names the tenant in its metadata is refused at the stream's
// start: RESOURCE_EXHAUSTED even for bytes that are no request at all (they are never decoded),
// and grpc-go hands no stream to a handler. The same bytes without the metadata are decoded,
// and fail as grpc-go fails undecodable requests: that is what the tap saved.
func TestTapHandle_refuses_a_tenant_over_its_cap_before_the_stream_exists(t *testing.T) {
	t.Parallel()
	ts := startTapServer(t)
	ts.fill(t, tenantA)
	ctx := t.Context()

	for _, body := range [][]byte{notProtobuf, request(t, tenantA)} {
		st := ts.rawTurn(ctx, body, TenantMetadataKey, tenantA)
		if st.Code() != codes.ResourceExhausted || st.Message() != "tenant cap reached: at most 1 concurrent turns per deployment" {
			t.Errorf("over the cap, named in metadata: %v, want RESOURCE_EXHAUSTED naming the tenant cap", st)
		}
	}
	if n := ts.streams.Load(); n != 0 {
		t.Errorf("grpc-go handed %d refused streams to a handler, want none", n)
	}

	st := ts.rawTurn(ctx, notProtobuf)
	if !hostile.UndecodableByGRPC(st) {
		t.Errorf("undecodable bytes without the metadata: %v, want grpc-go's INTERNAL for a request it cannot decode", st)
	}
	if n := ts.router.turns.Load(); n != 0 {
		t.Errorf("the router ran %d turns, want none", n)
	}
}

// A turn naming its tenant takes its places at the stream's start. They go back when its turn
// has ended, and when its handler never ran it: bytes that do not decode leave nothing behind.
func TestTapHandle_places_taken_at_the_start_go_back_whatever_becomes_of_the_stream(t *testing.T) {
	t.Parallel()
	ts := startTapServer(t)
	ctx := t.Context()
	waitIdle := func(what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second) // the release follows the stream's end at once
		for ts.limiter.InFlight() != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d places still taken", what, ts.limiter.InFlight())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if st := ts.rawTurn(ctx, notProtobuf, TenantMetadataKey, tenantA); !hostile.UndecodableByGRPC(st) {
		t.Fatalf("undecodable bytes under the cap: %v, want grpc-go's INTERNAL", st)
	}
	waitIdle("a request that did not decode")
	if st := ts.rawTurn(ctx, request(t, tenantA), TenantMetadataKey, tenantB); st.Code() != codes.InvalidArgument {
		t.Fatalf("metadata naming another tenant: %v", st)
	}
	waitIdle("a turn refused for its metadata")
	for i := range 3 { // one place: each turn must have given it back for the next
		if st := ts.rawTurn(ctx, request(t, tenantA), TenantMetadataKey, tenantA); st.Code() != codes.OK {
			t.Fatalf("turn %d: %v", i, st)
		}
		waitIdle("a turn that ran")
	}
	if n := ts.router.turns.Load(); n != 3 {
		t.Errorf("the router ran %d turns, want 3", n)
	}
}

// Without the metadata, a turn over the cap is refused as before, once decoded, and before
// the router (so before its lookup); a turn of another tenant runs, with or without it, on a
// goroutine of its own, and the server still stops gracefully after.
func TestHandleTurn_without_the_metadata_is_refused_after_decoding_and_before_the_router(t *testing.T) {
	t.Parallel()
	ts := startTapServer(t)
	ts.fill(t, tenantA)
	ctx := t.Context()
	st := ts.rawTurn(ctx, request(t, tenantA))
	if st.Code() != codes.ResourceExhausted || !strings.HasPrefix(st.Message(), "tenant cap reached: at most 1 ") {
		t.Errorf("over the cap, no metadata: %v, want RESOURCE_EXHAUSTED naming the tenant cap", st)
	}
	if n := ts.streams.Load(); n != 1 {
		t.Errorf("%d streams reached a handler, want the one refused after decoding", n)
	}
	if n := ts.router.turns.Load(); n != 0 {
		t.Errorf("the router ran %d turns, want none", n)
	}

	client := pb.NewConnectorClient(ts.conn)
	for i, kv := range [][]string{nil, {TenantMetadataKey, tenantB}} {
		stream, err := client.HandleTurn(metadata.AppendToOutgoingContext(ctx, kv...),
			&pb.HandleTurnRequest{TenantId: tenantB, SessionId: "s", TurnId: "t", AgentId: "a1", Text: "hello"})
		if err != nil {
			t.Fatal(err)
		}
		var final *pb.TurnFinal
		for {
			ev, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("tenant B, metadata %v: %v", kv, err)
			}
			if f := ev.GetFinal(); f != nil {
				final = f
			}
		}
		if final.GetOutcome() != pb.Outcome_OUTCOME_COMPLETED || final.GetText() != "hello" {
			t.Errorf("tenant B, metadata %v: final %v, want COMPLETED hello", kv, final)
		}
		if n := ts.router.turns.Load(); n != int32(i+1) {
			t.Errorf("the router ran %d turns, want %d", n, i+1)
		}
	}
}

// A turn whose metadata names another tenant than its tenant_id, or names one twice, is
// INVALID_ARGUMENT and never runs: the metadata decided its admission.
func TestHandleTurn_tenant_metadata_must_match_the_request(t *testing.T) {
	t.Parallel()
	ts := startTapServer(t)
	ctx := t.Context()
	for _, tt := range []struct {
		name string
		kv   []string
		want string
	}{
		{name: "another_tenant", kv: []string{TenantMetadataKey, tenantB},
			want: "tenant_id: differs from the tenant named in the a2ac-tenant-id request metadata"},
		{name: "named_twice", kv: []string{TenantMetadataKey, tenantA, TenantMetadataKey, tenantA},
			want: "tenant_id: named more than once in the a2ac-tenant-id request metadata"},
	} {
		st := ts.rawTurn(ctx, request(t, tenantA), tt.kv...)
		if st.Code() != codes.InvalidArgument || st.Message() != tt.want {
			t.Errorf("%s: %v, want INVALID_ARGUMENT %q", tt.name, st, tt.want)
		}
	}
	if n := ts.router.turns.Load(); n != 0 {
		t.Errorf("the router ran %d turns, want none", n)
	}
}

// The refusal log writes its first line at once, then at most one a second, each with the
// refusals since the last: a burst of refusals is a line, not thousands.
func TestRefusalLog_writes_at_most_a_line_a_second_with_the_count(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	now := time.Unix(1000, 0)
	r := refusalLog{log: slog.New(slog.NewJSONHandler(&buf, nil)), now: func() time.Time { return now }}
	e := &connector.RefusedError{Cap: connector.CapTenant, Limit: 2}
	ctx := t.Context()
	for range 10 {
		r.note(ctx, tenantA, e, true)
	}
	now = now.Add(999 * time.Millisecond)
	r.note(ctx, tenantA, e, true)
	now = now.Add(time.Millisecond)
	r.note(ctx, tenantB, &connector.RefusedError{Cap: connector.CapReplica, Limit: 9}, false)

	type line struct {
		Msg       string `json:"msg"`
		Refused   int    `json:"refused"`
		TenantID  string `json:"tenant_id"`
		Cap       string `json:"cap"`
		Limit     int    `json:"limit"`
		RefusedAt string `json:"refused_at"`
	}
	var got []line
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var v line
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		got = append(got, v)
	}
	want := []line{
		{Msg: "turns refused over a cap", Refused: 1, TenantID: tenantA, Cap: "tenant", Limit: 2, RefusedAt: "at the stream's start"},
		{Msg: "turns refused over a cap", Refused: 11, TenantID: tenantB, Cap: "replica", Limit: 9, RefusedAt: "after decoding"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log lines (-want +got):\n%s", diff)
	}
}

// BenchmarkRefusedTurn is a turn over its tenant's cap through a real gRPC server on loopback,
// client included: refused at the stream's start (metadata) or once decoded (none).
func BenchmarkRefusedTurn(b *testing.B) {
	for _, bc := range []struct {
		name string
		kv   []string
	}{{"at_the_stream_start", []string{TenantMetadataKey, tenantA}}, {"after_decoding", nil}} {
		b.Run(bc.name, func(b *testing.B) {
			ts := startTapServer(b)
			ts.fill(b, tenantA)
			body := request(b, tenantA)
			ctx := b.Context()
			b.ReportAllocs()
			for b.Loop() {
				if st := ts.rawTurn(ctx, body, bc.kv...); st.Code() != codes.ResourceExhausted {
					b.Fatal(st)
				}
			}
		})
	}
}
