package grpcapi

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	connector "github.com/a2a-connector/a2a-connector"
	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/voice"
)

func TestCheckTurn_voice_inputs(t *testing.T) {
	t.Parallel()
	dtmf := &pb.DtmfInput{Digits: "0123456789*#ABCD", Termination: pb.DtmfTermination_DTMF_TERMINATION_END_KEY}
	for _, ok := range []*pb.HandleTurnRequest{
		{Dtmf: dtmf},
		{NoInput: &pb.NoInput{SilenceMs: maxSilenceMs}},
		{NoInput: &pb.NoInput{}},
		{Text: "hi", Interruption: &pb.Interruption{TurnId: "t0"}, Channel: &pb.Channel{Kind: "voice", Locale: "zh-CN"}},
		{Text: "hi", Channel: &pb.Channel{Kind: "in-car_2"}},
	} {
		ok.TenantId, ok.SessionId, ok.TurnId = "t", "s", "1"
		if err := checkTurn(ok); err != nil {
			t.Errorf("valid request %v: %v", ok, err)
		}
	}
	for _, c := range []struct {
		name   string
		mutate func(r *pb.HandleTurnRequest)
		field  string
	}{
		{"no_input_at_all", func(r *pb.HandleTurnRequest) { r.Text = "" }, "text"},
		{"text_and_dtmf", func(r *pb.HandleTurnRequest) { r.Dtmf = dtmf }, "text"},
		{"dtmf_and_no_input", func(r *pb.HandleTurnRequest) { r.Text, r.Dtmf, r.NoInput = "", dtmf, &pb.NoInput{} }, "text"},
		{"dtmf_without_digits", func(r *pb.HandleTurnRequest) {
			r.Text, r.Dtmf = "", &pb.DtmfInput{Termination: pb.DtmfTermination_DTMF_TERMINATION_TIMEOUT}
		}, "dtmf.digits"},
		{"dtmf_with_a_letter", func(r *pb.HandleTurnRequest) {
			r.Text, r.Dtmf = "", &pb.DtmfInput{Digits: "12x", Termination: pb.DtmfTermination_DTMF_TERMINATION_TIMEOUT}
		}, "dtmf.digits"},
		{"dtmf_too_long", func(r *pb.HandleTurnRequest) {
			r.Text, r.Dtmf = "", &pb.DtmfInput{Digits: strings.Repeat("1", voice.MaxDTMFDigits+1), Termination: pb.DtmfTermination_DTMF_TERMINATION_TIMEOUT}
		}, "dtmf.digits"},
		{"dtmf_without_termination", func(r *pb.HandleTurnRequest) { r.Text, r.Dtmf = "", &pb.DtmfInput{Digits: "1"} }, "dtmf.termination"},
		{"dtmf_unknown_termination", func(r *pb.HandleTurnRequest) {
			r.Text, r.Dtmf = "", &pb.DtmfInput{Digits: "1", Termination: 9}
		}, "dtmf.termination"},
		{"silence_over_an_hour", func(r *pb.HandleTurnRequest) { r.Text, r.NoInput = "", &pb.NoInput{SilenceMs: maxSilenceMs + 1} }, "no_input.silence_ms"},
		{"interruption_without_turn", func(r *pb.HandleTurnRequest) { r.Interruption = &pb.Interruption{HeardText: "x"} }, "interruption.turn_id"},
		{"interruption_control_character", func(r *pb.HandleTurnRequest) {
			r.Interruption = &pb.Interruption{TurnId: "t0", HeardText: "a\x1b"}
		}, "interruption.heard_text"},
		{"heard_text_too_long", func(r *pb.HandleTurnRequest) {
			r.Interruption = &pb.Interruption{TurnId: "t0", HeardText: strings.Repeat("x", MaxTextBytes+1)}
		}, "interruption.heard_text"},
		{"channel_without_kind", func(r *pb.HandleTurnRequest) { r.Channel = &pb.Channel{Locale: "en"} }, "channel.kind"},
		{"channel_kind_upper", func(r *pb.HandleTurnRequest) { r.Channel = &pb.Channel{Kind: "Voice"} }, "channel.kind"},
		{"channel_bad_locale", func(r *pb.HandleTurnRequest) { r.Channel = &pb.Channel{Kind: "voice", Locale: "not a tag"} }, "channel.locale"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &pb.HandleTurnRequest{TenantId: "t", SessionId: "s", TurnId: "1", Text: "hi"}
			c.mutate(r)
			wantFieldViolation(t, checkTurn(r), c.field)
		})
	}
}

