package probe

import (
	"fmt"
	"strings"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/voice"
)

// voiceResult is the verdict of the voice turn vt of agent a: the plain message got through, so
// what fails here is the agent's handling of the extension.
func voiceResult(x *voice.Extension, a connector.Agent, vt turn) Result {
	uri := x.URI()
	sent := fmt.Sprintf("The message sent as a voice turn (the activation header naming %s, and the metadata %s/input speech and %s/channel voice)", uri, uri, uri)
	if err := vt.res.Err; err != nil {
		msg := fmt.Sprintf("%s failed (%s): %s. The same message without the voice metadata got through, so the agent cannot take the extension it declares, and every turn the platform sends it carries this metadata.",
			sent, err.Code, strings.TrimSuffix(err.Message, "."))
		return Result{Check: CheckVoice, Status: Fail, Message: msg, Fix: voiceFix(uri, a, err)}
	}
	what := "completed the task"
	switch vt.res.Outcome {
	case connector.OutcomeInputRequired:
		what = "asked a follow-up question (the check cancels the task)"
	case connector.OutcomeHandback:
		what = "declined it (rejected), which is the agent's choice"
	case connector.OutcomeCompleted:
	default:
		return Result{Check: CheckVoice, Status: Warn, Message: fmt.Sprintf("%s ended %s.", sent, vt.res.Outcome),
			Fix: "Complete, reject or ask back (input-required) rather than canceling the task yourself."}
	}
	var said []string
	if f := x.Finish(vt.res.EndMetadata); f != nil {
		said = append(said, "finish "+string(f.Type))
	}
	if x.Expect(vt.res.EndMetadata) != nil {
		said = append(said, "expect")
	}
	if vt.speech {
		said = append(said, "speech")
	}
	msg := fmt.Sprintf("%s was accepted: the agent %s.", sent, what)
	if len(said) > 0 {
		msg += " It answered with the extension's " + strings.Join(said, ", ") + "."
	} else {
		msg += " It answered with none of the extension's finish, expect or speech, which are optional."
	}
	return Result{Check: CheckVoice, Status: Pass, Message: msg}
}

// voiceFix says what to change on an agent that declares the voice extension and fails a turn
// that activates it.
func voiceFix(uri string, a connector.Agent, err *connector.TurnError) string {
	m := strings.ToLower(err.Message)
	switch {
	case strings.Contains(m, "-32008") || strings.Contains(m, "extension"):
		return fmt.Sprintf("The agent did not find the extension activated although the call named it: read the activation from the A2A-Extensions header (X-A2A-Extensions on A2A 0.x; gRPC metadata a2a-extensions), one line per URI, compared with %s exactly; or stop declaring the extension in the card.", uri)
	case err.Code == connector.CodeAgentRPCError || err.Code == connector.CodeAgentHTTPStatus:
		return fmt.Sprintf("Accept the extension's keys in the user message's metadata (%[1]s/input, %[1]s/channel, %[1]s/interruption; docs/voice-extension.md) and ignore keys the agent does not use; or stop declaring the extension in the card.", uri)
	case err.Code == connector.CodeTaskFailed:
		return fmt.Sprintf("The agent failed the task when the message carried %s/input: look up this task in the agent's logs.", uri)
	}
	if fix := errorFixes[err.Code]; fix != "" {
		return fillFix(fix, a.EndpointURL, a.ProtocolVersion)
	}
	return "Look up this failure in the agent's logs."
}
