package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"

	connector "github.com/a2a-connector/a2a-connector"
)

// These errors are hard to provoke against a live server on demand (a backend killed between
// two statements, a server shutting down), so classify is also tested on its own.
func TestClassify(t *testing.T) {
	t.Parallel()
	pg := func(code string) error { return fmt.Errorf("exec: %w", &pgconn.PgError{Code: code}) }
	bug := errors.New("cannot scan")
	tests := []struct {
		name string
		err  error
		want error // sentinel; nil: returned unchanged
	}{
		{name: "unique_violation_is_conflict", err: pg("23505"), want: connector.ErrConflict},
		{name: "foreign_key_violation_is_not_found", err: pg("23503"), want: connector.ErrNotFound},
		{name: "not_null_violation_is_invalid", err: pg("23502"), want: connector.ErrInvalid},
		{name: "check_violation_is_invalid", err: pg("23514"), want: connector.ErrInvalid},
		{name: "invalid_json_is_invalid", err: pg("22P02"), want: connector.ErrInvalid},
		{name: "connection_failure_is_unavailable", err: pg("08006"), want: connector.ErrUnavailable},
		{name: "admin_shutdown_is_unavailable", err: pg("57P01"), want: connector.ErrUnavailable},
		{name: "starting_up_is_unavailable", err: pg("57P03"), want: connector.ErrUnavailable},
		{name: "read_only_is_unavailable", err: pg("25006"), want: connector.ErrUnavailable},
		{name: "too_many_connections_is_unavailable", err: pg("53300"), want: connector.ErrUnavailable},
		{name: "syntax_error_is_a_bug", err: pg("42601")},
		{name: "eof_is_unavailable", err: fmt.Errorf("read: %w", io.ErrUnexpectedEOF), want: connector.ErrUnavailable},
		{name: "net_error_is_unavailable", err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, want: connector.ErrUnavailable},
		{name: "closed_pool_is_unavailable", err: puddle.ErrClosedPool, want: connector.ErrUnavailable},
		{name: "canceled_by_caller_stays_canceled", err: fmt.Errorf("query: %w", context.Canceled)},
		{name: "deadline_stays_deadline", err: fmt.Errorf("query: %w", context.DeadlineExceeded)},
		{name: "other_errors_unchanged", err: bug},
	}
	sentinels := []error{connector.ErrConflict, connector.ErrNotFound, connector.ErrInvalid, connector.ErrUnavailable}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := classify(tt.err)
			if !errors.Is(got, tt.err) {
				t.Errorf("classify(%v) = %v; does not wrap the original", tt.err, got)
			}
			for _, s := range sentinels {
				if errors.Is(got, s) != (s == tt.want) {
					t.Errorf("classify(%v) = %v; errors.Is(%v) = %v, want %v", tt.err, got, s, errors.Is(got, s), s == tt.want)
				}
			}
		})
	}
	if classify(nil) != nil {
		t.Error("classify(nil) != nil")
	}
}

// TestProfileMapping_covers_every_field fails when connector.CardProfile or connector.Skill
// gains a field: profileJSON must carry it, or it would be lost on the way through Postgres.
func TestProfileMapping_covers_every_field(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		domain, stored reflect.Type
	}{
		{reflect.TypeFor[connector.CardProfile](), reflect.TypeFor[profileJSON]()},
		{reflect.TypeFor[connector.Skill](), reflect.TypeFor[skillJSON]()},
		{reflect.TypeFor[connector.Interface](), reflect.TypeFor[interfaceJSON]()},
	} {
		for i := range c.domain.NumField() {
			name := c.domain.Field(i).Name
			if _, ok := c.stored.FieldByName(name); !ok {
				t.Errorf("%s.%s has no counterpart in %s: map it in encodeProfile/decodeProfile", c.domain, name, c.stored)
			}
		}
	}
}

