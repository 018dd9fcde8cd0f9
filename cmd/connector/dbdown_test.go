package main

import (
	"crypto/rand"
	"encoding/base64"
	"net"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/telemetry"
)

// With Postgres unreachable every RPC answers UNAVAILABLE, promptly, and nothing reaches an
// agent: the dialog engine can retry the same turn_id or fall back.
func TestPostgresDownIsUnavailable(t *testing.T) {
	t.Parallel()
	deadDB := "postgres://postgres@" + closedAddr(t) + "/none?sslmode=disable&connect_timeout=2"
	key := make([]byte, 32)
	rand.Read(key)
	server, _ := startConnector(t, map[string]string{
		"DATABASE_URL": deadDB, "A2AC_SECRET_KEY": base64.StdEncoding.EncodeToString(key),
		"A2AC_LOG_LEVEL": "error", "A2AC_DRAIN_DELAY": "0",
	}, nil, telemetry.Options{})
	addr := server.GRPCAddr()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	client := pb.NewConnectorClient(conn)
	tenant := uuid.NewString()

	start := time.Now()
	stream, err := client.HandleTurn(t.Context(), &pb.HandleTurnRequest{TenantId: tenant, SessionId: "s",
		TurnId: "t1", AgentId: uuid.NewString(), Text: "hi"})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.Unavailable {
		t.Errorf("HandleTurn with Postgres down: %v, want UNAVAILABLE", err)
	}
	if _, err := client.GetSession(t.Context(), &pb.GetSessionRequest{TenantId: tenant, SessionId: "s"}); status.Code(err) != codes.Unavailable {
		t.Errorf("GetSession: %v", err)
	}
	if _, err := client.ListAgents(t.Context(), &pb.ListAgentsRequest{TenantId: tenant}); status.Code(err) != codes.Unavailable {
		t.Errorf("ListAgents: %v", err)
	}
	if _, err := client.ReleaseSession(t.Context(), &pb.ReleaseSessionRequest{TenantId: tenant, SessionId: "s"}); status.Code(err) != codes.Unavailable {
		t.Errorf("ReleaseSession: %v", err)
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("four calls took %s with Postgres down; each must fail at connect", elapsed)
	}
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
