//go:build e2eotel

package e2eotel

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
	"testing"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/telemetry"
)

// engineService is the service.name of the dialog engine this test plays.
const engineService = "e2e-dialog-engine"

// engineSpan is the engine's own span around the turn; the gRPC client span is its child.
const engineSpan = "engine.turn"

// env returns the variable or skips: without the script's stack there is nothing to check.
func env(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		if os.Getenv("CI") == "true" {
			// .ci/run runs this only through make e2e-otel, which sets every variable.
			t.Fatalf("%s is not set: run make e2e-otel", name)
		}
		t.Skipf("%s is not set: run make e2e-otel", name)
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
	got, err := io.ReadAll(resp.Body)
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

// TestEngineTurn registers a tenant and the demo agent (with its API key) through the console
// API, then sends one turn as the dialog engine would: from its own span, through a gRPC client
// instrumented with otelgrpc, exporting to the same collector from the same OTEL_* variables.
func TestEngineTurn(t *testing.T) {
	console := env(t, "E2E_CONSOLE_URL")
	admin := env(t, "E2E_ADMIN_TOKEN")
	grpcAddr := env(t, "E2E_GRPC_ADDR")
	cardURL := env(t, "E2E_CARD_URL")
	apiKey := env(t, "E2E_API_KEY")
	userText := env(t, "E2E_USER_TEXT")
	state := env(t, "E2E_STATE")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	var tenant struct{ ID, Token string }
	if err := postJSON(ctx, console+"/v1/tenants", admin, map[string]string{"name": "e2e-otel"}, &tenant); err != nil {
		t.Fatal(err)
	}
	var agent struct{ ID string }
	if err := postJSON(ctx, console+"/v1/agents", tenant.Token,
		map[string]string{"cardUrl": cardURL, "apiKey": apiKey}, &agent); err != nil {
		t.Fatal(err)
	}

	// A card URL the agent answers 404: the failed fetch's span attributes are documented too.
	var refused map[string]any
	err := postJSON(ctx, console+"/v1/agents/validate", tenant.Token,
		map[string]string{"cardUrl": strings.TrimSuffix(cardURL, ".json") + "-missing.json"}, &refused)
	if err == nil || !strings.Contains(err.Error(), "422") {
		t.Fatalf("validating a missing card: %v, want a 422", err)
	}

	tel, err := telemetry.Setup(ctx, telemetry.Options{ServiceName: engineService})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStatsHandler(otelgrpc.NewClientHandler(
			otelgrpc.WithTracerProvider(tel.TracerProvider),
			otelgrpc.WithMeterProvider(tel.MeterProvider),
			otelgrpc.WithPropagators(tel.Propagator))))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	turnCtx, span := tel.TracerProvider.Tracer("e2e-dialog-engine").Start(ctx, engineSpan,
		trace.WithSpanKind(trace.SpanKindInternal))
	text, final, err := turn(turnCtx, pb.NewConnectorClient(conn), &pb.HandleTurnRequest{
		TenantId: tenant.ID, SessionId: "e2e-otel-session", TurnId: uuid.NewString(),
		AgentId: agent.ID, Text: userText})
	span.End()
	traceID := span.SpanContext().TraceID().String()
	// Flush the engine's spans before anything else is judged.
	if err := tel.Shutdown(context.WithoutCancel(ctx)); err != nil {
		t.Errorf("engine telemetry shutdown: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	// The demo agent repeats the utterance: the marker really went through the connector both
	// ways, so its absence from the collector's output and the logs means something.
	if final.GetOutcome() != pb.Outcome_OUTCOME_COMPLETED || !strings.Contains(text, os.Getenv("E2E_USER_MARKER")) {
		t.Fatalf("turn ended %v with text %q (error %v), want COMPLETED repeating the user",
			final.GetOutcome(), text, final.GetError())
	}
	st := fmt.Sprintf("E2E_TRACE_ID=%s\nE2E_TENANT_TOKEN=%s\n", traceID, tenant.Token)
	if err := os.WriteFile(state, []byte(st), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("turn COMPLETED in trace %s", traceID)
}

// turn runs one HandleTurn stream to its end: the streamed text and the Final.
func turn(ctx context.Context, c pb.ConnectorClient, req *pb.HandleTurnRequest) (string, *pb.TurnFinal, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	stream, err := c.HandleTurn(ctx, req)
	if err != nil {
		return "", nil, fmt.Errorf("HandleTurn: %w", err)
	}
	var text strings.Builder
	var final *pb.TurnFinal
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", nil, fmt.Errorf("HandleTurn stream: %w", err)
		}
		text.WriteString(ev.GetTextDelta().GetText())
		if f := ev.GetFinal(); f != nil {
			final = f
			text.WriteString(f.GetText())
		}
	}
	if final == nil {
		return "", nil, errors.New("HandleTurn: the stream ended without a Final")
	}
	return text.String(), final, nil
}
