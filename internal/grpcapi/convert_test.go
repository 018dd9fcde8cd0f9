package grpcapi

import (
	"encoding/json"
	"log/slog"
	"math"
	"net"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	connector "github.com/a2a-connector/a2a-connector"
	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/hostile"
)

func TestEveryOutcomeHasAWireValue(t *testing.T) {
	t.Parallel()
	seen := map[pb.Outcome]bool{}
	for _, o := range []connector.Outcome{connector.OutcomeCompleted, connector.OutcomeInputRequired,
		connector.OutcomeHandback, connector.OutcomeFailed, connector.OutcomeCanceled, connector.OutcomeNoAgent} {
		got := toPBOutcome(o)
		if got == pb.Outcome_OUTCOME_UNSPECIFIED || seen[got] {
			t.Errorf("%s -> %v", o, got)
		}
		if strings.TrimPrefix(got.String(), "OUTCOME_") != string(o) {
			t.Errorf("%s maps to %v", o, got)
		}
		seen[got] = true
	}
}

func TestAgentCarriesSkillInputSchema(t *testing.T) {
	t.Parallel()
	a := connector.Agent{ID: "a1", CardProfile: connector.CardProfile{Name: "Weather", Streaming: true, Skills: []connector.Skill{
		{ID: "forecast", Name: "Forecast", Tags: []string{"weather"}, Examples: []string{"rain?"},
			InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
		{ID: "plain", Name: "Plain"},
	}}}
	got := toPBAgent(a)
	if got.GetAgentId() != "a1" || !got.GetStreaming() || len(got.GetSkills()) != 2 {
		t.Fatalf("agent = %v", got)
	}
	schema := got.GetSkills()[0].GetInputSchema().AsMap()
	if schema["type"] != "object" || schema["required"].([]any)[0] != "city" {
		t.Errorf("input schema = %v", schema)
	}
	if got.GetSkills()[1].GetInputSchema() != nil {
		t.Error("skill without a schema got one")
	}
}

func TestAgentCarriesItsInterface(t *testing.T) {
	t.Parallel()
	a := connector.Agent{ID: "a1", CardProfile: connector.CardProfile{
		Name: "Dual", ProtocolVersion: "1.0", EndpointURL: "https://agent.example.com/a2a", EndpointTenant: "acme",
		Fallback: &connector.Interface{URL: "https://agent.example.com/a2a", ProtocolVersion: "0.3"},
	}}
	got := toPBAgent(a)
	if got.GetEndpointUrl() != "https://agent.example.com/a2a" || got.GetProtocolVersion() != "1.0" {
		t.Errorf("endpoint_url = %q, protocol_version = %q", got.GetEndpointUrl(), got.GetProtocolVersion())
	}
}

func TestCheckTurn(t *testing.T) {
	t.Parallel()
	ok := &pb.HandleTurnRequest{TenantId: "t", SessionId: "s", TurnId: "1", Text: "hi\tthere\r\nand more",
		ReceivedTextBytes: MaxReceivedTextBytes}
	if err := checkTurn(ok); err != nil {
		t.Fatalf("valid request: %v", err)
	}
	for _, c := range []struct {
		name   string
		mutate func(r *pb.HandleTurnRequest)
		field  string
	}{
		{"no_tenant", func(r *pb.HandleTurnRequest) { r.TenantId = "" }, "tenant_id"},
		{"no_session", func(r *pb.HandleTurnRequest) { r.SessionId = "" }, "session_id"},
		{"no_turn", func(r *pb.HandleTurnRequest) { r.TurnId = "" }, "turn_id"},
		{"blank_text", func(r *pb.HandleTurnRequest) { r.Text = "  \n" }, "text"},
		{"text_too_long", func(r *pb.HandleTurnRequest) { r.Text = strings.Repeat("x", MaxTextBytes+1) }, "text"},
		{"invalid_utf8", func(r *pb.HandleTurnRequest) { r.Text = "\xff\xfe" }, "text"},
		{"nul_in_text", func(r *pb.HandleTurnRequest) { r.Text = "hi\x00" }, "text"},
		{"escape_in_text", func(r *pb.HandleTurnRequest) { r.Text = "hi\x1b[2J" }, "text"},
		{"long_session", func(r *pb.HandleTurnRequest) { r.SessionId = strings.Repeat("s", MaxIDBytes+1) }, "session_id"},
		{"long_agent_id", func(r *pb.HandleTurnRequest) { r.AgentId = strings.Repeat("a", MaxIDBytes+1) }, "agent_id"},
		{"long_turn_id", func(r *pb.HandleTurnRequest) { r.TurnId = strings.Repeat("t", MaxIDBytes+1) }, "turn_id"},
		{"long_tenant_id", func(r *pb.HandleTurnRequest) { r.TenantId = strings.Repeat("t", MaxIDBytes+1) }, "tenant_id"},
		// NUL reached Postgres (session_id) or passed and then broke saving the turn (turn_id).
		{"nul_in_session", func(r *pb.HandleTurnRequest) { r.SessionId = "a\x00b" }, "session_id"},
		{"nul_in_turn", func(r *pb.HandleTurnRequest) { r.TurnId = "1\x00" }, "turn_id"},
		{"nul_in_tenant", func(r *pb.HandleTurnRequest) { r.TenantId = "\x00" }, "tenant_id"},
		{"nul_in_agent", func(r *pb.HandleTurnRequest) { r.AgentId = "a\x00" }, "agent_id"},
		{"newline_in_session", func(r *pb.HandleTurnRequest) { r.SessionId = "a\nb" }, "session_id"},
		{"c1_in_turn", func(r *pb.HandleTurnRequest) { r.TurnId = "a\u0085" }, "turn_id"},
		{"invalid_utf8_session", func(r *pb.HandleTurnRequest) { r.SessionId = "a\xffb" }, "session_id"},
		{"received_text_bytes_beyond_the_longest_reply", func(r *pb.HandleTurnRequest) { r.ReceivedTextBytes = MaxReceivedTextBytes + 1 }, "received_text_bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &pb.HandleTurnRequest{TenantId: "t", SessionId: "s", TurnId: "1", Text: "hi"}
			c.mutate(r)
			wantFieldViolation(t, checkTurn(r), c.field)
		})
	}
}