func TestFromPBVoice(t *testing.T) {
	t.Parallel()
	var got connector.Turn
	fromPBVoice(&pb.HandleTurnRequest{Dtmf: &pb.DtmfInput{Digits: "42", Termination: pb.DtmfTermination_DTMF_TERMINATION_MAX_DIGITS},
		Interruption: &pb.Interruption{TurnId: "t0", HeardText: "heard"}, Channel: &pb.Channel{Kind: "voice", Locale: "en-US"}}, &got)
	want := connector.Turn{DTMF: &connector.DTMF{Digits: "42", Termination: connector.DTMFMaxDigits},
		Interruption: &connector.Interruption{TurnID: "t0", HeardText: "heard"}, Channel: &connector.Channel{Kind: "voice", Locale: "en-US"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	got = connector.Turn{}
	fromPBVoice(&pb.HandleTurnRequest{NoInput: &pb.NoInput{SilenceMs: 4500}}, &got)
	if got.NoInput == nil || got.NoInput.Silence != 4500*time.Millisecond || got.InputKind() != connector.InputNoInput {
		t.Errorf("no input = %+v", got.NoInput)
	}
	for pbT, want := range map[pb.DtmfTermination]string{pb.DtmfTermination_DTMF_TERMINATION_END_KEY: "endKey",
		pb.DtmfTermination_DTMF_TERMINATION_TIMEOUT: "timeout", pb.DtmfTermination_DTMF_TERMINATION_MAX_DIGITS: "maxDigits"} {
		if string(dtmfTerminations[pbT]) != want {
			t.Errorf("%v -> %q, want %q", pbT, dtmfTerminations[pbT], want)
		}
	}
}

func TestToPBFinishAndExpect(t *testing.T) {
	t.Parallel()
	for ft, want := range map[connector.FinishType]pb.FinishType{connector.FinishComplete: pb.FinishType_FINISH_TYPE_COMPLETE,
		connector.FinishEscalate: pb.FinishType_FINISH_TYPE_ESCALATE, connector.FinishEndConversation: pb.FinishType_FINISH_TYPE_END_CONVERSATION} {
		if got := toPBFinish(&connector.Finish{Type: ft, Reason: "r", Summary: "s"}); got.GetType() != want || got.GetReason() != "r" || got.GetSummary() != "s" {
			t.Errorf("%s -> %v", ft, got)
		}
	}
	got := toPBExpect(&connector.Expect{Input: []connector.InputMode{connector.InputModeDTMF, connector.InputModeSpeech},
		DTMF: &connector.ExpectDTMF{MaxDigits: 6, EndKey: "#", Timeout: 8 * time.Second}, NoInputTimeout: 6 * time.Second})
	want := &pb.Expect{Input: []pb.InputMode{pb.InputMode_INPUT_MODE_DTMF, pb.InputMode_INPUT_MODE_SPEECH},
		Dtmf: &pb.DtmfCollection{MaxDigits: 6, EndKey: "#", TimeoutMs: 8000}, NoInputTimeoutMs: 6000}
	if got.String() != want.String() {
		t.Errorf("expect = %v, want %v", got, want)
	}
	if toPBFinish(nil) != nil || toPBExpect(nil) != nil {
		t.Error("nil must stay unset")
	}
}

func TestNoInputUnsupportedIsFailedPreconditionWithAReason(t *testing.T) {
	t.Parallel()
	s := New(nil, nil, Options{})
	st := status.Convert(s.status(t.Context(), "HandleTurn", connector.ErrNoInputUnsupported))
	if st.Code() != codes.FailedPrecondition {
		t.Fatalf("code = %v", st.Code())
	}
	var reasons []string
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			reasons = append(reasons, ei.GetReason())
		}
	}
	if !cmp.Equal(reasons, []string{"NO_INPUT_UNSUPPORTED"}) {
		t.Errorf("error infos = %v", reasons)
	}
}
