package grpcapi

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// Health is grpc-go's health service whose Watch streams can be ended. GracefulStop waits for
// every open RPC, and a health Watch (what gRPC clients with client-side health checking keep
// open on every connection) never ends by itself: without EndWatches each such client would hold
// a draining connector up to its shutdown timeout after the last turn finished.
type Health struct {
	*health.Server
	ended context.Context
	end   context.CancelFunc
}

// NewHealth returns a Health whose statuses are all SERVICE_UNKNOWN until set.
func NewHealth() *Health {
	ctx, cancel := context.WithCancel(context.Background())
	return &Health{Server: health.NewServer(), ended: ctx, end: cancel}
}

// EndWatches ends every open Watch stream, and any opened later at once, with UNAVAILABLE (the
// client then watches elsewhere). Call it when the server stops accepting, after the statuses
// said NOT_SERVING for long enough.
func (h *Health) EndWatches() { h.end() }

// Watch implements healthpb.HealthServer.
func (h *Health) Watch(req *healthpb.HealthCheckRequest, stream healthpb.Health_WatchServer) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	stop := context.AfterFunc(h.ended, cancel)
	defer stop()
	err := h.Server.Watch(req, &watchStream{Health_WatchServer: stream, ctx: ctx})
	if h.ended.Err() != nil && stream.Context().Err() == nil {
		return status.Error(codes.Unavailable, "the server is shutting down")
	}
	return err
}

// watchStream is a Watch stream whose context also ends with EndWatches.
type watchStream struct {
	healthpb.Health_WatchServer
	ctx context.Context
}

func (s *watchStream) Context() context.Context { return s.ctx }
