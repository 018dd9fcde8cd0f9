package cardfetch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
	"github.com/a2a-connector/a2a-connector/internal/cardcheck"
	"github.com/a2a-connector/a2a-connector/internal/neterr"
	"github.com/a2a-connector/a2a-connector/internal/netguard"
	"github.com/a2a-connector/a2a-connector/internal/reqauth"
)

// Default limits for a fetch.
const (
	DefaultTimeout = 10 * time.Second
	// DefaultMaxBytes caps a card body: the largest card cardcheck accepts.
	DefaultMaxBytes = cardcheck.DefaultMaxBytes
	// DefaultMaxRedirects is what the client given in Options should follow, and what New
	// configures when it builds its own.
	DefaultMaxRedirects = 3
)

// Options configure a Fetcher.
type Options struct {
	// Client fetches cards. It must be a netguard client (netguard.NewClient with MaxRedirects:
	// 3); nil builds one with netguard's default policy (public addresses only).
	Client *http.Client
	// AllowInsecureHTTP lets the pasted card URL be http:// (A2AC_ALLOW_INSECURE_HTTP).
	AllowInsecureHTTP bool
	// Timeout bounds a whole Fetch, discovery included (default 10 s).
	Timeout time.Duration
	// MaxBytes caps the card body (default 1 MiB).
	MaxBytes int64
	// Checker judges the cards FetchAndValidate fetched; nil builds one with AllowInsecureHTTP and
	// MaxBytes (the built-in extensions only).
	Checker *cardcheck.Checker
	// TracerProvider traces fetches and validations (spans cardfetch.Fetch and
	// cardfetch.Validate, with the card URL's host only); nil: no tracing.
	TracerProvider trace.TracerProvider
	// MeterProvider counts fetches by result (a2ac.card.fetches); nil: no metrics.
	MeterProvider metric.MeterProvider
	// Agents asks agents for their authenticated extended card (FetchExtended). The binaries
	// give the invoker, whose wire client turns use; nil: an a2aclient.Client of the Fetcher's own
	// over Client, which calls JSON-RPC and HTTP+JSON interfaces but no gRPC ones.
	Agents Agents
}

// Fetcher fetches agent cards. It is safe for concurrent use.
type Fetcher struct {
	client        *http.Client
	allowInsecure bool
	timeout       time.Duration
	maxBytes      int64
	checker       *cardcheck.Checker
	obs           *observer
	agents        Agents
}

// New returns a Fetcher with o's settings, defaults filled in.
func New(o Options) *Fetcher {
	f := &Fetcher{
		client:        o.Client,
		allowInsecure: o.AllowInsecureHTTP,
		timeout:       o.Timeout,
		maxBytes:      o.MaxBytes,
		checker:       o.Checker,
		obs:           newObserver(o.TracerProvider, o.MeterProvider),
		agents:        o.Agents,
	}
	if f.client == nil {
		f.client = netguard.NewClient(netguard.Policy{AllowInsecureHTTP: o.AllowInsecureHTTP},
			netguard.ClientOptions{MaxRedirects: DefaultMaxRedirects})
	}
	if f.timeout <= 0 {
		f.timeout = DefaultTimeout
	}
	if f.maxBytes <= 0 {
		f.maxBytes = DefaultMaxBytes
	}
	if f.checker == nil {
		f.checker = cardcheck.New(cardcheck.Options{AllowInsecureHTTP: o.AllowInsecureHTTP, MaxBytes: f.maxBytes})
	}
	if f.agents == nil {
		// Without gRPC options it holds no connections, so nothing needs closing.
		f.agents = a2aclient.NewClient(f.client, a2aclient.ClientOptions{})
	}
	return f
}

// Fetched is a card body as fetched.
type Fetched struct {
	// ResolvedURL is where the card came from: after discovery and redirects.
	ResolvedURL string
	Raw         []byte
}

// FetchErrorKind classifies a fetch failure; the values are stable machine words.
type FetchErrorKind string

