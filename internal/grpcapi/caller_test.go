package grpcapi

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
)

func TestCheckTurn_caller(t *testing.T) {
	t.Parallel()
	for _, ok := range []*pb.Caller{nil, {UserId: "u"}, {UserId: strings.Repeat("é", MaxIDBytes/2)}} {
		r := &pb.HandleTurnRequest{TenantId: "t", SessionId: "s", TurnId: "1", Text: "hi", Caller: ok}
		if err := checkTurn(r); err != nil {
			t.Errorf("caller %v: %v", ok, err)
		}
	}
	const private = "user-\x07-secret"
	for name, bad := range map[string]*pb.Caller{
		"empty_user_id":     {},
		"blank_user_id":     {UserId: "  "},
		"user_id_too_long":  {UserId: strings.Repeat("x", MaxIDBytes+1)},
		"control_character": {UserId: private},
	} {
		t.Run(name, func(t *testing.T) {
			err := checkTurn(&pb.HandleTurnRequest{TenantId: "t", SessionId: "s", TurnId: "1", Text: "hi", Caller: bad})
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("err = %v, want INVALID_ARGUMENT", err)
			}
			wantFieldViolation(t, err, "caller.user_id")
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the error quotes the user id: %v", err)
			}
		})
	}
}
