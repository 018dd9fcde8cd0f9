package a2aclient

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/a2a-connector/a2a-connector/internal/a2a"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-connector/a2a-connector/internal/a2a/a2av0"
)

func TestDecodeResponse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		data     string
		want     a2a.Event
		wantRPC  *a2a.RPCError
		wantKind string
	}{
		{
			name: "result",
			data: `{"jsonrpc":"2.0","id":"req-1","result":{"kind":"message","messageId":"m","role":"agent","parts":[]}}`,
			want: &a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Parts: a2a.Parts{}},
		},
		{
			name:    "error",
			data:    `{"jsonrpc":"2.0","id":"req-1","error":{"code":-32001,"message":"Task not found","data":{"id":"t"}}}`,
			wantRPC: &a2a.RPCError{Code: a2a.CodeTaskNotFound, Message: "Task not found", Data: json.RawMessage(`{"id":"t"}`), Method: a2av0.MethodMessageSend},
		},
		{
			name:    "error_with_null_id_is_accepted",
			data:    `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`,
			wantRPC: &a2a.RPCError{Code: a2a.CodeParseError, Message: "Parse error", Method: a2av0.MethodMessageSend},
		},
		{
			name:    "error_without_id_is_accepted",
			data:    `{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"}}`,
			wantRPC: &a2a.RPCError{Code: a2a.CodeInvalidRequest, Message: "Invalid Request", Method: a2av0.MethodMessageSend},
		},
		{
			name:    "error_code_as_float",
			data:    `{"jsonrpc":"2.0","id":"req-1","error":{"code":-32004.0,"message":"nope"}}`,
			wantRPC: &a2a.RPCError{Code: a2a.CodeUnsupportedOperation, Message: "nope", Method: a2av0.MethodMessageSend},
		},
		{
			name:    "error_code_as_string",
			data:    `{"jsonrpc":"2.0","id":"req-1","error":{"code":"-32005","message":"nope"}}`,
			wantRPC: &a2a.RPCError{Code: a2a.CodeContentTypeNotSupported, Message: "nope", Method: a2av0.MethodMessageSend},
		},
		{
			name:    "error_code_not_a_number_keeps_the_message",
			data:    `{"jsonrpc":"2.0","id":"req-1","error":{"code":"E_BUSY","message":"busy"}}`,
			wantRPC: &a2a.RPCError{Code: 0, Message: "busy", Method: a2av0.MethodMessageSend},
		},
		{name: "error_with_other_id", data: `{"jsonrpc":"2.0","id":"req-2","error":{"code":1,"message":"x"}}`, wantKind: a2a.ProtocolWrongID},
		{name: "result_with_other_id", data: `{"jsonrpc":"2.0","id":"req-2","result":{"kind":"task","id":"t","status":{"state":"working"}}}`, wantKind: a2a.ProtocolWrongID},
		{name: "result_with_numeric_id", data: `{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t","status":{"state":"working"}}}`, wantKind: a2a.ProtocolWrongID},
		{name: "result_with_null_id", data: `{"jsonrpc":"2.0","id":null,"result":{"kind":"task","id":"t","status":{"state":"working"}}}`, wantKind: a2a.ProtocolWrongID},
		{name: "version_1", data: `{"jsonrpc":"1.0","id":"req-1","result":{}}`, wantKind: a2a.ProtocolBadVersion},
		{name: "version_missing", data: `{"id":"req-1","result":{}}`, wantKind: a2a.ProtocolBadVersion},
		{name: "neither_result_nor_error", data: `{"jsonrpc":"2.0","id":"req-1"}`, wantKind: a2a.ProtocolInvalidResponse},
		{name: "null_result", data: `{"jsonrpc":"2.0","id":"req-1","result":null}`, wantKind: a2a.ProtocolInvalidResponse},
		{name: "not_json", data: `<html>502 Bad Gateway</html>`, wantKind: a2a.ProtocolBadJSON},
		{name: "batch", data: `[{"jsonrpc":"2.0","id":"req-1","result":{}}]`, wantKind: a2a.ProtocolBadJSON},
		{name: "error_not_an_object", data: `{"jsonrpc":"2.0","id":"req-1","error":"boom"}`, wantKind: a2a.ProtocolBadJSON},
		{name: "unknown_result_kind", data: `{"jsonrpc":"2.0","id":"req-1","result":{"kind":"weird"}}`, wantKind: a2a.ProtocolUnknownKind},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := decodeResponse(a2av0.MethodMessageSend, []byte(tt.data), "req-1")
			switch {
			case tt.wantRPC != nil:
				var rpc *a2a.RPCError
				if !errors.As(err, &rpc) {
					t.Fatalf("err = %v, want *RPCError", err)
				}
				if diff := cmp.Diff(tt.wantRPC, rpc); diff != "" {
					t.Errorf("RPCError (-want +got):\n%s", diff)
				}
			case tt.wantKind != "":
				var pe *a2a.ProtocolError
				if !errors.As(err, &pe) || pe.Kind != tt.wantKind || pe.Method != a2av0.MethodMessageSend {
					t.Fatalf("err = %v, want ProtocolError %s of message/send", err, tt.wantKind)
				}
			default:
				if err != nil {
					t.Fatalf("decodeResponse: %v", err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("event (-want +got):\n%s", diff)
				}
			}
		})
	}
}