// Fetch failure kinds.
const (
	KindInvalidURL     FetchErrorKind = "invalid_url"
	KindInsecureURL    FetchErrorKind = "insecure_url"
	KindDNS            FetchErrorKind = "dns"
	KindRefused        FetchErrorKind = "refused"
	KindTimeout        FetchErrorKind = "timeout"
	KindBlockedAddress FetchErrorKind = "blocked_address"
	KindTLS            FetchErrorKind = "tls"
	KindHTTPStatus     FetchErrorKind = "http_status"
	KindNotJSON        FetchErrorKind = "not_json"
	KindTooLarge       FetchErrorKind = "too_large"
	KindRedirects      FetchErrorKind = "redirects"
	KindNetwork        FetchErrorKind = "network"
	// KindCanceled: the caller's context was canceled (not the fetch's own deadline).
	KindCanceled FetchErrorKind = "canceled"
)

// FetchError is a card that could not be fetched. Error is for logs; Explain is for the tenant.
type FetchError struct {
	Kind FetchErrorKind
	// URL is the URL of the reported attempt: the pasted URL when it and the well-known paths
	// under it were all not there; the last well-known path when an origin's both were not;
	// otherwise the attempt that failed. For KindInvalidURL it is the pasted text with any
	// userinfo replaced (RedactURL).
	URL string
	// StatusCode is the HTTP status for KindHTTPStatus (and the status of the response that
	// was refused for KindNotJSON and KindTooLarge), else 0.
	StatusCode int
	Err        error
	// Tried lists every URL attempted, in order (two for an origin, up to three for a path).
	Tried []string
}

// Error reads `fetch card "URL": why`. It is for logs: why may hold transport details (a
// resolver's address, a local port) that Explain leaves out. URLs are shown without userinfo.
func (e *FetchError) Error() string {
	msg := fmt.Sprintf("fetch card %q: %v", RedactURL(e.URL), e.Err)
	if len(e.Tried) > 1 {
		msg += " (tried " + strings.Join(redactAll(e.Tried), ", ") + ")"
	}
	return msg
}

// Unwrap returns the cause.
func (e *FetchError) Unwrap() error { return e.Err }

var (
	errNotJSON  = errors.New("response is not JSON")
	errTooLarge = errors.New("card is too large")
)

// A2AVersionHeader is the request header that names the A2A version a client speaks. Cards are
// fetched with A2A-Version: 1.0, so servers that speak both generations show their 1.0 face
// (@a2a-js/sdk with legacy compat answers 0.3 cards to requests without it).
const A2AVersionHeader = "A2A-Version"

// Fetch GETs the card at cardURL. A bare origin (no path or "/", no query) is discovered: first
// /.well-known/agent-card.json, then /.well-known/agent.json. Any other URL is fetched as it is,
// and when it does not answer a card (see the package doc), {url}/.well-known/agent-card.json and
// {url}/.well-known/agent.json are tried too, because SDKs mount agents under a path prefix.
// Failures are *FetchError.
func (f *Fetcher) Fetch(ctx context.Context, cardURL string) (got Fetched, err error) {
	return f.FetchAuth(ctx, cardURL, nil)
}

// Auth gives what authorizes a request with a registration's credentials: headers
// (Authorization, an API key) or a signature over the request (AWS SigV4), made again for
// every request.
type Auth func(ctx context.Context) (reqauth.Func, error)

// FetchAuth is Fetch for a card behind authentication: when a URL answers 401 or 403 and auth
// is not nil, it is fetched again authorized by auth (asked for once, on the first refusal),
// and so is every URL after it. Google's card endpoints work this way. The credentials are
// never sent unasked: an open card never sees them. An auth failure leaves the refusal as the
// answer.
func (f *Fetcher) FetchAuth(ctx context.Context, cardURL string, auth Auth) (got Fetched, err error) {
	ctx, span := f.obs.startFetch(ctx, cardURL)
	defer func() { endFetch(span, got, err) }()
	return f.fetch(ctx, cardURL, auth)
}

// refused reports a 401 or 403 answer.
func refused(err error) bool {
	fe, ok := errors.AsType[*FetchError](err)
	return ok && fe.Kind == KindHTTPStatus && (fe.StatusCode == http.StatusUnauthorized || fe.StatusCode == http.StatusForbidden)
}

