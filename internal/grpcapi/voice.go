package grpcapi

import (
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	connector "github.com/a2a-connector/a2a-connector"
	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/voice"
)

// The voice extension's fields of the API (docs/voice-extension.md): checked, converted to the
// domain's records and back.

// The limits of the voice fields are internal/voice's, shared with the console's test turns.
const maxSilenceMs = voice.MaxSilenceMs

// noInputUnsupportedReason is the google.rpc.ErrorInfo reason of a no-input turn for an agent
// without the voice extension, so that engines branch on it and not on the message.
const noInputUnsupportedReason = "NO_INPUT_UNSUPPORTED"

// checkInput checks that the turn has exactly one input (text, dtmf or no_input), and the voice
// fields.
func checkInput(req *pb.HandleTurnRequest) error {
	inputs := 0
	if req.GetText() != "" {
		inputs++
	}
	if req.GetDtmf() != nil {
		inputs++
	}
	if req.GetNoInput() != nil {
		inputs++
	}
	switch {
	case inputs > 1:
		return invalid("text", "set only one of text, dtmf and no_input")
	case inputs == 0 || req.GetText() != "":
		if err := ruleText.check("text", req.GetText()); err != nil {
			return err
		}
	}
	if d := req.GetDtmf(); d != nil {
		if err := checkDTMF(d); err != nil {
			return err
		}
	}
	if n := req.GetNoInput(); n != nil && n.GetSilenceMs() > maxSilenceMs {
		return invalid("no_input.silence_ms", "larger than %d (an hour)", maxSilenceMs)
	}
	if i := req.GetInterruption(); i != nil {
		if err := ruleID.check("interruption.turn_id", i.GetTurnId()); err != nil {
			return err
		}
		if err := ruleHeardText.check("interruption.heard_text", i.GetHeardText()); err != nil {
			return err
		}
	}
	if c := req.GetChannel(); c != nil {
		return checkChannel(c)
	}
	return nil
}

// ruleHeardText is the text rule without required: the caller may have heard nothing.
var ruleHeardText = fieldRule{maxBytes: MaxTextBytes, text: true}

func checkDTMF(d *pb.DtmfInput) error {
	digits := d.GetDigits()
	if digits == "" {
		return invalid("dtmf.digits", "required; a turn without digits is no_input")
	}
	if fault := voice.DigitsFault(digits); fault != "" {
		return invalid("dtmf.digits", "%s", fault)
	}
	if _, ok := dtmfTerminations[d.GetTermination()]; !ok {
		return invalid("dtmf.termination", "required: DTMF_TERMINATION_END_KEY, DTMF_TERMINATION_TIMEOUT or DTMF_TERMINATION_MAX_DIGITS")
	}
	return nil
}

func checkChannel(c *pb.Channel) error {
	kind := c.GetKind()
	if kind == "" {
		return invalid("channel.kind", "required when channel is set (\"voice\", \"chat\", ...)")
	}
	if fault := voice.ChannelKindFault(kind); fault != "" {
		return invalid("channel.kind", "%s", fault)
	}
	if loc := c.GetLocale(); loc != "" {
		if fault := voice.LocaleFault(loc); fault != "" {
			return invalid("channel.locale", "%s", fault)
		}
	}
	return nil
}

var dtmfTerminations = map[pb.DtmfTermination]connector.DTMFTermination{
	pb.DtmfTermination_DTMF_TERMINATION_END_KEY:    connector.DTMFEndKey,
	pb.DtmfTermination_DTMF_TERMINATION_TIMEOUT:    connector.DTMFTimeout,
	pb.DtmfTermination_DTMF_TERMINATION_MAX_DIGITS: connector.DTMFMaxDigits,
}

// fromPBVoice copies the checked voice fields of req into t.
func fromPBVoice(req *pb.HandleTurnRequest, t *connector.Turn) {
	if d := req.GetDtmf(); d != nil {
		t.DTMF = &connector.DTMF{Digits: d.GetDigits(), Termination: dtmfTerminations[d.GetTermination()]}
	}
	if n := req.GetNoInput(); n != nil {
		t.NoInput = &connector.NoInput{Silence: time.Duration(n.GetSilenceMs()) * time.Millisecond}
	}
	if i := req.GetInterruption(); i != nil {
		t.Interruption = &connector.Interruption{TurnID: i.GetTurnId(), HeardText: i.GetHeardText()}
	}
	if c := req.GetChannel(); c != nil {
		t.Channel = &connector.Channel{Kind: c.GetKind(), Locale: c.GetLocale()}
	}
}

var finishTypes = map[connector.FinishType]pb.FinishType{
	connector.FinishComplete:        pb.FinishType_FINISH_TYPE_COMPLETE,
	connector.FinishEscalate:        pb.FinishType_FINISH_TYPE_ESCALATE,
	connector.FinishEndConversation: pb.FinishType_FINISH_TYPE_END_CONVERSATION,
}

func toPBFinish(f *connector.Finish) *pb.Finish {
	if f == nil {
		return nil
	}
	return &pb.Finish{Type: finishTypes[f.Type], Reason: f.Reason, Summary: f.Summary}
}

func toPBExpect(e *connector.Expect) *pb.Expect {
	if e == nil {
		return nil
	}
	out := &pb.Expect{NoInputTimeoutMs: millis(e.NoInputTimeout)}
	for _, m := range e.Input {
		switch m {
		case connector.InputModeSpeech:
			out.Input = append(out.Input, pb.InputMode_INPUT_MODE_SPEECH)
		case connector.InputModeDTMF:
			out.Input = append(out.Input, pb.InputMode_INPUT_MODE_DTMF)
		}
	}
	if d := e.DTMF; d != nil {
		out.Dtmf = &pb.DtmfCollection{MaxDigits: uint32(d.MaxDigits), EndKey: d.EndKey, TimeoutMs: millis(d.Timeout)}
	}
	return out
}

// millis is d in whole milliseconds; internal/voice bounds every wait to minutes.
func millis(d time.Duration) uint32 { return uint32(d.Milliseconds()) }

// noInputUnsupported is the status of a no-input turn for an agent without the voice extension.
func noInputUnsupported() error {
	st := status.New(codes.FailedPrecondition, "the agent does not declare the voice extension: a no-input turn is not sent to it; reprompt the caller yourself")
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: noInputUnsupportedReason, Domain: "a2a-connector"}); err == nil {
		st = d
	}
	return st.Err()
}
