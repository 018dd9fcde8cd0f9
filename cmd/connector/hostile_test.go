package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/hostile"
)

// Hostile requests against the live connector: the real program on a loopback port, real
// Postgres behind it, the demo agent registered for the tenant. Requests are written byte by
// byte (hostile.RawCodec), so string fields can hold what protobuf-go would refuse to send.
// Two drivers share one oracle (connectorStack.exercise):
//
//   - TestHostileRequestsToTheLiveConnector sends hostileRPCs seeded requests in every `make
//     test`: each field good or hostile (NUL, control characters, invalid UTF-8, huge), metadata
//     built member by member (hostile keys and strings, NaN, deep nesting), a few raw garbage;
//   - FuzzConnectorAPI lets the fuzzer mutate the fields (`make fuzz`; CI runs its seeds).
//
// The oracle: every RPC answers OK, INVALID_ARGUMENT, NOT_FOUND or FAILED_PRECONDITION (or
// grpc-go's own INTERNAL for bytes that are no protobuf message; a string that is not UTF-8 is
// INVALID_ARGUMENT through grpcapi.Codec, docs/decisions.md); a turn that
// runs ends with exactly one final, never with error code "internal"; no status message or
// turn error shows internals (hostile.Leaks); afterwards gRPC health says SERVING and a normal
// turn completes.

// hostileRPCs is how many requests the seeded test sends.
const hostileRPCs = 1500

// connectorInput is one request as the fuzzer sees it. "{tenant}" and "{agent}" become the
// stack's ids; metadata is JSON for the Struct (none when it is not a JSON object), unless
// members gives the Struct as built; raw, when set, is sent instead of all fields.
type connectorInput struct {
	rpc                                  uint8
	tenant, session, turn, agentID, text string
	metadata                             string
	members                              []hostile.Member // when set, the Struct, as built
	raw                                  []byte           // when set, sent instead of any field
}

var rpcNames = []string{"HandleTurn", "GetSession", "ReleaseSession", "ListAgents"}

// okCodes are the statuses a request may get.
var okCodes = []codes.Code{codes.OK, codes.InvalidArgument, codes.NotFound, codes.FailedPrecondition}

type connectorStack struct{ *stack }

// encode writes the request's fields in the wire format, whatever they hold.
func (s connectorStack) encode(in connectorInput) []byte {
	if in.raw != nil {
		return in.raw
	}
	r := strings.NewReplacer("{tenant}", s.tenant, "{agent}", s.agent)
	var b []byte
	b = hostile.AppendString(b, 1, r.Replace(in.tenant)) // tenant_id is field 1 of every request
	if rpcNames[int(in.rpc)%len(rpcNames)] == "ListAgents" {
		return b
	}
	b = hostile.AppendString(b, 2, in.session)
	if rpcNames[int(in.rpc)%len(rpcNames)] != "HandleTurn" {
		return b
	}
	b = hostile.AppendString(b, 3, in.turn)
	b = hostile.AppendString(b, 4, r.Replace(in.agentID))
	b = hostile.AppendString(b, 5, in.text)
	members := in.members
	if members == nil && in.metadata != "" {
		var m map[string]any
		if json.Unmarshal([]byte(in.metadata), &m) == nil {
			members = toMembers(m)
		}
	}
	if members != nil {
		b = hostile.AppendStruct(b, 6, members)
	}
	return b
}

// toMembers turns decoded JSON into Struct members, keys in order.
func toMembers(m map[string]any) []hostile.Member {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]hostile.Member, 0, len(m))
	for _, k := range keys {
		out = append(out, hostile.Member{Key: k, Value: toValue(m[k])})
	}
	return out
}

func toValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return toMembers(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = toValue(e)
		}
		return out
	}
	return v
}

// exercise sends in and judges the answer; it returns the status code and, for a turn that
// ran, its outcome.
func (s connectorStack) exercise(t testing.TB, in connectorInput) (codes.Code, pb.Outcome) {
	t.Helper()
	rpc := rpcNames[int(in.rpc)%len(rpcNames)]
	req := s.encode(in)
	what := fmt.Sprintf("%s(%q)", rpc, clip(req))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // only a failing run waits
	defer cancel()
	raw := grpc.ForceCodec(hostile.RawCodec{})
	var (
		err     error
		outcome pb.Outcome
	)
	if rpc == "HandleTurn" {
		outcome, err = s.turnRaw(ctx, t, what, req, raw)
	} else {
		var resp []byte
		err = s.conn.Invoke(ctx, "/a2aconnector.v1.Connector/"+rpc, &req, &resp, raw)
	}
	st := status.Convert(err)
	switch {
	case hostile.UndecodableByGRPC(st):
		// grpc-go's own answer to bytes that are no message, before any code of ours ran
		// (TestNotUTF8IsInvalidArgumentOnTheLiveConnector: a well-formed one is not).
	case !slices.Contains(okCodes, st.Code()):
		t.Fatalf("%s: %v", what, err)
	default:
		s.judgeText(t, what, req, st.Message())
	}
	return st.Code(), outcome
}

// turnRaw runs one HandleTurn and checks its events: a final, last and alone of its kind,
// whose error is never the connector's own.
func (s connectorStack) turnRaw(ctx context.Context, t testing.TB, what string, req []byte, opts ...grpc.CallOption) (pb.Outcome, error) {
	stream, err := s.conn.NewStream(ctx, &pb.Connector_ServiceDesc.Streams[0], "/a2aconnector.v1.Connector/HandleTurn", opts...)
	if err != nil {
		return 0, err
	}
	if err := stream.SendMsg(&req); err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	if err := stream.CloseSend(); err != nil {
		return 0, err
	}
	var final *pb.TurnFinal
	for {
		var b []byte
		err := stream.RecvMsg(&b)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if final != nil {
				t.Fatalf("%s: error after the final: %v", what, err)
			}
			return 0, err
		}
		var ev pb.TurnEvent
		if err := proto.Unmarshal(b, &ev); err != nil {
			t.Fatalf("%s: an event that does not decode: %v", what, err)
		}
		if final != nil {
			t.Fatalf("%s: an event after the final: %v", what, &ev)
		}
		switch e := ev.GetEvent().(type) {
		case *pb.TurnEvent_Final:
			final = e.Final
		case *pb.TurnEvent_Status:
			s.judgeText(t, what, req, e.Status.GetText())
		}
	}
	if final == nil {
		t.Fatalf("%s: the stream ended without a final", what)
	}
	if final.GetError().GetCode() == "internal" {
		t.Fatalf("%s: the turn failed inside the connector: %v", what, final.GetError())
	}
	s.judgeText(t, what, req, final.GetError().GetMessage())
	return final.GetOutcome(), nil
}

// judgeText fails on internals in text the connector wrote; what the request carried may come
// back (the demo agent repeats the user).
func (s connectorStack) judgeText(t testing.TB, what string, req []byte, text string) {
	t.Helper()
	for _, leak := range hostile.Leaks(text) {
		if _, match, _ := strings.Cut(leak, ": "); !strings.Contains(string(req), match) {
			t.Fatalf("%s: shows internals (%s): %q", what, leak, text)
		}
	}
}

// checkHealthy: after the barrage gRPC health says SERVING and a plain turn completes. It has
// its own context: a fuzz target's is gone by the time its cleanup runs.
func (s connectorStack) checkHealthy(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, svc := range []string{"", pb.Connector_ServiceDesc.ServiceName} {
		res, err := s.health.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || res.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("health %q after the hostile requests: %v, %v", svc, res, err)
		}
	}
	req, err := proto.Marshal(&pb.HandleTurnRequest{TenantId: s.tenant, SessionId: "healthy-" + uuid.NewString(),
		TurnId: uuid.NewString(), AgentId: s.agent, Text: "重复我说的话：你好"})
	if err != nil {
		t.Fatal(err)
	}
	outcome, err := s.turnRaw(ctx, t, "a plain turn after the hostile requests", req, grpc.ForceCodec(hostile.RawCodec{}))
	if err != nil || outcome != pb.Outcome_OUTCOME_COMPLETED {
		t.Fatalf("a plain turn after the hostile requests: %v, %v", outcome, err)
	}
}

