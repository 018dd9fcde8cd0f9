package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/grpcapi"
)

// defaultSilenceMs is the silence of a bare /silence.
const defaultSilenceMs = 5000

// chatUsage is the header's list of commands.
const chatUsage = "type a message; /dtmf 1234# (keypad digits: a trailing # is the end key), /silence [ms] (the caller says nothing), " +
	"/interrupt N (the next turn cut off the last reply after N characters), /release to end a hold, /quit to leave"

// chat plays the dialog engine: each input line is one turn of one session, or a command that
// makes a voice turn of it (keypad digits, silence) or marks the next turn as the interruption of
// the last reply. Text is printed as it streams; after each turn the outcome, whether the session
// is held, and what a voice-extension agent said (finish, expect; barge-in inline).
func chat(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("connector chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", orDefault(getenv("A2AC_CHAT_ADDR"), "127.0.0.1:9090"), "connector gRPC address")
	tenant := fs.String("tenant", getenv("A2AC_CHAT_TENANT"), "tenant id (required)")
	agent := fs.String("agent", getenv("A2AC_CHAT_AGENT"), "agent id to send turns to when the session is not held")
	sessionID := fs.String("session", "chat-"+uuid.NewString()[:8], "dialog session id")
	timeout := fs.Duration("timeout", 60*time.Second, "per-turn RPC deadline")
	channel := fs.String("channel", "", `channel kind sent with every turn ("voice": text turns are speech; "chat"; empty: none)`)
	locale := fs.String("locale", "", "BCP 47 locale of the channel (zh-CN); needs -channel")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tenant == "" {
		return errors.New("chat: -tenant is required")
	}
	if *locale != "" && *channel == "" {
		return errors.New("chat: -locale needs -channel (voice, chat, ...)")
	}
	conn, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("chat: %w", err)
	}
	defer conn.Close()
	c := &chatSession{client: pb.NewConnectorClient(conn), out: stdout, timeout: *timeout,
		tenant: *tenant, agent: *agent, session: *sessionID}
	if *channel != "" {
		c.channel = &pb.Channel{Kind: *channel, Locale: *locale}
	}

	fmt.Fprintf(stdout, "session %s — %s\n", *sessionID, chatUsage)
	in := bufio.NewScanner(stdin)
	for {
		fmt.Fprint(stdout, "> ")
		if !in.Scan() {
			fmt.Fprintln(stdout)
			return in.Err()
		}
		line := strings.TrimSpace(in.Text())
		cmd, arg, _ := strings.Cut(line, " ")
		arg = strings.TrimSpace(arg)
		req := &pb.HandleTurnRequest{}
		switch cmd {
		case "":
			continue
		case "/quit", "/exit":
			return nil
		case "/release":
			res, err := c.client.ReleaseSession(ctx, &pb.ReleaseSessionRequest{TenantId: c.tenant, SessionId: c.session})
			if err != nil {
				fmt.Fprintln(stdout, "release:", err)
				continue
			}
			fmt.Fprintf(stdout, "[released=%v]\n", res.GetReleased())
			continue
		case "/interrupt":
			c.interrupt(arg)
			continue
		case "/dtmf":
			if arg == "" {
				fmt.Fprintln(stdout, "usage: /dtmf 1234# (a trailing # ends the digits with the end key; without it they end by timeout)")
				continue
			}
			req.Dtmf = &pb.DtmfInput{Digits: arg, Termination: pb.DtmfTermination_DTMF_TERMINATION_TIMEOUT}
			if digits, ok := strings.CutSuffix(arg, "#"); ok {
				req.Dtmf = &pb.DtmfInput{Digits: digits, Termination: pb.DtmfTermination_DTMF_TERMINATION_END_KEY}
			}
		case "/silence":
			ms := uint64(defaultSilenceMs)
			if arg != "" {
				if ms, err = strconv.ParseUint(arg, 10, 32); err != nil {
					fmt.Fprintln(stdout, "usage: /silence [ms] (default 5000)")
					continue
				}
			}
			req.NoInput = &pb.NoInput{SilenceMs: uint32(ms)}
		default:
			req.Text = line
		}
		if err := c.turn(ctx, req); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			fmt.Fprintln(stdout, "\nerror:", err)
		}
	}
}

// chatSession is one chat's dialog session and what the next turn needs of the last one.
type chatSession struct {
	client                 pb.ConnectorClient
	out                    io.Writer
	timeout                time.Duration
	tenant, agent, session string
	channel                *pb.Channel

	// lastTurnID and lastReply are the last answered turn's, for /interrupt; cut is the
	// interruption the next turn carries (nil: none).
	lastTurnID, lastReply string
	cut                   *pb.Interruption
}

// interrupt makes the next turn say that the caller cut off the last reply after n characters.
func (c *chatSession) interrupt(arg string) {
	n, err := strconv.Atoi(arg)
	switch {
	case err != nil || n < 0:
		fmt.Fprintln(c.out, "usage: /interrupt N (the caller heard the first N characters of the last reply)")
		return
	case c.lastTurnID == "":
		fmt.Fprintln(c.out, "nothing to interrupt yet: no reply so far")
		return
	}
	heard := []rune(c.lastReply)
	heard = heard[:min(n, len(heard))]
	c.cut = &pb.Interruption{TurnId: c.lastTurnID, HeardText: string(heard)}
	fmt.Fprintf(c.out, "[the next turn cut off the last reply after %q]\n", string(heard))
}

// turn sends req as the session's next turn and prints it.
func (c *chatSession) turn(ctx context.Context, req *pb.HandleTurnRequest) error {
	req.TenantId, req.SessionId, req.TurnId, req.AgentId = c.tenant, c.session, uuid.NewString(), c.agent
	req.Channel, req.Interruption = c.channel, c.cut
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	// As a dialog engine should: the connector admits or refuses the turn as its stream opens.
	ctx = metadata.AppendToOutgoingContext(ctx, grpcapi.TenantMetadataKey, c.tenant)
	stream, err := c.client.HandleTurn(ctx, req)
	if err != nil {
		return err
	}
	var p turnPrinter
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if noInputRefused(err) {
				fmt.Fprintln(c.out, "[not sent: the agent does not declare the voice extension, so it cannot be told the caller said nothing; a dialog engine reprompts the caller itself]")
				return nil
			}
			return err
		}
		if f := ev.GetFinal(); f != nil {
			c.cut = nil
			c.lastTurnID, c.lastReply = req.TurnId, f.GetText()
		}
		p.print(c.out, ev)
	}
}

// noInputRefused reports the refusal of a no-input turn for an agent without the voice extension.
func noInputRefused(err error) bool {
	st := status.Convert(err)
	if st.Code() != codes.FailedPrecondition {
		return false
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetReason() == "NO_INPUT_UNSUPPORTED" {
			return true
		}
	}
	return false
}

// turnPrinter prints one turn's events: "[agent] reply", then the outcome line and the voice
// extension's finish and expect lines.
type turnPrinter struct {
	// spoke: text followed the speaker; statusText is the agent's last status message (its
	// reason when it declines).
	spoke      bool
	statusText string
}

func (p *turnPrinter) print(out io.Writer, ev *pb.TurnEvent) {
	switch e := ev.GetEvent().(type) {
	case *pb.TurnEvent_Started:
		held := ""
		if e.Started.GetHeld() {
			held = ", continuing held task"
		}
		fmt.Fprintf(out, "[%s%s] ", e.Started.GetAgentName(), held)
	case *pb.TurnEvent_Speech:
		if e.Speech.GetBargeIn() {
			fmt.Fprint(out, "[barge-in on] ")
		} else {
			fmt.Fprint(out, "[barge-in off: do not interrupt] ")
		}
	case *pb.TurnEvent_Status:
		if t := strings.TrimSpace(e.Status.GetText()); t != "" {
			p.statusText = t
		}
	case *pb.TurnEvent_TextDelta:
		p.spoke = p.spoke || e.TextDelta.GetText() != ""
		fmt.Fprint(out, e.TextDelta.GetText())
	case *pb.TurnEvent_Final:
		p.final(out, e.Final)
	}
}

func (p *turnPrinter) final(out io.Writer, f *pb.TurnFinal) {
	if f.GetOutcome() == pb.Outcome_OUTCOME_HANDBACK && !p.spoke {
		// The agent's reason is in its status message, not the reply.
		reason := p.statusText
		if reason == "" {
			reason = "(no reason given)"
		}
		fmt.Fprintf(out, "declined: %s", reason)
	}
	fmt.Fprintf(out, "\n[%s", strings.TrimPrefix(f.GetOutcome().String(), "OUTCOME_"))
	if f.GetError() != nil {
		fmt.Fprintf(out, " %s: %s", f.GetError().GetCode(), f.GetError().GetMessage())
	}
	if f.GetHold() != nil {
		fmt.Fprintf(out, "; session held until %s", f.GetHold().GetExpiresAt().AsTime().Local().Format(time.TimeOnly))
	}
	if f.GetOutcome() == pb.Outcome_OUTCOME_HANDBACK {
		fmt.Fprint(out, "; the platform handles this turn itself")
	}
	if f.GetMetadata() != nil {
		if b, err := protojson.Marshal(f.GetMetadata()); err == nil {
			fmt.Fprintf(out, "; metadata %s", b)
		}
	}
	fmt.Fprintln(out, "]")
	if fin := f.GetFinish(); fin != nil {
		fmt.Fprintf(out, "[finish: %s", finishWords[fin.GetType()])
		if r := fin.GetReason(); r != "" {
			fmt.Fprintf(out, "; reason: %s", r)
		}
		if s := fin.GetSummary(); s != "" {
			fmt.Fprintf(out, "; summary: %s", s)
		}
		fmt.Fprintln(out, "]")
	}
	if e := f.GetExpect(); e != nil {
		fmt.Fprintf(out, "[expect: %s]\n", expectWords(e))
	}
}

// finishWords name the finish types as the extension spells them.
var finishWords = map[pb.FinishType]string{
	pb.FinishType_FINISH_TYPE_UNSPECIFIED:      "unspecified",
	pb.FinishType_FINISH_TYPE_COMPLETE:         "complete",
	pb.FinishType_FINISH_TYPE_ESCALATE:         "escalate (give the caller to a human)",
	pb.FinishType_FINISH_TYPE_END_CONVERSATION: "endConversation (end the call)",
}

// expectWords says how the agent wants its question answered: "dtmf (at most 4 digits, end key
// #, timeout 8s) or speech; no input after 6s".
func expectWords(e *pb.Expect) string {
	var ways []string
	for _, m := range e.GetInput() {
		switch m {
		case pb.InputMode_INPUT_MODE_SPEECH:
			ways = append(ways, "speech")
		case pb.InputMode_INPUT_MODE_DTMF:
			ways = append(ways, "dtmf"+dtmfWords(e.GetDtmf()))
		}
	}
	if len(ways) == 0 && e.GetDtmf() != nil {
		ways = append(ways, "dtmf"+dtmfWords(e.GetDtmf()))
	}
	s := strings.Join(ways, " or ")
	if ms := e.GetNoInputTimeoutMs(); ms > 0 {
		if s != "" {
			s += "; "
		}
		s += "no input after " + (time.Duration(ms) * time.Millisecond).String()
	}
	return s
}

func dtmfWords(d *pb.DtmfCollection) string {
	var how []string
	switch n := d.GetMaxDigits(); {
	case n == 1:
		how = append(how, "at most 1 digit")
	case n > 1:
		how = append(how, fmt.Sprintf("at most %d digits", n))
	}
	if k := d.GetEndKey(); k != "" {
		how = append(how, "end key "+k)
	}
	if ms := d.GetTimeoutMs(); ms > 0 {
		how = append(how, "timeout "+(time.Duration(ms)*time.Millisecond).String())
	}
	if len(how) == 0 {
		return ""
	}
	return " (" + strings.Join(how, ", ") + ")"
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
