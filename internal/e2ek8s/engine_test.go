//go:build e2ek8s

package e2ek8s

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/grpcapi"
	"github.com/a2a-connector/a2a-connector/internal/telemetry"
)

// env returns the variable or skips: without the script's cluster there is nothing to check.
func env(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set: run make e2e-k8s", name)
		}
		t.Skipf("%s is not set: run make e2e-k8s", name)
	}
	return v
}

// postJSON posts body with a bearer token and decodes the JSON answer into out.
func postJSON(ctx context.Context, url, token string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode %s: %w", url, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("request %s: %w", url, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", url, err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("read %s: %w", url, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s: %s", url, resp.Status, got)
	}
	if err := json.Unmarshal(got, out); err != nil {
		return fmt.Errorf("decode %s: %w", url, err)
	}
	return nil
}

// state is what TestTurn leaves for TestTrickle and the script.
type state struct {
	TenantID string `json:"tenantId"`
	AgentID  string `json:"agentId"`
	TraceID  string `json:"traceId"`
	Chunks   int    `json:"chunks"`
}

// TestTurn registers a tenant and the demo agent through the console-api Service and sends one
// turn through the connector Service from a traced client, as the dialog engine would.
func TestTurn(t *testing.T) {
	console := env(t, "E2E_CONSOLE_URL")
	admin := env(t, "E2E_ADMIN_TOKEN")
	grpcAddr := env(t, "E2E_GRPC_ADDR")
	cardURL := env(t, "E2E_CARD_URL")
	apiKey := env(t, "E2E_API_KEY")
	marker := env(t, "E2E_USER_MARKER")
	statePath := env(t, "E2E_STATE")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	var tenant struct{ ID, Token string }
	if err := postJSON(ctx, console+"/v1/tenants", admin, map[string]string{"name": "e2e-k8s"}, &tenant); err != nil {
		t.Fatal(err)
	}
	var agent struct{ ID string }
	if err := postJSON(ctx, console+"/v1/agents", tenant.Token,
		map[string]string{"cardUrl": cardURL, "apiKey": apiKey}, &agent); err != nil {
		t.Fatal(err)
	}

	tel, err := telemetry.Setup(ctx, telemetry.Options{ServiceName: "e2e-k8s-dialog-engine"})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStatsHandler(otelgrpc.NewClientHandler(
			otelgrpc.WithTracerProvider(tel.TracerProvider),
			otelgrpc.WithPropagators(tel.Propagator))))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	turnCtx, span := tel.TracerProvider.Tracer("e2e-k8s").Start(ctx, "engine.turn")
	res, err := turn(turnCtx, pb.NewConnectorClient(conn), &pb.HandleTurnRequest{
		TenantId: tenant.ID, SessionId: "e2e-k8s-" + uuid.NewString()[:8], TurnId: uuid.NewString(),
		AgentId: agent.ID, Text: "Repeat after me: the cluster says " + marker})
	span.End()
	if err := tel.Shutdown(context.WithoutCancel(ctx)); err != nil {
		t.Errorf("engine telemetry shutdown: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.final.GetOutcome() != pb.Outcome_OUTCOME_COMPLETED || !strings.Contains(res.text, marker) {
		t.Fatalf("turn ended %v with text %q (error %v), want COMPLETED repeating the user",
			res.final.GetOutcome(), res.text, res.final.GetError())
	}
	st := state{TenantID: tenant.ID, AgentID: agent.ID, TraceID: span.SpanContext().TraceID().String(), Chunks: res.chunks}
	b, _ := json.Marshal(st)
	if err := os.WriteFile(statePath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("turn COMPLETED in %d streamed chunks, trace %s", res.chunks, st.TraceID)
}

// trickleReport is TestTrickle's account, written to E2E_TRICKLE_OUT for the script's table.
type trickleReport struct {
	Sent      int64            `json:"sent"`
	Completed int64            `json:"completed"`
	Failed    int64            `json:"failed"`
	Errors    map[string]int64 `json:"errors,omitempty"`
	Seconds   float64          `json:"seconds"`
}

// TestTrickle sends turns from a few workers, each on its own gRPC connection to the connector
// Service, until E2E_STOP_FILE exists. Each turn asks the demo agent's coach skill, whose reply
// streams in chunks over about a second, so turns are in flight whenever a pod stops.
func TestTrickle(t *testing.T) {
	grpcAddr := env(t, "E2E_GRPC_ADDR")
	statePath := env(t, "E2E_STATE")
	stopFile := env(t, "E2E_STOP_FILE")
	out := env(t, "E2E_TRICKLE_OUT")
	b, err := os.ReadFile(statePath)
	if err != nil {
		t.Fatal(err)
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()

	const workers = 4
	var sent, completed, failed atomic.Int64
	var mu sync.Mutex
	errs := map[string]int64{}
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			client := pb.NewConnectorClient(conn)
			for i := 0; ctx.Err() == nil; i++ {
				if _, err := os.Stat(stopFile); err == nil {
					return
				}
				sent.Add(1)
				res, err := turn(ctx, client, &pb.HandleTurnRequest{
					TenantId: st.TenantID, SessionId: fmt.Sprintf("trickle-%d-%d-%s", w, i, uuid.NewString()[:8]),
					TurnId: uuid.NewString(), AgentId: st.AgentID, Text: "coach me in basketball"})
				if err == nil && res.final.GetOutcome() != pb.Outcome_OUTCOME_COMPLETED {
					err = fmt.Errorf("outcome %v: %v", res.final.GetOutcome(), res.final.GetError())
				}
				if err != nil {
					failed.Add(1)
					key := err.Error()
					if s, ok := status.FromError(errors.Unwrap(err)); ok {
						key = s.Code().String() + ": " + s.Message()
					}
					mu.Lock()
					errs[key]++
					mu.Unlock()
					t.Logf("%s turn failed: %v", time.Now().Format("15:04:05.000"), err)
				} else {
					completed.Add(1)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	rep := trickleReport{Sent: sent.Load(), Completed: completed.Load(), Failed: failed.Load(), Errors: errs,
		Seconds: time.Since(start).Seconds()}
	b, _ = json.Marshal(rep)
	if err := os.WriteFile(out, b, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("trickle: %s", b)
	if rep.Failed > 0 || rep.Completed == 0 {
		t.Fatalf("%d of %d turns failed (%v)", rep.Failed, rep.Sent, errs)
	}
}

type turnResult struct {
	text   string
	chunks int
	final  *pb.TurnFinal
}

// turn runs one HandleTurn stream to its end.
func turn(ctx context.Context, c pb.ConnectorClient, req *pb.HandleTurnRequest) (turnResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	// As a dialog engine should: the connector admits or refuses the turn as its stream opens.
	ctx = metadata.AppendToOutgoingContext(ctx, grpcapi.TenantMetadataKey, req.GetTenantId())
	stream, err := c.HandleTurn(ctx, req)
	if err != nil {
		return turnResult{}, fmt.Errorf("HandleTurn: %w", err)
	}
	var r turnResult
	var text strings.Builder
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return turnResult{}, fmt.Errorf("HandleTurn stream: %w", err)
		}
		if d := ev.GetTextDelta().GetText(); d != "" {
			text.WriteString(d)
			r.chunks++
		}
		if f := ev.GetFinal(); f != nil {
			r.final = f
			text.WriteString(f.GetText())
		}
	}
	if r.final == nil {
		return turnResult{}, errors.New("HandleTurn: the stream ended without a Final")
	}
	r.text = text.String()
	return r, nil
}
