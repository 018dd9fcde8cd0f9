package main

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
)

// Metadata reaches the agent as message.metadata, within its 64 KiB limit.
func TestMetadataLimitAndPassThrough(t *testing.T) {
	t.Parallel()
	s := startStack(t, nil)
	ctx := t.Context()

	md, err := structpb.NewStruct(map[string]any{"user": map[string]any{"id": "u-1"}, "device": map[string]any{"type": "speaker"}})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := s.client.HandleTurn(ctx, &pb.HandleTurnRequest{TenantId: s.tenant, SessionId: "s-md",
		TurnId: uuid.NewString(), AgentId: s.agent, Text: "进行闪光", Metadata: md})
	if err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := stream.Recv()
		if err != nil {
			break
		}
		if ev.GetFinal() != nil && ev.GetFinal().GetOutcome() != pb.Outcome_OUTCOME_COMPLETED {
			t.Fatalf("final = %v", ev.GetFinal())
		}
	}
	var got map[string]any
	for _, r := range s.demo.Requests() {
		if r.Text == "进行闪光" {
			got = r.Metadata
		}
	}
	if u, _ := got["user"].(map[string]any); u["id"] != "u-1" {
		t.Fatalf("agent saw metadata %v", got)
	}

	big, err := structpb.NewStruct(map[string]any{"blob": strings.Repeat("x", 64<<10)})
	if err != nil {
		t.Fatal(err)
	}
	stream, err = s.client.HandleTurn(ctx, &pb.HandleTurnRequest{TenantId: s.tenant, SessionId: "s-md",
		TurnId: uuid.NewString(), AgentId: s.agent, Text: "hi", Metadata: big})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("metadata over 64 KiB: %v", err)
	}
}