// Well-known card paths: A2A 0.3 and 1.0, then 0.2.
const (
	wellKnownCard    = "/.well-known/agent-card.json"
	wellKnownCardOld = "/.well-known/agent.json"
)

func (f *Fetcher) fetch(ctx context.Context, cardURL string, auth Auth) (Fetched, error) {
	u, ferr := f.parseCardURL(cardURL)
	if ferr != nil {
		return Fetched{}, ferr
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()

	origin := (u.Path == "" || u.Path == "/") && u.RawQuery == ""
	var candidates []string
	if origin {
		base := *u
		base.Path, base.RawPath = "", ""
		candidates = []string{base.String() + wellKnownCard, base.String() + wellKnownCardOld}
	} else {
		candidates = append([]string{u.String()}, underPrefix(u)...)
	}

	var (
		tried    []string
		failures []*FetchError
		notCard  *Fetched // the pasted URL answered JSON that is not a card
		authz    reqauth.Func
	)
	for i, c := range candidates {
		tried = append(tried, c)
		got, err := f.get(ctx, c, authz)
		if authz == nil && auth != nil && refused(err) {
			if a, aerr := auth(ctx); aerr == nil && a != nil {
				authz = a
				got, err = f.get(ctx, c, authz)
			}
		}
		if err == nil {
			if !origin && i == 0 && len(candidates) > 1 && !looksLikeCard(got.Raw) {
				notCard = &got
				continue
			}
			return got, nil
		}
		var fe *FetchError
		if !errors.As(err, &fe) {
			fe = &FetchError{Kind: KindNetwork, URL: c, Err: err}
		}
		// The pasted URL may be the agent's JSON-RPC endpoint or an app page, which answer GET
		// with any 4xx; a well-known path that is not there answers 404 or 410, or the app's
		// catch-all HTML page. Anything else (timeouts, 5xx, TLS, blocked addresses, a card too
		// large) is a real answer about where the card is, and is returned at once.
		notThere := fe.Kind == KindNotJSON ||
			(fe.Kind == KindHTTPStatus && (fe.StatusCode == http.StatusNotFound || fe.StatusCode == http.StatusGone)) ||
			(!origin && i == 0 && fe.Kind == KindHTTPStatus && fe.StatusCode >= 400 && fe.StatusCode < 500)
		if !notThere || ctx.Err() != nil {
			fe.Tried = tried
			return Fetched{}, fe
		}
		failures = append(failures, fe)
	}
	if notCard != nil {
		// Nothing better under the prefix: the pasted URL's answer is validated as it is, and
		// its problems say what is wrong with it.
		return *notCard, nil
	}
	// Every candidate was "not there": report the URL the tenant pasted (or, for an origin, the
	// last well-known path, as before), naming every URL tried.
	fe := failures[len(failures)-1]
	if !origin {
		fe = failures[0]
	}
	fe.Tried = tried
	return Fetched{}, fe
}

// underPrefix are the well-known card URLs under the path of a pasted URL that is not a card
// itself: https://host/agents/x -> https://host/agents/x/.well-known/agent-card.json and
// .../agent.json. The query is kept (it may carry an access token); a pasted well-known URL has
// none.
func underPrefix(u *url.URL) []string {
	p := strings.TrimSuffix(u.Path, "/")
	if strings.HasSuffix(p, wellKnownCard) || strings.HasSuffix(p, wellKnownCardOld) {
		return nil
	}
	out := make([]string, 0, 2)
	for _, wk := range []string{wellKnownCard, wellKnownCardOld} {
		c := *u
		c.Path, c.RawPath = p+wk, ""
		if u.RawPath != "" {
			c.RawPath = strings.TrimSuffix(u.RawPath, "/") + wk
		}
		out = append(out, c.String())
	}
	return out
}

// looksLikeCard reports whether a fetched body is a JSON object with at least one member every
// agent card has, so that a JSON-RPC endpoint's error answer to GET is not taken for a card.
func looksLikeCard(body []byte) bool {
	body = bytes.TrimPrefix(body, byteOrderMark)
	if !json.Valid(body) {
		// Served as JSON but broken: it is what is there; cardcheck says why.
		return true
	}
	obj, ok := jsonObject(body)
	if !ok {
		return false
	}
	for _, k := range []string{"name", "skills", "url", "supportedInterfaces", "capabilities", "protocolVersion"} {
		if _, ok := obj[k]; ok {
			return true
		}
	}
	return false
}

func (f *Fetcher) parseCardURL(cardURL string) (*url.URL, *FetchError) {
	s := strings.TrimSpace(cardURL)
	u, err := CheckURL(s)
	if err != nil {
		return nil, &FetchError{Kind: KindInvalidURL, URL: RedactURL(s), Err: err}
	}
	u.Fragment, u.RawFragment = "", ""
	if strings.EqualFold(u.Scheme, "http") && !f.allowInsecure {
		return nil, &FetchError{Kind: KindInsecureURL, URL: s, Err: fmt.Errorf("plain http is not allowed, use https: %w", netguard.ErrInsecureURL)}
	}
	return u, nil
}

// get fetches one URL, authorized by authz when it is not nil.
func (f *Fetcher) get(ctx context.Context, target string, authz reqauth.Func) (Fetched, error) {
	req, err := http.NewRequestWithContext(reqauth.With(ctx, authz, nil), http.MethodGet, target, nil)
	if err != nil {
		// CheckURL passed the URL this one derives from, so this is not expected; the cause
		// stays for the log, and Explain does not show it.
		return Fetched{}, &FetchError{Kind: KindInvalidURL, URL: target, Err: fmt.Errorf("%w (%v)", urlUnparsable, err)}
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "a2a-connector-cardfetch")
	req.Header.Set(A2AVersionHeader, "1.0")
	client := f.client
	if authz != nil {
		before := req.Header.Clone()
		if err := reqauth.Apply(req); err != nil {
			return Fetched{}, &FetchError{Kind: KindNetwork, URL: target, Err: fmt.Errorf("authorize: %w", err)}
		}
		var added []string // what carries the credential
		for k, v := range req.Header {
			if !slices.Equal(before[k], v) {
				added = append(added, k)
			}
		}
		// Go drops Authorization on a redirect to another host, but not an API key header
		// or X-Amz-Security-Token: no credential follows a redirect off the host it was meant
		// for. On the same host, a signature covers the old URL: it is made again.
		c := *f.client
		check := c.CheckRedirect
		c.CheckRedirect = func(next *http.Request, via []*http.Request) error {
			if next.URL.Host != via[0].URL.Host {
				for _, k := range added {
					next.Header.Del(k)
				}
			} else if err := reqauth.Apply(next); err != nil {
				return fmt.Errorf("authorize: %w", err)
			}
			if check != nil {
				return check(next, via)
			}
			return nil
		}
		client = &c
	}
	resp, err := client.Do(req)
	if err != nil {
		kind := classify(ctx, err)
		// *url.Error repeats method and URL, which FetchError.Error already names.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if kind == KindTimeout {
			err = fmt.Errorf("no answer within %s: %w", f.timeout, err)
		}
		return Fetched{}, &FetchError{Kind: kind, URL: target, Err: err}
	}
	defer resp.Body.Close()
	resolved := target
	if resp.Request != nil && resp.Request.URL != nil {
		resolved = resp.Request.URL.String()
	}
	fail := func(kind FetchErrorKind, err error) (Fetched, error) {
		return Fetched{}, &FetchError{Kind: kind, URL: resolved, StatusCode: resp.StatusCode, Err: err}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fail(KindHTTPStatus, fmt.Errorf("HTTP status %s", resp.Status))
	}
	ct := resp.Header.Get("Content-Type")
	mt, _, perr := mime.ParseMediaType(ct)
	if ct != "" && perr != nil {
		return fail(KindNotJSON, fmt.Errorf("%w: unreadable Content-Type %q", errNotJSON, ct))
	}
	jsonType := mt == "application/json" || strings.HasSuffix(mt, "+json")
	lenient := mt == "" || mt == "text/plain"
	if !jsonType && !lenient {
		return fail(KindNotJSON, fmt.Errorf("%w: Content-Type is %q; serve the card as application/json", errNotJSON, mt))
	}
	if resp.ContentLength > f.maxBytes {
		return fail(KindTooLarge, fmt.Errorf("%w: %d bytes, at most %d accepted", errTooLarge, resp.ContentLength, f.maxBytes))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.maxBytes+1))
	if err == nil && ctx.Err() != nil {
		// The read can race the deadline and see a clean end of a body the server cut short
		// because we went away; a body that ends at our deadline is not a whole card.
		err = ctx.Err()
	}
	if err != nil {
		kind := classify(ctx, err)
		if kind == KindTimeout {
			return fail(kind, fmt.Errorf("body not complete within %s: %w", f.timeout, err))
		}
		return fail(kind, fmt.Errorf("read body: %w", err))
	}
	if int64(len(body)) > f.maxBytes {
		return fail(KindTooLarge, fmt.Errorf("%w: more than %d bytes", errTooLarge, f.maxBytes))
	}
	if lenient && !looksLikeJSONObject(body) {
		return fail(KindNotJSON, fmt.Errorf("%w: Content-Type is %q and the body is not a JSON object; serve the card as application/json", errNotJSON, ct))
	}
	return Fetched{ResolvedURL: resolved, Raw: body}, nil
}