// wantFieldViolation checks err is INVALID_ARGUMENT naming field in its message and details.
func wantFieldViolation(t *testing.T, err error, field string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument || !strings.HasPrefix(st.Message(), field+": ") {
		t.Fatalf("error = %v, want INVALID_ARGUMENT starting %q", err, field+": ")
	}
	var named []string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				named = append(named, v.GetField())
			}
		}
	}
	if diff := cmp.Diff([]string{field}, named); diff != "" {
		t.Errorf("field violations (-want +got):\n%s", diff)
	}
	if strings.ContainsRune(st.Message(), 0) || !utf8.ValidString(st.Message()) {
		t.Errorf("message %q repeats the bad bytes", st.Message())
	}
}

func TestCheckMetadata(t *testing.T) {
	t.Parallel()
	str := func(v string) *structpb.Value { return structpb.NewStringValue(v) }
	obj := func(fields map[string]*structpb.Value) *structpb.Value {
		return structpb.NewStructValue(&structpb.Struct{Fields: fields})
	}
	deep := str("leaf")
	for range MaxMetadataDepth {
		deep = obj(map[string]*structpb.Value{"d": deep})
	}
	for _, c := range []struct {
		name   string
		fields map[string]*structpb.Value
		field  string // "" when valid
	}{
		{"platform_metadata", map[string]*structpb.Value{"user": obj(map[string]*structpb.Value{"id": str("u-1")}),
			"device": obj(map[string]*structpb.Value{"note": str("line\nbreak\ttab")})}, ""},
		{"nul_in_string", map[string]*structpb.Value{"user": obj(map[string]*structpb.Value{"name": str("a\x00b")})}, "metadata.user.name"},
		{"nul_in_key", map[string]*structpb.Value{"us\x00er": str("x")}, "metadata"},
		{"newline_in_key", map[string]*structpb.Value{"a\nb": str("x")}, "metadata"},
		{"invalid_utf8_in_list", map[string]*structpb.Value{"l": structpb.NewListValue(&structpb.ListValue{
			Values: []*structpb.Value{str("ok"), str("\xff")}})}, "metadata.l[1]"},
		{"nan", map[string]*structpb.Value{"n": structpb.NewNumberValue(math.NaN())}, "metadata.n"},
		{"inf", map[string]*structpb.Value{"n": structpb.NewNumberValue(math.Inf(-1))}, "metadata.n"},
		{"too_deep", map[string]*structpb.Value{"d": deep}, "metadata" + strings.Repeat(".d", MaxMetadataDepth)},
		{"too_large", map[string]*structpb.Value{"blob": str(strings.Repeat("x", MaxMetadataBytes))}, "metadata"},
	} {
		t.Run(c.name, func(t *testing.T) {
			md, err := checkMetadata(&structpb.Struct{Fields: c.fields})
			if c.field == "" {
				if err != nil || md == nil {
					t.Fatalf("checkMetadata = %v, %v", md, err)
				}
				return
			}
			wantFieldViolation(t, err, c.field)
		})
	}
	if md, err := checkMetadata(nil); md != nil || err != nil {
		t.Errorf("no metadata = %v, %v", md, err)
	}
}

