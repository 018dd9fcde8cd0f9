package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/agents"
	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
	"github.com/a2a-connector/a2a-connector/internal/credential"
	"github.com/a2a-connector/a2a-connector/internal/neterr"
)

// problemDoc is an RFC 9457 problem document with the extension members this API adds:
// code (stable machine word), field (the request member at fault, for 400s that name one),
// problems (card validation findings), reason (why a card could not be fetched), agentId (the
// agent that already has the card, for already_registered), cap and limit (the concurrent-turn
// cap that refused a test turn or a check, and its value, for too_many_turns).
type problemDoc struct {
	Type     string              `json:"type"`
	Title    string              `json:"title"`
	Status   int                 `json:"status"`
	Detail   string              `json:"detail,omitempty"`
	Code     string              `json:"code"`
	Field    string              `json:"field,omitempty"`
	Reason   string              `json:"reason,omitempty"`
	AgentID  string              `json:"agentId,omitempty"`
	Problems []connector.Problem `json:"problems,omitempty"`
	Cap      string              `json:"cap,omitempty"`
	Limit    int                 `json:"limit,omitempty"`
}

// apiError is an error that already knows its HTTP shape.
type apiError struct {
	status   int
	code     string
	field    string
	detail   string
	reason   string
	agentID  string
	problems []connector.Problem
	cap      connector.Cap
	limit    int
	// allow is the Allow header of a 405.
	allow string
}

func (e *apiError) Error() string { return e.code + ": " + e.detail }

var (
	errUnauthenticated = &apiError{status: http.StatusUnauthorized, code: "unauthenticated", detail: "A valid bearer token is required."}
	errNoRoute         = &apiError{status: http.StatusNotFound, code: "not_found", detail: "No such endpoint."}
	errNotFound        = &apiError{status: http.StatusNotFound, code: "not_found", detail: "No such resource."}
)

func badRequest(format string, args ...any) error {
	return &apiError{status: http.StatusBadRequest, code: "bad_request", detail: fmt.Sprintf(format, args...)}
}

func cardInvalid(problems []connector.Problem) *apiError {
	return &apiError{status: http.StatusUnprocessableEntity, code: "card_invalid",
		detail: "The agent card does not meet the platform's requirements; see problems.", problems: problems}
}

// authError hides whether a token is unknown or the store failed to find it, but not outages.
func authError(err error) error {
	if errors.Is(err, connector.ErrNotFound) {
		return errUnauthenticated
	}
	return err
}

// fetchProblem is the answer to a card that could not be fetched, split by whose fault it is.
//
//   - 400 invalid_url / insecure_url: the URL as typed can never be fetched (found before any
//     network call, or, for invalid_url, when a URL derived from it cannot be requested).
//   - 422 card_url_unusable: the URL leads nowhere a card could be, and the tenant must change
//     it: the host name does not exist (dns), it resolves to an address the SSRF guard refuses
//     (blocked_address), or its host answered a 4xx other than 408 and 429 (http_status: not
//     there, or not public).
//   - 502 card_unreachable: the agent's host, or the way to it, failed: refused connections,
//     timeouts, TLS, 5xx, 408/429, answers that are not a card, too many redirects, DNS that did
//     not answer.
//
// reason is FetchError.Kind. The detail is FetchError.Explain: the tenant's terms, never the
// transport's words (resolver or local addresses) nor the URL's userinfo.
func fetchProblem(fe *cardfetch.FetchError) *apiError {
	// invalid_url comes only from the tenant's text (or a URL derived from it); insecure_url
	// after an attempt is the host redirecting to plain http.
	if fe.Kind == cardfetch.KindInvalidURL || (fe.Kind == cardfetch.KindInsecureURL && len(fe.Tried) == 0) {
		return &apiError{status: http.StatusBadRequest, code: string(fe.Kind), field: "cardUrl", detail: fe.Explain()}
	}
	if tenantsURL(fe) {
		return &apiError{status: http.StatusUnprocessableEntity, code: "card_url_unusable", field: "cardUrl",
			reason: string(fe.Kind), detail: fe.Explain()}
	}
	return &apiError{status: http.StatusBadGateway, code: "card_unreachable", reason: string(fe.Kind), detail: fe.Explain()}
}

// tenantsURL reports whether a fetch failed because of the URL the tenant gave rather than a
// failing host.
func tenantsURL(fe *cardfetch.FetchError) bool {
	switch fe.Kind {
	case cardfetch.KindBlockedAddress:
		return true
	case cardfetch.KindDNS:
		// No such name is a typo; a resolver that did not answer is nobody's typo.
		return neterr.Classify(fe.Err) == neterr.NoSuchHost
	case cardfetch.KindHTTPStatus:
		return fe.StatusCode >= 400 && fe.StatusCode < 500 &&
			fe.StatusCode != http.StatusRequestTimeout && fe.StatusCode != http.StatusTooManyRequests
	}
	return false
}