func clip(b []byte) string {
	if len(b) > 160 {
		return string(b[:160]) + "…"
	}
	return string(b)
}

// hostileRPC generates one request: each field good with some chance and hostile otherwise, so
// that many requests pass the checks and run real turns while the rest probe one field each.
func hostileRPC(r *rand.Rand) connectorInput {
	pick := func(good ...string) string {
		if r.IntN(8) == 0 {
			return hostile.String(r)
		}
		return good[r.IntN(len(good))]
	}
	in := connectorInput{
		rpc:     uint8(r.IntN(len(rpcNames))),
		tenant:  pick("{tenant}", "{tenant}", "{tenant}", uuid.NewString(), "not-a-uuid"),
		session: pick("s-"+fmt.Sprint(r.IntN(20)), uuid.NewString()),
		turn:    pick(uuid.NewString(), "1"),
		agentID: pick("{agent}", "{agent}", "{agent}", "", uuid.NewString(), "not-a-uuid"),
		text:    pick("重复我说的话：你好", "帮我算加法", "3和5", "数一下我说了几句话", "进行闪光", "line\nbreak\ttab", "tell me a joke"),
	}
	if r.IntN(2) == 0 {
		in.rpc = 0 // HandleTurn is the point: over half of all requests
	}
	switch r.IntN(6) {
	case 0:
		in.members = []hostile.Member{{Key: "user", Value: []hostile.Member{{Key: "id", Value: "u-1"}}},
			{Key: "device", Value: []hostile.Member{{Key: "type", Value: "speaker"}}}}
	case 1:
		in.members = []hostile.Member{{Key: hostile.String(r), Value: hostile.String(r)}}
	case 2:
		in.members = []hostile.Member{{Key: "n", Value: []float64{math.NaN(), math.Inf(1), math.Inf(-1)}[r.IntN(3)]}}
	case 3:
		var deep any = "leaf"
		for range 20 + r.IntN(40) {
			if r.IntN(2) == 0 {
				deep = []hostile.Member{{Key: "d", Value: deep}}
			} else {
				deep = []any{deep}
			}
		}
		in.members = []hostile.Member{{Key: "deep", Value: deep}}
	case 4:
		in.members = []hostile.Member{{Key: "list", Value: []any{"ok", hostile.String(r), 1.0, true, nil}}}
	}
	if r.IntN(40) == 0 {
		in.raw = hostile.Mutate(r, []byte{0x0a, 0x03, 'a', 'b', 'c', 0x12, 0x01, 's'})
	}
	return in
}

func TestHostileRequestsToTheLiveConnector(t *testing.T) {
	t.Parallel()
	s := connectorStack{startStack(t, nil)}
	const seed = 12
	r := rand.New(rand.NewPCG(seed, seed))
	answers := map[string]int{}
	for range hostileRPCs {
		code, outcome := s.exercise(t, hostileRPC(r))
		key := code.String()
		if code == codes.OK && outcome != pb.Outcome_OUTCOME_UNSPECIFIED {
			key = outcome.String()
		}
		answers[key]++
	}
	s.checkHealthy(t)
	t.Logf("%d hostile requests (seed %d), answers: %v", hostileRPCs, seed, answers)
}

// A well-formed request whose string field is not UTF-8 gets INVALID_ARGUMENT naming the field
// from the running connector (its server codec, grpcapi.Codec), for unary and streaming RPCs.
func TestNotUTF8IsInvalidArgumentOnTheLiveConnector(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil)
	raw := grpc.ForceCodec(hostile.RawCodec{})
	body := hostile.AppendString(hostile.AppendString(nil, 1, s.tenant), 2, "session-\xff")
	req, resp := body, []byte(nil)
	err := s.conn.Invoke(t.Context(), "/a2aconnector.v1.Connector/GetSession", &req, &resp, raw)
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.HasPrefix(st.Message(), "session_id: ") {
		t.Errorf("GetSession: %v, want INVALID_ARGUMENT naming session_id", err)
	}
	stream, err := s.conn.NewStream(t.Context(), &pb.Connector_ServiceDesc.Streams[0], "/a2aconnector.v1.Connector/HandleTurn", raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.SendMsg(&req); err != nil {
		t.Fatal(err)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	var ev []byte
	if st := status.Convert(stream.RecvMsg(&ev)); st.Code() != codes.InvalidArgument || !strings.HasPrefix(st.Message(), "session_id: ") {
		t.Errorf("HandleTurn: %v, want INVALID_ARGUMENT naming session_id", st.Err())
	}
}

// FuzzConnectorAPI mutates the fields of requests to the live connector. Seeds are the hostile
// requests of TestHostileRequestsToTheLiveConnector and their kin; `make fuzz` runs it
// (FUZZTIME), CI runs the seeds.
func FuzzConnectorAPI(f *testing.F) {
	s := connectorStack{startStack(f, nil)}
	for _, in := range []connectorInput{
		{rpc: 0, tenant: "{tenant}", session: "a\x00b", turn: "1", agentID: "{agent}", text: "hi"},
		{rpc: 0, tenant: "{tenant}", session: "s", turn: "1\x00", agentID: "{agent}", text: "重复我说的话：你好"},
		// The agent asks a question: the hold (and its turn_id) must be saved.
		{rpc: 0, tenant: "{tenant}", session: "s-hold", turn: "1\x00", agentID: "{agent}", text: "帮我算加法"},
		{rpc: 0, tenant: "{tenant}", session: "s", turn: "2", agentID: "{agent}", text: "hi\x00"},
		{rpc: 0, tenant: "{tenant}", session: "s\xff", turn: "3", agentID: "{agent}", text: "hi"},
		{rpc: 0, tenant: "{tenant}", session: "s", turn: "4", agentID: "{agent}", text: "重复我说的话：你好", metadata: `{"user":{"id":"u\u0000"}}`},
		{rpc: 0, tenant: "{tenant}", session: "s", turn: "5", agentID: "{agent}", text: "帮我算加法", metadata: `{"device":{"type":"speaker"}}`},
		{rpc: 0, tenant: "{tenant}", session: "s", turn: "6", agentID: "", text: "3和5"},
		{rpc: 0, tenant: "\x00", session: "s", turn: "7", agentID: "{agent}", text: "hi"},
		{rpc: 0, tenant: "{tenant}", session: strings.Repeat("s", 257), turn: "8", agentID: "{agent}", text: "hi"},
		{rpc: 1, tenant: "{tenant}", session: "a\x00b"},
		{rpc: 1, tenant: "{tenant}", session: "s"},
		{rpc: 2, tenant: "{tenant}", session: "s\x1b[2J"},
		{rpc: 2, tenant: "{tenant}", session: "s"},
		{rpc: 3, tenant: "{tenant}"},
		{rpc: 3, tenant: "not-a-uuid\x00"},
	} {
		f.Add(in.rpc, in.tenant, in.session, in.turn, in.agentID, in.text, in.metadata)
	}
	f.Cleanup(func() { s.checkHealthy(f) })
	f.Fuzz(func(t *testing.T, rpc uint8, tenant, session, turn, agentID, text, metadata string) {
		s.exercise(t, connectorInput{rpc: rpc, tenant: tenant, session: session, turn: turn,
			agentID: agentID, text: text, metadata: metadata})
	})
}