// A request with a string field that is not UTF-8 (which protobuf-go refuses, and grpc-go would
// answer INTERNAL before any code of ours runs) is INVALID_ARGUMENT naming the field, through
// Codec; bytes that are no protobuf message at all keep grpc-go's own INTERNAL. Neither answer
// repeats the request.
func TestUndecodableRequests(t *testing.T) {
	t.Parallel()
	srv := grpc.NewServer(grpc.ForceServerCodecV2(Codec()))
	pb.RegisterConnectorServer(srv, New(nil, slog.New(slog.DiscardHandler), Options{})) // nothing may reach the router
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })

	badUTF8 := hostile.AppendString(hostile.AppendString(nil, 1, "t\xff-SECRET"), 2, "s") // tenant_id is field 1 of every request
	garbage := []byte{0x0a, 0xff, 0xff, 0xff}
	for _, tc := range []struct {
		body  []byte
		check func(t *testing.T, rpc string, err error)
	}{{badUTF8, checkInvalidTenantID}, {garbage, checkUndecodable}} {
		for _, rpc := range []string{"ReleaseSession", "GetSession", "ListAgents"} {
			req, resp := tc.body, []byte(nil)
			err := conn.Invoke(t.Context(), "/a2aconnector.v1.Connector/"+rpc, &req, &resp, grpc.ForceCodec(hostile.RawCodec{}))
			tc.check(t, rpc, err)
		}
		stream, err := conn.NewStream(t.Context(), &pb.Connector_ServiceDesc.Streams[0], "/a2aconnector.v1.Connector/HandleTurn",
			grpc.ForceCodec(hostile.RawCodec{}))
		if err != nil {
			t.Fatal(err)
		}
		req := tc.body
		if err := stream.SendMsg(&req); err != nil {
			t.Fatal(err)
		}
		if err := stream.CloseSend(); err != nil {
			t.Fatal(err)
		}
		var ev []byte
		tc.check(t, "HandleTurn", stream.RecvMsg(&ev))
	}
}

func checkInvalidTenantID(t *testing.T, rpc string, err error) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument || !strings.HasPrefix(st.Message(), "tenant_id: ") {
		t.Errorf("%s: %v, want INVALID_ARGUMENT naming tenant_id", rpc, err)
	}
	if strings.Contains(st.Message(), "SECRET") {
		t.Errorf("%s: message repeats the request: %q", rpc, st.Message())
	}
}

func checkUndecodable(t *testing.T, rpc string, err error) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.Internal || !hostile.UndecodableByGRPC(st) {
		t.Errorf("%s: %v, want grpc-go's INTERNAL for an undecodable request", rpc, err)
	}
	if strings.Contains(st.Message(), "SECRET") {
		t.Errorf("%s: message repeats the request: %q", rpc, st.Message())
	}
}
