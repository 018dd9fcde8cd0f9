// Package grpcapi is the gRPC face of the connector (a2aconnector.v1.Connector): it checks
// requests, converts between protobuf and domain types, and maps errors to gRPC status codes in
// one table. All routing and protocol work happens in internal/session and internal/invoke.
package grpcapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	connector "github.com/a2a-connector/a2a-connector"
	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
)

// Request limits of the API (see connector.proto).
const (
	MaxTextBytes     = 16 << 10
	MaxMetadataBytes = 64 << 10
	MaxIDBytes       = 256
	// MaxReceivedTextBytes bounds received_text_bytes: the connector's largest reply
	// (invoke.DefaultMaxTextBytes).
	MaxReceivedTextBytes = 256 << 10
)

// Router runs turns and keeps session holds (internal/session's Router is it). It speaks the
// domain's records, so this package converts protobuf to them and imports no implementation.
type Router interface {
	// HandleTurn routes and runs one turn, its events to sink. Request problems are errors
	// before anything reaches the sink; agent misbehaviour is a Final with OUTCOME_FAILED.
	HandleTurn(ctx context.Context, t connector.Turn, sink connector.TurnSink) error
	// Release ends the session's hold; released is false when the session was free.
	Release(ctx context.Context, tenantID, sessionID string) (released bool, agentID string, err error)
	// Get reports the session's live hold, if any.
	Get(ctx context.Context, tenantID, sessionID string) (connector.SessionInfo, error)
	// Agents lists the tenant's agents that can be called now.
	Agents(ctx context.Context, tenantID string) ([]connector.Agent, error)
}

// Server implements pb.ConnectorServer.
type Server struct {
	pb.UnimplementedConnectorServer
	router Router
	log    *slog.Logger
	voice  string
	// admission admits turns; nil: only the Router's own caps.
	admission Admission
	handoff   *Handoff
	refusals  refusalLog
}

var _ pb.ConnectorServer = (*Server)(nil)

// Options shape a Server.
type Options struct {
	// VoiceExtension is the URI of the platform's voice extension (A2AC_VOICE_EXTENSION), which
	// ListAgents reports per agent; "" is connector.VoiceExtensionURI.
	VoiceExtension string
	// Admission admits each turn before it costs anything: at the stream's start (TapHandle)
	// when the turn names its tenant in its metadata, else as soon as the request is decoded,
	// before its checks and the Router's span, lookup and log line. The Router then uses the
	// permit for the agent's cap. nil: the Router admits turns itself.
	Admission Admission
	// Handoff runs admitted turns, past a number open on goroutines of their own; nil: each on
	// grpc-go's goroutine.
	Handoff *Handoff
}

// New returns the gRPC service backed by router.
func New(router Router, log *slog.Logger, o Options) *Server {
	if o.VoiceExtension == "" {
		o.VoiceExtension = connector.VoiceExtensionURI
	}
	return &Server{router: router, log: log, voice: o.VoiceExtension, admission: o.Admission, handoff: o.Handoff,
		refusals: refusalLog{log: log}}
}

// HandleTurn implements pb.ConnectorServer.
func (s *Server) HandleTurn(req *pb.HandleTurnRequest, stream pb.Connector_HandleTurnServer) error {
	ctx := stream.Context()
	// Admission first: a turn over a cap costs a few counters, not the request's checks, the
	// Router's span and log line, or a goroutine of its own.
	if err := checkTenantMetadata(ctx, req.GetTenantId()); err != nil {
		return err
	}
	ctx, release, err := s.admit(ctx, req.GetTenantId())
	if err != nil {
		return err
	}
	defer release() // after the turn: Handoff.Run waits for it
	if err := checkTurn(req); err != nil {
		return err
	}
	md, err := checkMetadata(req.GetMetadata())
	if err != nil {
		return err
	}
	t := connector.Turn{
		TenantID: req.GetTenantId(), SessionID: req.GetSessionId(), TurnID: req.GetTurnId(),
		AgentID: req.GetAgentId(), Text: req.GetText(), Metadata: md,
		ReceivedTextBytes: int(req.GetReceivedTextBytes()), // checkTurn bounded it
	}
	fromPBVoice(req, &t) // checkTurn checked it
	if c := req.GetCaller(); c != nil {
		t.UserID = c.GetUserId()
	}
	return s.handoff.Run(func() error {
		return s.status(ctx, "HandleTurn", s.router.HandleTurn(ctx, t, &sink{stream: stream}))
	})
}

