package a2aclient

import (
	"net/http"
	"testing"

	"github.com/a2a-connector/a2a-connector/internal/a2a"
)

func TestRestRouteAndURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		base, tenant string
		op           Op
		task         string
		wantMethod   string
		wantURL      string
	}{
		{"https://a.example/a2a", "", OpSendMessage, "", http.MethodPost, "https://a.example/a2a/message:send"},
		{"https://a.example/a2a/", "", OpStreamMessage, "", http.MethodPost, "https://a.example/a2a/message:stream"},
		{"https://a.example", "acme", OpStreamMessage, "", http.MethodPost, "https://a.example/acme/message:stream"},
		{"https://a.example/a2a", "", OpGetTask, "t-1", http.MethodGet, "https://a.example/a2a/tasks/t-1"},
		// Ids and tenants are one path segment each, whatever they hold.
		{"https://a.example/a2a", "a/b c", OpCancelTask, "t/2?x", http.MethodPost, "https://a.example/a2a/a%2Fb%20c/tasks/t%2F2%3Fx:cancel"},
		{"https://a.example/a2a?key=v", "", OpSubscribeToTask, "t-3", http.MethodPost, "https://a.example/a2a/tasks/t-3:subscribe?key=v"},
	}
	for _, tt := range tests {
		method, path := restRoute(tt.op, tt.task)
		got, err := restURL(tt.base, tt.tenant, path)
		if err != nil || method != tt.wantMethod || got != tt.wantURL {
			t.Errorf("%s %q tenant %q: %s %s (%v), want %s %s", Method(WireV1, tt.op), tt.base, tt.tenant, method, got, err, tt.wantMethod, tt.wantURL)
		}
	}
}

func TestParseGoogleStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		wantOK     bool
		wantCode   int
	}{
		{"reason decides", `{"error":{"code":400,"status":"FAILED_PRECONDITION","message":"m","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"VERSION_NOT_SUPPORTED","domain":"a2a-protocol.org"}]}}`, true, a2a.CodeVersionNotSupported},
		{"status name without ErrorInfo", `{"error":{"code":404,"status":"NOT_FOUND","message":"no task"}}`, true, a2a.CodeTaskNotFound},
		{"bare status (an SSE error event)", `{"code":501,"status":"UNIMPLEMENTED","message":"x"}`, true, a2a.CodeMethodNotFound},
		{"unknown reason and status", `{"error":{"code":500,"status":"WEIRD","message":"x","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"NOPE"}]}}`, true, a2a.CodeInternalError},
		{"not a status", `{"error":"invalid api key"}`, false, 0},
		{"not JSON", `<html>`, false, 0},
	}
	for _, tt := range tests {
		e, ok := parseGoogleStatus("SendMessage", []byte(tt.body))
		if ok != tt.wantOK || (ok && (e.Code != tt.wantCode || e.Method != "SendMessage")) {
			t.Errorf("%s: %+v %v, want ok %v code %d", tt.name, e, ok, tt.wantOK, tt.wantCode)
		}
	}
}
