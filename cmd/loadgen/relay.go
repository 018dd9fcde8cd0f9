package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/store"

	connector "github.com/a2a-connector/a2a-connector"
)

// The minimal relay (`loadgen relay`, run in place of the connector by `loadgen -via relay`) is
// a measuring instrument, not a product. It is the least any relay with the connector's
// required parts must do, so that a run can show the floor of this architecture on a machine:
// how close to the bare client a turn through any gRPC-to-A2A relay can get there. Its parts
// are the connector's:
//
//   - HandleTurn over grpc-go, with the connector's server options;
//   - the session lookup, the connector's own (store.LookupTurn, with its batching of concurrent
//     lookups), on a pgx pool sized like the connector's;
//   - the agent call, A2A message/stream over HTTP/1.1 + SSE (net/http, no gzip);
//   - a TextDelta per text chunk and a Final.
//
// It leaves out everything else the connector does: it saves no session after a turn, sends no
// Started or Status events (nor the task and context ids in the Final), logs nothing per turn,
// has no telemetry, no retries, no health counts, no SSRF guard and no timeouts (only the dial's:
// a turn lasts as long as its caller's deadline). Its errors are plain gRPC statuses, not the
// connector's table. So its numbers are a lower bound for the connector's, never a comparison
// of features; changing it to "win" a measurement defeats its purpose.
//
// With -lookup=false (what `loadgen -via hop` runs) it skips the session lookup too: a relay
// with no database at all, whose numbers are what the gRPC hop itself costs on the machine
// (the hop from the caller and back, and the relay's own HTTP client), the part of the floor no
// relay called over gRPC can avoid.
//
// Settings are the connector's environment, which loadgen sets for both (DATABASE_URL,
// A2AC_GRPC_ADDR, A2AC_SHUTDOWN_TIMEOUT), each also a flag. Once listening it logs the
// connector's ready line ("connector listening" with the addr), which loadgen waits for.

// relayEndpointSQL finds an agent's JSON-RPC endpoint (its live revision's profile). The
// connector keeps agents in a cache too, so the relay asks once per agent.
const relayEndpointSQL = `
	select r.profile->>'endpointUrl'
	  from agents a
	  join agent_revisions r on r.tenant_id = a.tenant_id and r.agent_id = a.id and r.revision = a.current_revision
	 where a.tenant_id = $1::uuid and a.id = $2::uuid`

// runRelay is `loadgen relay`: serve HandleTurn until ctx ends, then stop as the connector does
// (GracefulStop, Stop after the shutdown timeout).
func runRelay(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("loadgen relay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "gRPC listen address ($A2AC_GRPC_ADDR)")
	databaseURL := fs.String("database-url", "", "Postgres database the connector's migrations made ($DATABASE_URL)")
	shutdown := fs.Duration("shutdown-timeout", 10*time.Second, "bound of the drain on SIGTERM ($A2AC_SHUTDOWN_TIMEOUT)")
	lookup := fs.Bool("lookup", true, "look the session up before the agent call (false: the gRPC hop alone, what -via hop runs)")
	// The connector's environment sets the defaults, so loadgen starts both alike; flags win.
	for name, env := range map[string]string{"addr": "A2AC_GRPC_ADDR", "database-url": "DATABASE_URL", "shutdown-timeout": "A2AC_SHUTDOWN_TIMEOUT"} {
		if v, ok := os.LookupEnv(env); ok {
			if err := fs.Set(name, v); err != nil {
				return fmt.Errorf("relay: $%s: %w", env, err)
			}
		}
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *databaseURL == "" {
		return errors.New("relay: -database-url (or $DATABASE_URL) is required")
	}
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(500) // what the connector's GC tuner picks for a small heap
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))

	cfg, err := pgxpool.ParseConfig(*databaseURL)
	if err != nil {
		return fmt.Errorf("relay: database url: %w", err)
	}
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off" // as the connector's pool
	cfg.MaxConns = int32(max(16, 4*runtime.GOMAXPROCS(0)))
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	defer pool.Close()

	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	r := &relay{pool: pool, store: store.New(pool), lookup: *lookup, http: &http.Client{Transport: &http.Transport{
		DialContext:  dialer.DialContext,
		MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: 90 * time.Second,
		DisableCompression: true, // the connector's HTTP/1 client asks for no gzip either
	}}}
	defer r.http.CloseIdleConnections()
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(256<<10),
		grpc.StaticStreamWindowSize(256<<10), grpc.StaticConnWindowSize(1<<20))
	pb.RegisterConnectorServer(srv, r)

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("relay: listen %s: %w", *addr, err)
	}
	log.Info("connector listening", "addr", ln.Addr().String(), "relay", true, "lookup", *lookup)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("relay: serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down", "timeout", shutdown.String())
	stopped := make(chan struct{})
	go func() { srv.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(*shutdown):
		srv.Stop()
		<-stopped
	}
	return nil
}

