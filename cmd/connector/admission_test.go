package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	connector "github.com/a2a-connector/a2a-connector"
	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/examples/demo-agent/agent"
	"github.com/a2a-connector/a2a-connector/internal/grpcapi"
	"github.com/a2a-connector/a2a-connector/internal/hostile"
)

// gates holds the agent's answer to every request whose body carries one of its markers until
// the marker's gate opens (or the request's caller leaves), and counts the requests the agent
// got: a turn held at a gate is a turn in flight for as long as the test wants, on any machine.
type gates struct {
	open  map[string]chan struct{}
	held  map[string]*atomic.Int32
	posts atomic.Int32 // every POST the agent got (turns, cancels)
}

func newGates(markers ...string) *gates {
	g := &gates{open: map[string]chan struct{}{}, held: map[string]*atomic.Int32{}}
	for _, m := range markers {
		g.open[m], g.held[m] = make(chan struct{}), new(atomic.Int32)
	}
	return g
}

func (g *gates) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			g.posts.Add(1)
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			r.Body = io.NopCloser(bytes.NewReader(body))
			for m, open := range g.open {
				if bytes.Contains(body, []byte(m)) {
					g.held[m].Add(1)
					select {
					case <-open:
					case <-r.Context().Done():
						return
					}
				}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// waitHeld waits until n requests are held at marker's gate.
func (g *gates) waitHeld(t *testing.T, marker string, n int32) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for g.held[marker].Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d turns held at %q, want %d", g.held[marker].Load(), marker, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// turnAs runs one turn of tenant to the end and returns its Final, or the gRPC error.
func (s *stack) turnAs(ctx context.Context, tenant, agentID, text string) (*pb.TurnFinal, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	stream, err := s.client.HandleTurn(ctx, &pb.HandleTurnRequest{TenantId: tenant, SessionId: uuid.NewString(),
		TurnId: uuid.NewString(), AgentId: agentID, Text: text})
	if err != nil {
		return nil, err
	}
	var final *pb.TurnFinal
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return final, nil
		}
		if err != nil {
			return final, err
		}
		if f := ev.GetFinal(); f != nil {
			final = f
		}
	}
}

// startTurns starts n turns of tenant in the background; their outcomes (or errors) arrive on
// the channel.
func (s *stack) startTurns(t *testing.T, n int, tenant, agentID, text string) <-chan string {
	out := make(chan string, n)
	for range n {
		go func() {
			f, err := s.turnAs(t.Context(), tenant, agentID, text)
			switch {
			case err != nil:
				out <- err.Error()
			default:
				out <- f.GetOutcome().String()
			}
		}()
	}
	return out
}

// wantRefused checks that err is RESOURCE_EXHAUSTED naming the cap and its value.
func wantRefused(t *testing.T, err error, cap, limit string) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != codes.ResourceExhausted || !strings.HasPrefix(st.Message(), cap+" cap reached: at most "+limit+" ") {
		t.Fatalf("got %v, want RESOURCE_EXHAUSTED naming the %s cap of %s", err, cap, limit)
	}
}

func wantCompleted(t *testing.T, what string, f *pb.TurnFinal, err error) {
	t.Helper()
	if err != nil || f.GetOutcome() != pb.Outcome_OUTCOME_COMPLETED {
		t.Fatalf("%s: %v, %v; want COMPLETED", what, f.GetOutcome(), err)
	}
}

// otherTenant registers the stack's demo agent for a second tenant and returns both ids.
func (s *stack) otherTenant(t *testing.T) (tenant, agentID string) {
	t.Helper()
	other, err := s.store.CreateTenant(t.Context(), "other "+t.Name())
	if err != nil {
		t.Fatal(err)
	}
	reg := registrar{store: s.store, tenant: other.ID, secretKey: s.secretKey}
	return other.ID, reg.register(t, s.demoURL+agent.CardPath, "").ID
}