// writeError is the one table from errors to HTTP problems. No answer carries an error's own
// text unless it was written for the client (apiError, FetchError.Explain): store and driver
// errors get a fixed sentence, and the log keeps the detail with the request's trace id.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var (
		api *apiError
		fe  *cardfetch.FetchError
		mbe *http.MaxBytesError
		dup *connector.DuplicateError
		ce  *agents.CardError
		re  *connector.RefusedError
		cfe *credential.FieldError
	)
	switch {
	case errors.As(err, &api):
	case errors.As(err, &ce):
		api = cardInvalid(ce.Problems)
	case errors.As(err, &cfe):
		api = credentialProblem(cfe)
	case errors.As(err, &dup):
		api = &apiError{status: http.StatusConflict, code: "already_registered", agentID: dup.AgentID,
			detail: alreadyRegistered(dup.AgentID)}
	case errors.As(err, &mbe):
		api = &apiError{status: http.StatusRequestEntityTooLarge, code: "too_large",
			detail: fmt.Sprintf("The request body is larger than %d bytes.", mbe.Limit)}
	case errors.As(err, &fe):
		api = fetchProblem(fe)
	case errors.As(err, &re):
		// Over a cap of this process: refused at once, never queued (internal/admission).
		api = &apiError{status: http.StatusTooManyRequests, code: "too_many_turns", cap: re.Cap, limit: re.Limit,
			detail: "Too many turns in flight: the " + re.Error() + ". Try again when some have ended."}
	case errors.Is(err, connector.ErrNotFound):
		api = errNotFound
	case errors.Is(err, connector.ErrConflict):
		api = &apiError{status: http.StatusConflict, code: "conflict", detail: "The request conflicts with something already stored."}
	case errors.Is(err, connector.ErrInvalid):
		// The store refused a value the edge let through: the edge's rules have a gap. The
		// client learns which request, the log which value and why.
		api = &apiError{status: http.StatusBadRequest, code: "bad_request", detail: "The request holds a value that cannot be stored."}
	case errors.Is(err, connector.ErrUnavailable):
		api = &apiError{status: http.StatusServiceUnavailable, code: "unavailable", detail: "A dependency is unavailable; try again."}
	default:
		api = &apiError{status: http.StatusInternalServerError, code: "internal", detail: "Internal error."}
	}
	switch {
	case fe != nil:
		// The tenant's agent, not us: a line with the transport's words (resolver, addresses)
		// the answer leaves out, but only the card URL's host, since its path or query may
		// hold a token.
		s.log.LogAttrs(r.Context(), slog.LevelInfo, "card fetch failed", slog.String("method", r.Method),
			slog.String("path", r.URL.Path), slog.Int("status", api.status), slog.String("reason", string(fe.Kind)),
			slog.String("card_host", cardHost(fe.URL)), slog.Int("attempts", max(1, len(fe.Tried))), slog.Any("error", fe.Err))
	case api.status >= 500 || errors.Is(err, connector.ErrInvalid):
		// Logged here, once, at the edge, with the trace id the context carries. The error text
		// never holds an API key: keys are only ever in request bodies, which are not part of
		// any error.
		s.log.ErrorContext(r.Context(), "request failed", slog.String("method", r.Method),
			slog.String("path", r.URL.Path), slog.Int("status", api.status), slog.Any("error", err))
	}
	doc := problemDoc{
		Type:     "about:blank",
		Title:    http.StatusText(api.status),
		Status:   api.status,
		Detail:   api.detail,
		Code:     api.code,
		Field:    api.field,
		Reason:   api.reason,
		AgentID:  api.agentID,
		Problems: api.problems,
		Cap:      string(api.cap),
		Limit:    api.limit,
	}
	w.Header().Set("Content-Type", "application/problem+json")
	switch api.status {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="a2a-connector"`)
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", api.allow)
	}
	w.WriteHeader(api.status)
	_ = json.NewEncoder(w).Encode(doc)
}

// alreadyRegistered is the detail of a 409 for a card the tenant has registered already.
func alreadyRegistered(agentID string) string {
	if agentID == "" {
		return "This agent is already registered for your tenant."
	}
	return "This agent is already registered for your tenant as agent " + agentID +
		" (the same card URL, or a URL that serves the same card); refresh or delete that one instead."
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(v)
}

// cardHost is the host (and port) of a card URL, "" when it has none.
func cardHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}