// relay is the minimal relay's HandleTurn.
type relay struct {
	pb.UnimplementedConnectorServer
	pool      *pgxpool.Pool // for the agents' endpoints
	store     *store.Store  // for the session lookup
	lookup    bool          // false: no session lookup (-via hop)
	http      *http.Client
	endpoints sync.Map // tenant "\x00" agent -> stream URL
}

// relayEvent is the part of a message/stream event the relay reads.
type relayEvent struct {
	Result struct {
		Kind   string `json:"kind"`
		Status struct {
			State string `json:"state"`
		} `json:"status"`
		Artifact struct {
			Parts []textPart `json:"parts"`
		} `json:"artifact"`
	} `json:"result"`
	Error json.RawMessage `json:"error"`
}

// relayRequest is a message/stream request in the connector's field order (internal/a2a's
// encoder), so the agent parses the same bytes from both.
type relayRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      string `json:"id"`
	Method  string `json:"method"`
	Params  struct {
		Message struct {
			Kind      string     `json:"kind"`
			Role      string     `json:"role"`
			Parts     []textPart `json:"parts"`
			MessageID string     `json:"messageId"`
			ContextID string     `json:"contextId,omitempty"`
		} `json:"message"`
	} `json:"params"`
}

func (s *relay) HandleTurn(req *pb.HandleTurnRequest, stream grpc.ServerStreamingServer[pb.TurnEvent]) error {
	ctx := stream.Context()
	tenant, agent := req.GetTenantId(), req.GetAgentId()
	// The one database round trip a relay must make before it can call the agent: the
	// session's hold and its context with the agent. (The relay ignores a hold.)
	var l connector.TurnLookup
	if s.lookup {
		var err error
		if l, err = s.store.LookupTurn(ctx, tenant, req.GetSessionId(), agent, time.Now()); err != nil {
			return status.Errorf(codes.Unavailable, "lookup: %v", err)
		}
	}
	target, err := s.endpoint(ctx, tenant, agent)
	if err != nil {
		return err
	}

	var body relayRequest
	body.JSONRPC, body.ID, body.Method = "2.0", uuid.NewString(), "message/stream"
	m := &body.Params.Message
	m.Kind, m.Role, m.MessageID, m.ContextID = "message", "user", uuid.NewString(), l.ContextID
	m.Parts = []textPart{{Kind: "text", Text: req.GetText()}}
	b, _ := json.Marshal(&body) // plain strings: cannot fail
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(b))
	if err != nil {
		return status.Errorf(codes.Internal, "agent request: %v", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	resp, err := s.http.Do(hreq)
	if err != nil {
		return status.Errorf(codes.Unavailable, "agent: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return status.Errorf(codes.Unavailable, "agent: %s", resp.Status)
	}

	var text strings.Builder
	br := bufio.NewReader(resp.Body)
	for {
		// One data line is one event: the stub agent writes them so, and the relay need not
		// read SSE in general to measure the floor.
		line, err := br.ReadSlice('\n')
		if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
			return status.Errorf(codes.Unavailable, "agent stream ended before a final state: %v", err)
		}
		data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data:"))
		if !ok {
			continue
		}
		var ev relayEvent
		if err := json.Unmarshal(data, &ev); err != nil || (len(ev.Error) > 0 && string(ev.Error) != "null") {
			return status.Errorf(codes.Unavailable, "agent event: %v %s", err, ev.Error)
		}
		switch ev.Result.Kind {
		case "artifact-update":
			for _, p := range ev.Result.Artifact.Parts {
				if p.Kind != "text" || p.Text == "" {
					continue
				}
				text.WriteString(p.Text)
				if err := stream.Send(&pb.TurnEvent{Event: &pb.TurnEvent_TextDelta{TextDelta: &pb.TextDelta{Text: p.Text}}}); err != nil {
					return err
				}
			}
			continue
		case "task", "status-update":
		default:
			continue
		}
		st := ev.Result.Status.State
		if st == "submitted" || st == "working" {
			continue
		}
		final := &pb.TurnFinal{Outcome: pb.Outcome_OUTCOME_COMPLETED, Text: text.String()}
		if st != "completed" {
			final.Outcome, final.Error = pb.Outcome_OUTCOME_FAILED, &pb.TurnError{Code: "agent_" + st}
		}
		return stream.Send(&pb.TurnEvent{Event: &pb.TurnEvent_Final{Final: final}})
	}
}

// endpoint is the agent's streaming URL, `{url}/stream` as the connector's first try on the
// 0.x wire, looked up once per agent and kept.
func (s *relay) endpoint(ctx context.Context, tenant, agent string) (string, error) {
	key := tenant + "\x00" + agent
	if v, ok := s.endpoints.Load(key); ok {
		return v.(string), nil
	}
	var base pgtype.Text
	if err := s.pool.QueryRow(ctx, relayEndpointSQL, tenant, agent).Scan(&base); err != nil || base.String == "" {
		return "", status.Errorf(codes.NotFound, "agent not found in this tenant (%v)", err)
	}
	u := strings.TrimSuffix(base.String, "/") + "/stream" // the stub's url has no query
	s.endpoints.Store(key, u)
	return u, nil
}