// TestProfile_before_1_0_reads_as_a_0_x_profile: revisions stored before the chosen interface's
// tenant and fallback existed read back without them.
func TestProfile_before_1_0_reads_as_a_0_x_profile(t *testing.T) {
	t.Parallel()
	got, err := decodeProfile([]byte(`{"name":"n","protocolVersion":"0.2.5","endpointUrl":"https://e","streaming":true,"skills":null,"apiKeyRequired":false,"apiKeyHeaders":null,"extensions":null}`))
	if err != nil {
		t.Fatal(err)
	}
	want := connector.CardProfile{Name: "n", ProtocolVersion: "0.2.5", EndpointURL: "https://e", Streaming: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
}

func TestProfile_round_trips(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    connector.CardProfile
	}{
		{name: "empty", p: connector.CardProfile{}},
		{name: "empty_not_nil_slices", p: connector.CardProfile{Skills: []connector.Skill{}, APIKeyHeaders: []string{}, Extensions: []string{}}},
		{name: "full", p: connector.CardProfile{
			Name: "n", Description: "d", Version: "v", ProtocolVersion: "1.0", EndpointURL: "https://e",
			EndpointTenant: "acme", Fallback: &connector.Interface{URL: "https://e/v03", ProtocolVersion: "0.3", Tenant: "t"},
			Streaming: true, APIKeyRequired: true, APIKeyHeaders: []string{"X-API-KEY"}, Extensions: []string{"urn:x"},
			Skills: []connector.Skill{{
				ID: "s", Name: "S", Description: "D", Tags: []string{"t"}, Examples: []string{"e"},
				InputSchema: json.RawMessage(`{ "z": 1, "a": [2] }`),
			}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := encodeProfile(tt.p)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeProfile(b)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.p, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

// What may run again on a fresh connection after a failure: only what a restart or failover
// does to a connection, and a failure after the statement was sent only for a statement that
// may run twice. These errors are hard to provoke on demand (a reset after the query was sent),
// so the rule is tested on its own too; restart_test.go provokes the common ones for real.
func TestRetrySafetyOf(t *testing.T) {
	t.Parallel()
	pg := func(code string) error { return fmt.Errorf("exec: %w", &pgconn.PgError{Code: code, Severity: "FATAL"}) }
	tests := []struct {
		name string
		err  error
		want retrySafety
	}{
		{name: "admin_shutdown_did_not_run", err: pg("57P01"), want: retryAlways},
		{name: "crash_shutdown_did_not_run", err: pg("57P02"), want: retryAlways},
		{name: "cannot_connect_now_did_not_run", err: pg("57P03"), want: retryAlways},
		{name: "read_only_did_not_run", err: pg("25006"), want: retryAlways},
		{name: "unique_violation_is_the_statement", err: pg("23505")},
		{name: "syntax_error_is_the_statement", err: pg("42601")},
		{name: "refused_connection_did_not_run", err: &pgconn.ConnectError{Config: &pgconn.Config{}}, want: retryAlways},
		{name: "reset_before_sending_did_not_run", err: safeToRetryErr{errors.New("write: broken pipe")}, want: retryAlways},
		{name: "reset_after_sending_may_have_run", err: fmt.Errorf("receive: %w", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}), want: retryIfIdempotent},
		{name: "eof_after_sending_may_have_run", err: fmt.Errorf("receive: %w", io.ErrUnexpectedEOF), want: retryIfIdempotent},
		{name: "timeout_is_not_retried", err: timeoutErr{}},
		{name: "deadline_is_not_retried", err: fmt.Errorf("query: %w", context.DeadlineExceeded)},
		{name: "canceled_is_not_retried", err: fmt.Errorf("query: %w", context.Canceled)},
		{name: "closed_pool_is_not_retried", err: puddle.ErrClosedPool},
		{name: "nil_is_not_retried", err: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := retrySafetyOf(tt.err); got != tt.want {
				t.Errorf("retrySafetyOf(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

// safeToRetryErr is what pgconn returns when nothing was written to the server.
type safeToRetryErr struct{ error }

func (safeToRetryErr) SafeToRetry() bool { return true }

// timeoutErr is a net.Error that timed out: the statement may still be running.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }
