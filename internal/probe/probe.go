// Package probe runs the console's "check my agent": a short conformance probe of one registered
// agent that answers a list of checks, each pass, warn or fail, with a concrete fix for every warn
// and fail.
//
// The probe fetches the card the way registration does (cardfetch: the same guarded client,
// discovery and validation) and compares it with the stored live revision; then it sends one
// harmless message through the same invoke path as real turns (an invoke.Invoker built from the
// connector's options), against the agent's live revision exactly as a turn would, and observes
// the agent's answers as the wire client reports them (invoke.Options.Observe, on every binding:
// JSON-RPC, HTTP+JSON and gRPC): which URL answered (`{url}/stream` or the url itself), which
// wire generation and binding, how long the first event took, whether task and context ids came
// back. When the card demands an API key it sends the message once more without the key and
// expects a refusal. For an agent whose card declares the platform's voice extension it sends the
// message once more, activated as a voice turn (internal/voice: the extension's metadata, the
// activation header as on every call), and expects the agent to take it. See
// docs/architecture.md §4 for the turn path it reuses.
//
// It refuses to touch sessions or holds (no session router: each probe is a fresh conversation
// that the dialog engine never sees), to store anything, to rate-limit (the console does that),
// and to log or return user text, API keys or transport internals. Each Run builds its own
// Invoker, so what one probe learns about an agent (the stream-path and version fallbacks invoke
// remembers) never leaks into the next probe or into real turns.
package probe

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/agenttls"
	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
	"github.com/a2a-connector/a2a-connector/internal/invoke"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/voice"
)

// Status is a check's verdict.
type Status string

// Verdicts.
const (
	// Pass: the agent does what the platform expects.
	Pass Status = "pass"
	// Warn: turns work, but worse than they could (slower, fewer features) or the check could
	// not run because an earlier one failed.
	Warn Status = "warn"
	// Fail: turns fail, or the agent does something it must not (answering without its key).
	Fail Status = "fail"
)

// Check names, stable for clients.
const (
	CheckCard       = "card"
	CheckRevision   = "card_revision"
	CheckEndpoint   = "endpoint"
	CheckVersion    = "a2a_version"
	CheckStreaming  = "streaming"
	CheckFirstEvent = "first_event"
	CheckTaskIDs    = "task_ids"
	CheckAPIKey     = "api_key_refused"
	CheckVoice      = "voice_extension"
	CheckIdentity   = "caller_identity"
)

// Result is one check's verdict. Fix is empty for a pass and concrete otherwise: what to change
// on the agent, its card, or its registration.
type Result struct {
	Check   string `json:"check"`
	Status  Status `json:"status"`
	Message string `json:"message"`
	Fix     string `json:"fix,omitempty"`
}

// Report is the outcome of one probe.
type Report struct {
	// Text is the message the probe sent (a skill example from the card, or PingText).
	Text string
	// ProtocolVersion is the A2A version of the interface that answered, as the card states it
	// ("" when no interface answered); AnsweredURL is the URL that answered the message.
	ProtocolVersion, AnsweredURL string
	// Checks are in a fixed order: card, card_revision, endpoint, a2a_version, streaming,
	// first_event, task_ids, api_key_refused, and voice_extension for an agent whose card
	// declares the platform's voice extension.
	Checks []Result
}

// Target is the agent to check.
type Target struct {
	// Agent is the agent at its live revision: the turns use its profile, as real turns do.
	Agent connector.Agent
	// Credential is the agent's sealed credential, nil when none is set.
	Credential *connector.Sealed
	// StoredCard is the raw card of the live revision, compared with the card served now.
	StoredCard []byte
}

// PingText is the message sent when no skill of the card has an example.
const PingText = "ping"

// maxTextBytes bounds the skill example used as the message.
const maxTextBytes = 1000

// Config wires a Prober.
type Config struct {
	// Cards fetches and validates the card (the registration's fetcher).
	Cards *cardfetch.Fetcher
	// Invoke are the options real turns run with (client, secrets, limits). Each Run builds an
	// Invoker from them; MeterProvider is dropped so that probes do not count as agent errors
	// in the operators' metrics.
	Invoke invoke.Options
	// Now is the clock that times the first event; nil means time.Now.
	Now func() time.Time
	// VoiceExtension is the URI of the platform's voice extension (A2AC_VOICE_EXTENSION); ""
	// is connector.VoiceExtensionURI.
	VoiceExtension string
}

// Prober runs probes. It is safe for concurrent use.
type Prober struct {
	cards *cardfetch.Fetcher
	opts  invoke.Options
	base  *http.Client
	now   func() time.Time
	voice *voice.Extension
}

// New returns a Prober.
func New(c Config) *Prober {
	o := c.Invoke
	base := o.Client
	if base == nil {
		base = netguard.NewClient(netguard.Policy{}, netguard.ClientOptions{})
	}
	o.MeterProvider = nil
	if o.TLS == nil {
		// One for every probe's Invoker: an agent's TLS is built once, not per probe turn.
		o.TLS = agenttls.NewCache(o.RootCAs, nil)
	}
	if o.FirstEventTimeout <= 0 {
		o.FirstEventTimeout = invoke.DefaultFirstEventTimeout
	}
	if o.TurnTimeout <= 0 {
		o.TurnTimeout = invoke.DefaultTurnTimeout
	}
	now := c.Now
	if now == nil {
		now = time.Now
	}
	return &Prober{cards: c.Cards, opts: o, base: base, now: now, voice: voice.New(c.VoiceExtension)}
}

// turn is what the probe saw of one turn.
type turn struct {
	res connector.TurnResult
	// calls are the agent's HTTP answers, in order.
	calls []call
	// firstEvent is how long the first text or status event took, when gotEvent.
	firstEvent time.Duration
	gotEvent   bool
	// speech: the agent said whether its reply may be interrupted (a voice turn only).
	speech bool
}

// Run probes the agent. It never fails: whatever goes wrong is a check's verdict. It takes at
// most the card fetch timeout, plus the turn timeout, plus the first-event limit (the call
// without a key ends at the agent's first event), plus the bounded waits for tasks/cancel.
func (p *Prober) Run(ctx context.Context, t Target) Report {
	text := messageText(t.Agent)
	rep := Report{Text: text}

	// The card comes over the agent's own TLS (its CA bundle, its client certificate), as at
	// registration; a TLS setting that cannot be used shows in the endpoint check.
	cardCtx := ctx
	if tctx, err := invoke.New(p.opts).TLSContext(ctx, &t.Agent, t.Credential); err == nil {
		cardCtx = tctx
	}
	_, report, ferr := p.cards.FetchAndValidate(cardCtx, t.Agent.CardURL)
	rep.Checks = append(rep.Checks, cardCheck(t.Agent, ferr, report), revisionCheck(t.Agent, t.StoredCard, ferr, report))

	withKey := p.turn(ctx, t.Agent, t.Credential, message{text: text}, false)
	ans, answered := withKey.answer()
	if answered {
		rep.AnsweredURL = ans.url
		rep.ProtocolVersion = versionAt(t.Agent, ans)
	}
	refused := withKey.res.Err != nil && withKey.res.Err.Code == connector.CodeAgentUnauthorized
	var noKey *turn
	if t.Agent.APIKeyRequired && t.Credential != nil && (answered || refused) {
		// A refusal is immediate; an agent that answers is known at its first event. Either
		// comes within the first-event limit, also for message/send.
		nkCtx, cancel := context.WithTimeout(ctx, p.opts.FirstEventTimeout)
		nk := p.turn(nkCtx, t.Agent, nil, message{text: text}, true)
		cancel()
		noKey = &nk
	}
	rep.Checks = append(rep.Checks,
		endpointCheck(t.Agent, t.Credential != nil, withKey),
		versionCheck(t.Agent, withKey),
		streamingCheck(t.Agent, withKey),
		firstEventCheck(t.Agent, withKey, p.limit(t.Agent)),
		taskIDsCheck(withKey),
		apiKeyCheck(t.Agent, t.Credential != nil, withKey, noKey))
	if p.voice.Active(&t.Agent) {
		rep.Checks = append(rep.Checks, p.voiceCheck(ctx, t, text, withKey))
	}
	if t.Agent.CallerIdentity {
		rep.Checks = append(rep.Checks, identityCheck(withKey))
	}
	return rep
}

// voiceCheck sends the message as a voice turn (speech on a voice channel: what a call sends),
// once the plain message was answered, so that a failure can only be the extension's.
func (p *Prober) voiceCheck(ctx context.Context, t Target, text string, plain turn) Result {
	if _, ok := plain.answer(); !ok || plain.res.Err != nil {
		return Result{Check: CheckVoice, Status: Warn, Message: "Not checked: the plain message did not get through.", Fix: fixEndpointFirst}
	}
	// A text turn always becomes a message (only a no-input turn to an inactive agent does not).
	msg, _ := p.voice.Outgoing(&connector.Turn{Text: text, Channel: &connector.Channel{Kind: connector.ChannelVoice}}, true,
		func(string) string { return "" })
	return voiceResult(p.voice, t.Agent, p.turn(ctx, t.Agent, t.Credential, message{text: msg.Text, metadata: msg.Metadata, voice: true}, false))
}

// limit is how long the first answer may take: the first-event limit of a stream, the whole
// turn for message/send.
func (p *Prober) limit(a connector.Agent) time.Duration {
	if a.Streaming {
		return p.opts.FirstEventTimeout
	}
	return p.opts.TurnTimeout
}

// message is what a probe turn sends: the text and, for a voice turn, the extension's metadata.
type message struct {
	text     string
	metadata map[string]any
	voice    bool
}

// turn runs one turn on a fresh Invoker whose client records the agent's answers. stopAtFirst
// ends the turn at the first event (the call without a key only needs to know whether the agent
// answers); its task is then canceled by invoke as for any turn our side interrupts.
func (p *Prober) turn(ctx context.Context, a connector.Agent, key *connector.Sealed, m message, stopAtFirst bool) turn {
	rec := &recorder{}
	o := p.opts
	o.Client = p.base
	o.Observe = rec.observe
	inv := invoke.New(o)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		first  time.Duration
		got    bool
		speech bool
	)
	req := connector.TurnRequest{Agent: &a, Credential: key, MessageID: uuid.NewString(), Text: m.text, Metadata: m.metadata}
	if key != nil || !a.APIKeyRequired {
		// The check names a user of its own, so that an agent asking for the caller's
		// identity receives a token as on a real call (not on the call without the key).
		req.UserID = ProbeUserID
	}
	if m.voice {
		req.OnMetadata = func(md map[string]any) {
			_, said := p.voice.Speech(md)
			speech = speech || said
		}
	}
	start := p.now()
	// emit runs on this goroutine, in order, and never after Turn returns.
	res := inv.Turn(ctx, req, func(connector.TurnEvent) {
		if got {
			return
		}
		first, got = p.now().Sub(start), true
		if stopAtFirst {
			cancel()
		}
	})
	if res.Outcome == connector.OutcomeInputRequired && res.TaskID != "" {
		// The probe will not answer the question: leave no task waiting at the agent.
		inv.CancelTask(ctx, a, key, res.TaskID)
	}
	// Waits for the background tasks/cancel calls, each bounded by the cancel timeout.
	wait := p.opts.CancelTimeout
	if wait <= 0 {
		wait = invoke.DefaultCancelTimeout
	}
	closeCtx, closeCancel := context.WithTimeout(context.WithoutCancel(ctx), wait+time.Second)
	defer closeCancel()
	_ = inv.Close(closeCtx)
	return turn{res: *res, calls: rec.list(), firstEvent: first, gotEvent: got, speech: speech}
}

// messageText is the first skill example of the card (what the agent's author shows as a sample
// request, so it is something the agent handles and expects to be sent), else PingText.
func messageText(a connector.Agent) string {
	for _, s := range a.Skills {
		for _, ex := range s.Examples {
			if ex != "" && len(ex) <= maxTextBytes && validText(ex) {
				return ex
			}
		}
	}
	return PingText
}

// validText refuses control characters other than tab and newline, which the console's text rule
// refuses in a try-it message too.
func validText(s string) bool {
	for _, r := range s {
		if (r < ' ' && r != '\t' && r != '\n') || r == 0x7f || r == '\uFFFD' {
			return false
		}
	}
	return true
}