// ReleaseSession implements pb.ConnectorServer.
func (s *Server) ReleaseSession(ctx context.Context, req *pb.ReleaseSessionRequest) (*pb.ReleaseSessionResponse, error) {
	if err := checkSession(req.GetTenantId(), req.GetSessionId()); err != nil {
		return nil, err
	}
	released, agentID, err := s.router.Release(ctx, req.GetTenantId(), req.GetSessionId())
	if err != nil {
		return nil, s.status(ctx, "ReleaseSession", err)
	}
	return &pb.ReleaseSessionResponse{Released: released, AgentId: agentID}, nil
}

// GetSession implements pb.ConnectorServer.
func (s *Server) GetSession(ctx context.Context, req *pb.GetSessionRequest) (*pb.GetSessionResponse, error) {
	if err := checkSession(req.GetTenantId(), req.GetSessionId()); err != nil {
		return nil, err
	}
	info, err := s.router.Get(ctx, req.GetTenantId(), req.GetSessionId())
	if err != nil {
		return nil, s.status(ctx, "GetSession", err)
	}
	if !info.Held {
		return &pb.GetSessionResponse{}, nil
	}
	return &pb.GetSessionResponse{
		Held: true, AgentId: info.Hold.AgentID, AgentName: info.AgentName,
		TaskId: info.Hold.TaskID, ContextId: info.Hold.ContextID,
		ExpiresAt: timestamppb.New(info.Hold.ExpiresAt),
	}, nil
}

// ListAgents implements pb.ConnectorServer.
func (s *Server) ListAgents(ctx context.Context, req *pb.ListAgentsRequest) (*pb.ListAgentsResponse, error) {
	if err := ruleID.check("tenant_id", req.GetTenantId()); err != nil {
		return nil, err
	}
	agents, err := s.router.Agents(ctx, req.GetTenantId())
	if err != nil && !errors.Is(err, connector.ErrNotFound) { // a tenant id that is no UUID: no agents
		return nil, s.status(ctx, "ListAgents", err)
	}
	out := &pb.ListAgentsResponse{Agents: make([]*pb.Agent, 0, len(agents))}
	for _, a := range agents {
		pa := toPBAgent(a)
		pa.VoiceExtension = a.VoiceActive(s.voice)
		out.Agents = append(out.Agents, pa)
	}
	return out, nil
}

// status is the one table from errors to gRPC status codes. No status carries an error's own
// text: store and driver errors get a fixed message, and the log keeps the detail (with the
// trace id the context carries). Unknown errors are logged here, once, and answered as INTERNAL.
func (s *Server) status(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	// Over a cap: refused at once, never queued. The message names the cap and its value, and
	// nothing else (connector.RefusedError, from internal/admission).
	var refused *connector.RefusedError
	if errors.As(err, &refused) {
		return status.Error(codes.ResourceExhausted, refused.Error())
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "canceled by the caller")
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "deadline exceeded")
	case errors.Is(err, connector.ErrInvalid):
		// The store refused a value the checks above let through: a gap in them, worth a log
		// line, never the store's words.
		s.log.WarnContext(ctx, "rpc refused by the store", slog.String("rpc", op), slog.Any("error", err))
		return status.Error(codes.InvalidArgument, "request: a field holds a value the connector cannot store")
	case errors.Is(err, connector.ErrNotFound):
		return status.Error(codes.NotFound, "agent not found in this tenant")
	case errors.Is(err, connector.ErrAgentDisabled):
		return status.Error(codes.FailedPrecondition, "agent is disabled")
	case errors.Is(err, connector.ErrCredentialsMissing):
		return status.Error(codes.FailedPrecondition, "agent requires credentials and none are set")
	case errors.Is(err, connector.ErrCutOff):
		return status.Error(codes.Unavailable, "connector cannot reach its database; retry on another replica")
	case errors.Is(err, connector.ErrUnavailable):
		return status.Error(codes.Unavailable, "connector database unavailable; retry")
	case errors.Is(err, connector.ErrNoInputUnsupported):
		return noInputUnsupported()
	}
	s.log.ErrorContext(ctx, "rpc failed", slog.String("rpc", op), slog.Any("error", err))
	return status.Error(codes.Internal, "internal error")
}