// byteOrderMark is skipped before a body is looked at: Windows tools write it, and cardcheck
// skips it too.
var byteOrderMark = []byte("\xef\xbb\xbf")

// looksLikeJSONObject reports whether body parses as one JSON object.
func looksLikeJSONObject(body []byte) bool {
	_, ok := jsonObject(bytes.TrimPrefix(body, byteOrderMark))
	return ok
}

// jsonObject decodes body when it is exactly one JSON object, keeping its members' values raw.
func jsonObject(body []byte) (map[string]json.RawMessage, bool) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
		return nil, false
	}
	return obj, true
}

// classify maps a transport error to a kind. ctx is the fetch's own context, to tell its
// deadline from the caller's cancellation. What the transport's error means is
// internal/neterr's, shared with the agent calls.
func classify(ctx context.Context, err error) FetchErrorKind {
	switch {
	case errors.Is(err, netguard.ErrBlockedAddress):
		return KindBlockedAddress
	case errors.Is(err, netguard.ErrInsecureURL):
		return KindInsecureURL
	case errors.Is(err, netguard.ErrTooManyRedirects):
		return KindRedirects
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return KindTimeout
	case errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled):
		return KindCanceled
	}
	switch neterr.Classify(err) {
	case neterr.NoSuchHost, neterr.DNS:
		return KindDNS
	case neterr.Refused:
		return KindRefused
	case neterr.TLS:
		return KindTLS
	case neterr.Timeout:
		return KindTimeout
	}
	return KindNetwork // reset, closed, unreachable, other
}

// FetchAndValidate fetches the card and has the Checker judge it. A fetch failure is a *FetchError and the
// Report is empty; otherwise the error is nil whatever the report says. Each call is counted in
// a2ac.card.fetches by result.
func (f *Fetcher) FetchAndValidate(ctx context.Context, cardURL string) (Fetched, cardcheck.Report, error) {
	return f.FetchAndValidateAuth(ctx, cardURL, nil)
}

// FetchAndValidateAuth is FetchAndValidate fetching as FetchAuth does.
func (f *Fetcher) FetchAndValidateAuth(ctx context.Context, cardURL string, auth Auth) (Fetched, cardcheck.Report, error) {
	got, err := f.FetchAuth(ctx, cardURL, auth)
	if err != nil {
		kind := KindNetwork
		var fe *FetchError
		if errors.As(err, &fe) {
			kind = fe.Kind
		}
		f.obs.count(ctx, string(kind))
		return Fetched{}, cardcheck.Report{}, err
	}
	return got, f.withSignatures(ctx, got.Raw, f.validateObserved(ctx, got.Raw, got.ResolvedURL)), nil
}
