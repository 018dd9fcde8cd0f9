package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/grpcapi"
)

// viaClient drives HandleTurn the way a dialog engine does: a few long-lived gRPC connections
// to each replica, turns spread over them round robin (so evenly over the replicas).
type viaClient struct {
	conns   []*grpc.ClientConn
	clients []pb.ConnectorClient
	next    atomic.Uint64
	tenant  string
	agent   string
	// header: each turn names its tenant in the request metadata (-tenant-metadata), as a
	// dialog engine should, so that a replica refuses an over-cap turn before decoding it.
	header bool
}

// newViaClient opens n connections to each of addrs (the replicas), interleaved: consecutive
// turns go to consecutive replicas.
func newViaClient(addrs []string, n int, tenant, agent string, header bool) (*viaClient, error) {
	v := &viaClient{tenant: tenant, agent: agent, header: header}
	for range n {
		for _, addr := range addrs {
			// One ClientConn is one HTTP/2 connection; n of them are n TCP connections.
			cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				v.close()
				return nil, fmt.Errorf("grpc client %s: %w", addr, err)
			}
			cc.Connect()
			v.conns = append(v.conns, cc)
			v.clients = append(v.clients, pb.NewConnectorClient(cc))
		}
	}
	return v, nil
}

func (v *viaClient) close() {
	for _, cc := range v.conns {
		cc.Close()
	}
}

// turn runs one HandleTurn and checks it: exactly one Final, COMPLETED, whose text and the
// concatenated TextDeltas are both exactly want.
func (v *viaClient) turn(ctx context.Context, sessionID, turnID, text, want string) (res turnTiming, err error) {
	return v.turnTo(ctx, v.agent, sessionID, turnID, text, want)
}

// turnTo is turn to another agent of the same tenant (the rows per binding and credential).
func (v *viaClient) turnTo(ctx context.Context, agent, sessionID, turnID, text, want string) (res turnTiming, err error) {
	return v.run(ctx, &pb.HandleTurnRequest{TenantId: v.tenant, SessionId: sessionID, TurnId: turnID, AgentId: agent, Text: text}, want)
}

// callerTurnTo is turnTo naming the platform's user (the identity row).
func (v *viaClient) callerTurnTo(ctx context.Context, agent, sessionID, turnID, userID, text, want string) (res turnTiming, err error) {
	return v.run(ctx, &pb.HandleTurnRequest{TenantId: v.tenant, SessionId: sessionID, TurnId: turnID, AgentId: agent, Text: text,
		Caller: &pb.Caller{UserId: userID}}, want)
}

// voiceTurnTo is turnTo as a call's turn: speech on a voice channel that cut off the previous
// reply (the voice row).
func (v *viaClient) voiceTurnTo(ctx context.Context, agent, sessionID, turnID, text, want string) (res turnTiming, err error) {
	return v.run(ctx, &pb.HandleTurnRequest{TenantId: v.tenant, SessionId: sessionID, TurnId: turnID, AgentId: agent, Text: text,
		Channel:      &pb.Channel{Kind: "voice", Locale: "zh-CN"},
		Interruption: &pb.Interruption{TurnId: turnID + "-before", HeardText: voiceHeardText}}, want)
}

// run sends req and checks the turn (see turn).
func (v *viaClient) run(ctx context.Context, req *pb.HandleTurnRequest, want string) (res turnTiming, err error) {
	c := v.clients[v.next.Add(1)%uint64(len(v.clients))]
	if v.header {
		ctx = metadata.AppendToOutgoingContext(ctx, grpcapi.TenantMetadataKey, req.GetTenantId())
	}
	start := time.Now()
	stream, err := c.HandleTurn(ctx, req)
	if err != nil {
		return res, fmt.Errorf("HandleTurn: %w", err)
	}
	var got strings.Builder
	var final *pb.TurnFinal
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			res.total = time.Since(start) // the RPC has ended
			break
		}
		if err != nil {
			return res, fmt.Errorf("HandleTurn: %w", err)
		}
		if final != nil {
			return res, errors.New("event after final")
		}
		switch e := ev.GetEvent().(type) {
		case *pb.TurnEvent_TextDelta:
			if res.firstText == 0 {
				res.firstText = time.Since(start)
			}
			got.WriteString(e.TextDelta.GetText())
		case *pb.TurnEvent_Final:
			final = e.Final
		}
	}
	switch {
	case final == nil:
		return res, errors.New("stream ended without final")
	case final.GetOutcome() != pb.Outcome_OUTCOME_COMPLETED:
		return res, fmt.Errorf("final %s: %s %s", final.GetOutcome(), final.GetError().GetCode(), final.GetError().GetMessage())
	case final.GetText() != want:
		return res, fmt.Errorf("final text %q, want %q", trim(final.GetText()), trim(want))
	case got.String() != want:
		return res, fmt.Errorf("text deltas %q, want %q", trim(got.String()), trim(want))
	}
	return res, nil
}