// sink streams a turn's events to the gRPC client.
type sink struct {
	stream pb.Connector_HandleTurnServer
}

func (k *sink) Started(a *connector.Agent, held bool, taskID string) error {
	return k.stream.Send(&pb.TurnEvent{Event: &pb.TurnEvent_Started{Started: &pb.TurnStarted{
		AgentId: a.ID, AgentName: a.Name, Held: held, TaskId: taskID,
	}}})
}

func (k *sink) Event(e connector.TurnEvent) error {
	switch e.Kind {
	case connector.TextEvent:
		return k.stream.Send(&pb.TurnEvent{Event: &pb.TurnEvent_TextDelta{TextDelta: &pb.TextDelta{Text: e.Text}}})
	case connector.StatusEvent:
		return k.stream.Send(&pb.TurnEvent{Event: &pb.TurnEvent_Status{Status: &pb.StatusUpdate{State: e.State, Text: e.Text}}})
	case connector.SpeechEvent:
		return k.stream.Send(&pb.TurnEvent{Event: &pb.TurnEvent_Speech{Speech: &pb.SpeechPolicy{BargeIn: e.BargeIn}}})
	}
	return nil
}

func (k *sink) Final(f connector.TurnFinal) error {
	out := &pb.TurnFinal{
		Outcome: toPBOutcome(f.Outcome), Text: f.Text, TaskId: f.TaskID, ContextId: f.ContextID,
		WithheldTextBytes: uint64(f.WithheldTextBytes),
	}
	if f.Err != nil {
		out.Error = &pb.TurnError{Code: f.Err.Code, Message: f.Err.Message}
	}
	if len(f.Metadata) > 0 {
		if st, err := structpb.NewStruct(f.Metadata); err == nil {
			out.Metadata = st
		}
	}
	if !f.HoldExpiresAt.IsZero() {
		out.Hold = &pb.Hold{ExpiresAt: timestamppb.New(f.HoldExpiresAt)}
	}
	out.Finish, out.Expect = toPBFinish(f.Finish), toPBExpect(f.Expect)
	return k.stream.Send(&pb.TurnEvent{Event: &pb.TurnEvent_Final{Final: out}})
}

func toPBOutcome(o connector.Outcome) pb.Outcome {
	switch o {
	case connector.OutcomeCompleted:
		return pb.Outcome_OUTCOME_COMPLETED
	case connector.OutcomeInputRequired:
		return pb.Outcome_OUTCOME_INPUT_REQUIRED
	case connector.OutcomeHandback:
		return pb.Outcome_OUTCOME_HANDBACK
	case connector.OutcomeFailed:
		return pb.Outcome_OUTCOME_FAILED
	case connector.OutcomeCanceled:
		return pb.Outcome_OUTCOME_CANCELED
	case connector.OutcomeNoAgent:
		return pb.Outcome_OUTCOME_NO_AGENT
	}
	return pb.Outcome_OUTCOME_UNSPECIFIED
}

func toPBAgent(a connector.Agent) *pb.Agent {
	active := a.ActiveInterface() // the interface turns use
	out := &pb.Agent{AgentId: a.ID, Name: a.Name, Description: a.Description, Streaming: a.Streaming,
		EndpointUrl: active.URL, ProtocolVersion: active.ProtocolVersion, EndpointBinding: active.Binding, OnFallback: a.OnFallback}
	if out.EndpointBinding == "" {
		out.EndpointBinding = "JSONRPC" // profiles keep "" for JSON-RPC
	}
	for _, sk := range a.Skills {
		ps := &pb.Skill{Id: sk.ID, Name: sk.Name, Description: sk.Description, Tags: sk.Tags, Examples: sk.Examples}
		if len(sk.InputSchema) > 0 {
			var m map[string]any
			if json.Unmarshal(sk.InputSchema, &m) == nil {
				if st, err := structpb.NewStruct(m); err == nil {
					ps.InputSchema = st
				}
			}
		}
		out.Skills = append(out.Skills, ps)
	}
	return out
}
