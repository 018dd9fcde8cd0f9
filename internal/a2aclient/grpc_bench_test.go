package a2aclient

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/a2a"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc"
)

// benchGRPCAgent answers SendStreamingMessage as the loadtest's stub agent does: a task, three
// text chunks, the completed status.
type benchGRPCAgent struct {
	a2apb.UnimplementedA2AServiceServer
}

func (benchGRPCAgent) SendStreamingMessage(_ *a2apb.SendMessageRequest, st grpc.ServerStreamingServer[a2apb.StreamResponse]) error {
	for _, ev := range benchReply() {
		if err := st.Send(ev); err != nil {
			return err
		}
	}
	return nil
}

// benchReply is the stub agent's answer: a task, three text chunks of one artifact, the
// completed status.
func benchReply() []*a2apb.StreamResponse {
	evs := []*a2apb.StreamResponse{{Payload: &a2apb.StreamResponse_Task{Task: &a2apb.Task{Id: "t", ContextId: "c",
		Status: &a2apb.TaskStatus{State: a2apb.TaskState_TASK_STATE_SUBMITTED}}}}}
	for i := range 3 {
		evs = append(evs, &a2apb.StreamResponse{Payload: &a2apb.StreamResponse_ArtifactUpdate{ArtifactUpdate: &a2apb.TaskArtifactUpdateEvent{
			TaskId: "t", ContextId: "c", Append: i > 0, LastChunk: i == 2,
			Artifact: &a2apb.Artifact{ArtifactId: "reply", Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: "some words of the reply "}}}},
		}}})
	}
	evs = append(evs, &a2apb.StreamResponse{Payload: &a2apb.StreamResponse_StatusUpdate{StatusUpdate: &a2apb.TaskStatusUpdateEvent{
		TaskId: "t", ContextId: "c", Status: &a2apb.TaskStatus{State: a2apb.TaskState_TASK_STATE_COMPLETED}}}})
	return evs
}

// BenchmarkGRPCStream is one streaming turn (five events) over the gRPC binding against a
// grpc-go agent on loopback, client and agent in this process: time, allocations and
// goroutines started per turn (the agent's handler is one of them).
func BenchmarkGRPCStream(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	gs := grpc.NewServer()
	a2apb.RegisterA2AServiceServer(gs, benchGRPCAgent{})
	go gs.Serve(ln) //nolint:errcheck // ends with Stop
	defer gs.Stop()

	var d net.Dialer
	c := NewClient(&http.Client{}, ClientOptions{GRPC: GRPCOptions{
		Dial:     func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) },
		CheckURL: func(*url.URL) error { return nil },
	}})
	defer c.Close()
	ep := Endpoint{URL: "http://" + ln.Addr().String(), Wire: WireV1, Binding: BindingGRPC}
	params := &a2a.SendMessageRequest{Message: a2a.Message{Role: a2a.RoleUser, MessageID: "m", ContextID: "c", Parts: a2a.Parts{a2a.TextPart("hello")}}}
	so := StreamOptions{FirstEventTimeout: 20 * time.Second, IdleTimeout: 20 * time.Second}
	turn := func() {
		s, err := c.SendStreamingMessage(b.Context(), ep, params, so)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			_, err := s.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		s.Close()
		if n != 5 {
			b.Fatalf("%d events, want 5", n)
		}
	}
	turn() // connect
	sample := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(sample)
	before := sample[0].Value.Uint64()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		turn()
	}
	b.StopTimer()
	metrics.Read(sample)
	b.ReportMetric(float64(sample[0].Value.Uint64()-before)/float64(b.N), "goroutines/op")
}
