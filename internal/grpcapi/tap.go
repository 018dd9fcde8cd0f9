package grpcapi

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	connector "github.com/a2a-connector/a2a-connector"
	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
)

// TenantMetadataKey is the gRPC request metadata key in which a dialog engine may name the
// tenant of a HandleTurn, the same id as its tenant_id (see connector.proto). A turn that
// names its tenant there is admitted, or refused over a cap, at the stream's start, before it
// costs the connector a goroutine or a decode.
const TenantMetadataKey = "a2ac-tenant-id"

// Admission admits turns under the tenant's and the replica's caps (internal/admission's
// Limiter is it), before they cost anything.
type Admission interface {
	// Admit takes a turn's places, or refuses it with a *connector.RefusedError. The returned
	// context carries them to the Router; release gives them back, exactly once. It must be
	// cheap and never block: TapHandle calls it on a connection's reading goroutine.
	Admit(ctx context.Context, tenantID string) (turnCtx context.Context, release func(), err error)
}

// TapHandle is the server's grpc.InTapHandle. grpc-go runs it on the connection's reading
// goroutine when a stream's headers arrive, before it creates the stream's goroutine or reads
// the request. A HandleTurn that names its tenant in TenantMetadataKey is admitted there: over
// the tenant's cap (or the replica's) it is refused with RESOURCE_EXHAUSTED at once, and under
// them it takes its places then, so that a burst of streams is counted as it arrives, not once
// each has been decoded. Under a burst of one tenant's streams each refusal then costs a few
// counters and a header frame, and the other tenants' turns keep the CPU. Every other stream,
// and a turn without the key, goes on as it came.
func (s *Server) TapHandle(ctx context.Context, info *tap.Info) (context.Context, error) {
	if s.admission == nil || info.FullMethodName != pb.Connector_HandleTurn_FullMethodName {
		return ctx, nil
	}
	named := info.Header[TenantMetadataKey] // grpc-go lowercases the keys
	switch len(named) {
	case 0:
		return ctx, nil
	case 1:
	default:
		return ctx, errTenantMetadataTwice
	}
	turnCtx, release, err := s.admission.Admit(ctx, named[0])
	if err != nil {
		return ctx, s.refuse(ctx, named[0], true, err)
	}
	a := &admitted{release: release}
	// The stream holds the places until HandleTurn claims them. If it never does (the client
	// left, the request did not decode), they go back when the stream ends: grpc-go cancels
	// every stream's context then.
	a.stop = context.AfterFunc(ctx, a.drop)
	return context.WithValue(turnCtx, admittedKey{}, a), nil
}

// admitted is a turn's places taken at its stream's start: released once, by HandleTurn after
// the turn or, if HandleTurn never claims them, when the stream ends.
type admitted struct {
	claimed atomic.Bool
	release func()
	stop    func() bool
}

type admittedKey struct{}

func (a *admitted) drop() {
	if a.claimed.CompareAndSwap(false, true) {
		a.release()
	}
}

// claim hands the places to the caller, who releases them; false when the stream has ended
// and they went back.
func (a *admitted) claim() bool {
	if !a.claimed.CompareAndSwap(false, true) {
		return false
	}
	a.stop()
	return true
}

// admit returns the context and the release of a turn of tenantID: the places its stream took
// at its start, or, for a turn that did not name its tenant in its metadata, places taken now.
func (s *Server) admit(ctx context.Context, tenantID string) (context.Context, func(), error) {
	if a, ok := ctx.Value(admittedKey{}).(*admitted); ok {
		if !a.claim() {
			return ctx, nil, status.Error(codes.Canceled, "canceled by the caller")
		}
		return ctx, a.release, nil
	}
	if s.admission == nil {
		return ctx, func() {}, nil
	}
	turnCtx, release, err := s.admission.Admit(ctx, tenantID)
	if err != nil {
		return ctx, nil, s.refuse(ctx, tenantID, false, err)
	}
	return turnCtx, release, nil
}

// The INVALID_ARGUMENTs of the tenant metadata, on tenant_id like the edge's other checks.
var (
	errTenantMetadataTwice = invalid("tenant_id", "named more than once in the %s request metadata", TenantMetadataKey)
	errTenantMismatch      = invalid("tenant_id", "differs from the tenant named in the %s request metadata", TenantMetadataKey)
)

// checkTenantMetadata refuses a turn whose request metadata names another tenant than its
// tenant_id: the metadata decided its admission, so the two must agree.
func checkTenantMetadata(ctx context.Context, tenantID string) error {
	md, _ := metadata.FromIncomingContext(ctx)
	switch named := md[TenantMetadataKey]; {
	case len(named) == 0:
		return nil
	case len(named) > 1:
		return errTenantMetadataTwice
	case named[0] != tenantID:
		return errTenantMismatch
	}
	return nil
}

// refuse answers a turn Admission refused, and notes it in the log.
func (s *Server) refuse(ctx context.Context, tenantID string, atStart bool, err error) error {
	var refused *connector.RefusedError
	if !errors.As(err, &refused) {
		return s.status(ctx, "HandleTurn", err)
	}
	s.refusals.note(ctx, tenantID, refused, atStart)
	return status.Error(codes.ResourceExhausted, refused.Error())
}

// refusalLogEvery is how often at most the log says that turns were refused.
const refusalLogEvery = time.Second

// refusalLog logs refused turns, at most once per refusalLogEvery with the count since its last
// line: under a burst, a line per refusal would cost more than the refusal itself, and flood
// the log. Every refusal counts in a2ac.admission.refused.
type refusalLog struct {
	log   *slog.Logger
	now   func() time.Time // nil: time.Now
	next  atomic.Int64     // unix nanoseconds before which no line is written
	since atomic.Int64     // refusals not yet in a line
}

func (r *refusalLog) note(ctx context.Context, tenantID string, e *connector.RefusedError, atStart bool) {
	r.since.Add(1)
	now := time.Now().UnixNano()
	if r.now != nil {
		now = r.now().UnixNano()
	}
	next := r.next.Load()
	if now < next || !r.next.CompareAndSwap(next, now+int64(refusalLogEvery)) {
		return
	}
	at := "after decoding"
	if atStart {
		at = "at the stream's start"
	}
	// The last refusal's tenant and cap, and how many there were since the last line.
	r.log.LogAttrs(ctx, slog.LevelInfo, "turns refused over a cap", slog.Int64("refused", r.since.Swap(0)),
		slog.String("tenant_id", tenantID), slog.String("cap", string(e.Cap)), slog.Int("limit", e.Limit),
		slog.String("refused_at", at))
}
