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
// names its tenant there is refused over a cap at the stream's start, before it costs the
// connector a goroutine or a decode.
const TenantMetadataKey = "a2ac-tenant-id"

// Admission refuses turns over a cap before they cost anything (internal/admission's Limiter
// is it). The Router still takes the turn's places; this is only a look.
type Admission interface {
	// Check returns a *connector.RefusedError when a turn of the tenant would be refused now.
	// It must be cheap and never block: TapHandle calls it on a connection's reading goroutine.
	Check(ctx context.Context, tenantID string) error
}

// TapHandle is the server's grpc.InTapHandle. grpc-go runs it on the connection's reading
// goroutine when a stream's headers arrive, before it creates the stream, its goroutine, or
// reads the request. A HandleTurn whose tenant, named in TenantMetadataKey, is at its cap (or
// the replica at its own) is refused there with RESOURCE_EXHAUSTED: under a burst of one
// tenant's streams, each refusal then costs a look at two counters and a header frame, and the
// other tenants' turns keep the CPU. Every other stream, and a turn without the key, goes on.
func (s *Server) TapHandle(ctx context.Context, info *tap.Info) (context.Context, error) {
	if s.admit == nil || info.FullMethodName != pb.Connector_HandleTurn_FullMethodName {
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
	if err := s.admit.Check(ctx, named[0]); err != nil {
		return ctx, s.refuse(ctx, named[0], true, err)
	}
	return ctx, nil
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
