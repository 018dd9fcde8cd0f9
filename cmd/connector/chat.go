package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
)

// chat plays the dialog engine: each input line is one turn of one session. Text is printed as
// it streams; after each turn the outcome and whether the session is held.
func chat(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("connector chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", orDefault(getenv("A2AC_CHAT_ADDR"), "127.0.0.1:9090"), "connector gRPC address")
	tenant := fs.String("tenant", getenv("A2AC_CHAT_TENANT"), "tenant id (required)")
	agent := fs.String("agent", getenv("A2AC_CHAT_AGENT"), "agent id to send turns to when the session is not held")
	sessionID := fs.String("session", "chat-"+uuid.NewString()[:8], "dialog session id")
	timeout := fs.Duration("timeout", 60*time.Second, "per-turn RPC deadline")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tenant == "" {
		return errors.New("chat: -tenant is required")
	}
	conn, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("chat: %w", err)
	}
	defer conn.Close()
	client := pb.NewConnectorClient(conn)

	fmt.Fprintf(stdout, "session %s — type a message, /release to end a hold, /quit to leave\n", *sessionID)
	in := bufio.NewScanner(stdin)
	for {
		fmt.Fprint(stdout, "> ")
		if !in.Scan() {
			fmt.Fprintln(stdout)
			return in.Err()
		}
		line := strings.TrimSpace(in.Text())
		switch line {
		case "":
			continue
		case "/quit", "/exit":
			return nil
		case "/release":
			res, err := client.ReleaseSession(ctx, &pb.ReleaseSessionRequest{TenantId: *tenant, SessionId: *sessionID})
			if err != nil {
				fmt.Fprintln(stdout, "release:", err)
				continue
			}
			fmt.Fprintf(stdout, "[released=%v]\n", res.GetReleased())
			continue
		}
		if err := chatTurn(ctx, client, stdout, *timeout, &pb.HandleTurnRequest{
			TenantId: *tenant, SessionId: *sessionID, TurnId: uuid.NewString(), AgentId: *agent, Text: line,
		}); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			fmt.Fprintln(stdout, "\nerror:", err)
		}
	}
}

func chatTurn(ctx context.Context, client pb.ConnectorClient, out io.Writer, timeout time.Duration, req *pb.HandleTurnRequest) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stream, err := client.HandleTurn(ctx, req)
	if err != nil {
		return err
	}
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch e := ev.GetEvent().(type) {
		case *pb.TurnEvent_Started:
			held := ""
			if e.Started.GetHeld() {
				held = ", continuing held task"
			}
			fmt.Fprintf(out, "[%s%s] ", e.Started.GetAgentName(), held)
		case *pb.TurnEvent_TextDelta:
			fmt.Fprint(out, e.TextDelta.GetText())
		case *pb.TurnEvent_Final:
			f := e.Final
			fmt.Fprintf(out, "\n[%s", strings.TrimPrefix(f.GetOutcome().String(), "OUTCOME_"))
			if f.GetError() != nil {
				fmt.Fprintf(out, " %s: %s", f.GetError().GetCode(), f.GetError().GetMessage())
			}
			if f.GetHold() != nil {
				fmt.Fprintf(out, "; session held until %s", f.GetHold().GetExpiresAt().AsTime().Local().Format(time.TimeOnly))
			}
			if f.GetOutcome() == pb.Outcome_OUTCOME_HANDBACK {
				fmt.Fprint(out, "; the agent declined: the platform handles this turn itself")
			}
			if f.GetMetadata() != nil {
				if b, err := protojson.Marshal(f.GetMetadata()); err == nil {
					fmt.Fprintf(out, "; metadata %s", b)
				}
			}
			fmt.Fprintln(out, "]")
		}
	}
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