// TestTenantCap_refuses_at_once_without_the_agent_and_spares_other_tenants: with a tenant cap
// of 2 and two of its turns held at the agent, the third is RESOURCE_EXHAUSTED at once and never
// reaches the agent, while another tenant's turn completes; once the two end, the tenant's turns
// are admitted again; and an operator's override (read every A2AC_LIMITS_REFRESH) raises the cap.
// The caps are the deployment's (shared in Postgres, on a database of the test's own), and a
// replica alone holds all of them from its start.
func TestTenantCap_refuses_at_once_without_the_agent_and_spares_other_tenants(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g := newGates("gated-one", "gated-two")
	s := startStack(t, map[string]string{"A2AC_TENANT_MAX_TURNS": "2", "A2AC_LIMITS_REFRESH": "100ms", "A2AC_CAP_SYNC": "200ms"},
		func(c *stackConfig) { c.wrapAgent = g.wrap }, withDB(testDB.Another(t)))
	otherTenant, otherAgent := s.otherTenant(t)

	held := s.startTurns(t, 2, s.tenant, s.agent, "重复我说的话：gated-one")
	g.waitHeld(t, "gated-one", 2)
	posts := g.posts.Load()
	start := time.Now()
	_, err := s.turnAs(ctx, s.tenant, s.agent, "重复我说的话：gated-one")
	took := time.Since(start)
	wantRefused(t, err, "tenant", "2")
	// "At once": two held turns take as long as the test wants; the refusal does not wait for
	// them. 5 s is hundreds of times what a refusal takes, and far from any turn's end.
	if took > 5*time.Second {
		t.Errorf("the refusal took %s", took)
	}
	if got := g.posts.Load(); got != posts {
		t.Errorf("the agent got %d requests during the refused turn, want none", got-posts)
	}

	f, err := s.turnAs(ctx, otherTenant, otherAgent, "重复我说的话：another tenant")
	wantCompleted(t, "another tenant's turn", f, err)

	close(g.open["gated-one"])
	for range 2 {
		if got := <-held; got != pb.Outcome_OUTCOME_COMPLETED.String() {
			t.Fatalf("a held turn ended %s", got)
		}
	}
	f, err = s.turnAs(ctx, s.tenant, s.agent, "重复我说的话：admitted again")
	wantCompleted(t, "the tenant's turn after the first ones ended", f, err)

	// The operator raises the tenant's cap to 3: with two held turns, a third is admitted once
	// the connector has read the override.
	held = s.startTurns(t, 2, s.tenant, s.agent, "重复我说的话：gated-two")
	g.waitHeld(t, "gated-two", 2)
	_, err = s.turnAs(ctx, s.tenant, s.agent, "重复我说的话：before the override")
	wantRefused(t, err, "tenant", "2")
	if err := s.store.SetTenantLimits(ctx, s.tenant, connector.TenantLimits{MaxTurns: 3}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second) // 100× the refresh interval
	for {
		f, err := s.turnAs(ctx, s.tenant, s.agent, "重复我说的话：after the override")
		if err == nil {
			wantCompleted(t, "a third turn under the override", f, err)
			break
		}
		// Until it is read the cap is 2; then, for up to a sync, the share of the new cap is
		// still the old grant of 2.
		if st, _ := status.FromError(err); !strings.HasPrefix(st.Message(), "tenant cap reached: at most 3 ") {
			wantRefused(t, err, "tenant", "2")
		}
		if time.Now().After(deadline) {
			t.Fatal("the override of 3 was never applied")
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(g.open["gated-two"])
	for range 2 {
		if got := <-held; got != pb.Outcome_OUTCOME_COMPLETED.String() {
			t.Fatalf("a held turn ended %s", got)
		}
	}
}

// TestAgentAndReplicaCaps: with one turn per agent and two per replica, a second turn to a busy
// agent is refused naming the agent cap while the tenant's other agent still runs, and a turn
// past the replica's two is refused naming the replica cap, whichever tenant sends it.
func TestAgentAndReplicaCaps(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g := newGates("gated")
	s := startStack(t, map[string]string{"A2AC_AGENT_MAX_TURNS": "1", "A2AC_MAX_TURNS": "2"},
		func(c *stackConfig) { c.wrapAgent = g.wrap })
	second := httptest.NewServer(g.wrap(agent.New(agent.Options{}).Handler()))
	t.Cleanup(second.Close)
	secondAgent := s.register(t, second.URL+agent.CardPath, "").ID
	otherTenant, otherAgent := s.otherTenant(t)

	first := s.startTurns(t, 1, s.tenant, s.agent, "重复我说的话：gated")
	g.waitHeld(t, "gated", 1)
	_, err := s.turnAs(ctx, s.tenant, s.agent, "重复我说的话：same agent")
	wantRefused(t, err, "agent", "1")
	f, err := s.turnAs(ctx, s.tenant, secondAgent, "重复我说的话：other agent")
	wantCompleted(t, "the tenant's other agent", f, err)

	more := s.startTurns(t, 1, s.tenant, secondAgent, "重复我说的话：gated")
	g.waitHeld(t, "gated", 2)
	_, err = s.turnAs(ctx, otherTenant, otherAgent, "重复我说的话：replica full")
	wantRefused(t, err, "replica", "2")

	close(g.open["gated"])
	for _, c := range []<-chan string{first, more} {
		if got := <-c; got != pb.Outcome_OUTCOME_COMPLETED.String() {
			t.Fatalf("a held turn ended %s", got)
		}
	}
	f, err = s.turnAs(ctx, otherTenant, otherAgent, "重复我说的话：room again")
	wantCompleted(t, "a turn once the replica has room", f, err)
}

// TestTenantMetadata_refuses_at_the_stream_start_on_the_live_connector: with the tenant at its
// cap of 1, a turn naming the tenant in its request metadata is RESOURCE_EXHAUSTED even when
// its bytes are no request at all: the connector refused it before decoding anything. Without
// the metadata the same bytes are decoded (grpc-go's INTERNAL for undecodable requests). A turn
// whose metadata names another tenant than its tenant_id is INVALID_ARGUMENT. None reaches the
// agent.
func TestTenantMetadata_refuses_at_the_stream_start_on_the_live_connector(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	g := newGates("gated")
	s := startStack(t, map[string]string{"A2AC_TENANT_MAX_TURNS": "1"}, func(c *stackConfig) { c.wrapAgent = g.wrap })
	otherTenant, _ := s.otherTenant(t)
	held := s.startTurns(t, 1, s.tenant, s.agent, "重复我说的话：gated")
	g.waitHeld(t, "gated", 1)
	posts := g.posts.Load()

	raw := grpc.ForceCodec(hostile.RawCodec{})
	call := func(body []byte, kv ...string) *status.Status {
		ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(ctx, kv...), 20*time.Second)
		defer cancel()
		stream, err := s.conn.NewStream(ctx, &pb.Connector_ServiceDesc.Streams[0], pb.Connector_HandleTurn_FullMethodName, raw)
		if err != nil {
			return status.Convert(err)
		}
		if err := stream.SendMsg(&body); err != nil && !errors.Is(err, io.EOF) {
			return status.Convert(err)
		}
		_ = stream.CloseSend()
		var ev []byte
		for {
			if err := stream.RecvMsg(&ev); err != nil {
				return status.Convert(err)
			}
		}
	}
	notARequest := []byte{0x0f, 0xff, 0xff} // a field tag of wire type 7, which does not exist
	st := call(notARequest, grpcapi.TenantMetadataKey, s.tenant)
	wantRefused(t, st.Err(), "tenant", "1")
	if st := call(notARequest); !hostile.UndecodableByGRPC(st) {
		t.Errorf("the same bytes without the metadata: %v, want grpc-go's answer to an undecodable request", st)
	}
	valid, err := proto.Marshal(&pb.HandleTurnRequest{TenantId: s.tenant, SessionId: uuid.NewString(), TurnId: uuid.NewString(),
		AgentId: s.agent, Text: "重复我说的话：named"})
	if err != nil {
		t.Fatal(err)
	}
	if st := call(valid, grpcapi.TenantMetadataKey, otherTenant); st.Code() != codes.InvalidArgument ||
		!strings.HasPrefix(st.Message(), "tenant_id: differs from the tenant named in the "+grpcapi.TenantMetadataKey) {
		t.Errorf("metadata naming another tenant: %v, want INVALID_ARGUMENT on tenant_id", st)
	}
	if got := g.posts.Load(); got != posts {
		t.Errorf("the agent got %d requests from refused turns, want none", got-posts)
	}
	close(g.open["gated"])
	if got := <-held; got != pb.Outcome_OUTCOME_COMPLETED.String() {
		t.Fatalf("the held turn ended %s", got)
	}
}
