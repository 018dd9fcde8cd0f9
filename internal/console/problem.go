package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/cardfetch"
)

// problemDoc is an RFC 9457 problem document with the extension members this API adds:
// code (stable machine word), problems (card validation findings), reason (why a card could
// not be fetched).
type problemDoc struct {
	Type     string              `json:"type"`
	Title    string              `json:"title"`
	Status   int                 `json:"status"`
	Detail   string              `json:"detail,omitempty"`
	Code     string              `json:"code"`
	Reason   string              `json:"reason,omitempty"`
	Problems []connector.Problem `json:"problems,omitempty"`
}

// apiError is an error that already knows its HTTP shape.
type apiError struct {
	status   int
	code     string
	detail   string
	reason   string
	problems []connector.Problem
}

func (e *apiError) Error() string { return e.code + ": " + e.detail }

var (
	errUnauthenticated = &apiError{status: http.StatusUnauthorized, code: "unauthenticated", detail: "A valid bearer token is required."}
	errNoRoute         = &apiError{status: http.StatusNotFound, code: "not_found", detail: "No such endpoint."}
)

func badRequest(format string, args ...any) error {
	return &apiError{status: http.StatusBadRequest, code: "bad_request", detail: fmt.Sprintf(format, args...)}
}

func cardInvalid(problems []connector.Problem) error {
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

// writeError is the one table from errors to HTTP problems.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var (
		api *apiError
		fe  *cardfetch.FetchError
		mbe *http.MaxBytesError
	)
	switch {
	case errors.As(err, &api):
	case errors.As(err, &mbe):
		api = &apiError{status: http.StatusRequestEntityTooLarge, code: "too_large",
			detail: fmt.Sprintf("The request body is larger than %d bytes.", mbe.Limit)}
	case errors.As(err, &fe):
		detail := fe.Error()
		if fe.Kind == cardfetch.KindBlockedAddress {
			// netguard's own message names the internal address and the operator's setting;
			// a tenant gets the rule instead.
			detail = "The card URL resolves to a private, loopback or otherwise reserved network address; the platform only calls public addresses."
		}
		api = &apiError{status: http.StatusBadGateway, code: "card_unreachable", reason: string(fe.Kind), detail: detail}
	case errors.Is(err, connector.ErrNotFound):
		api = &apiError{status: http.StatusNotFound, code: "not_found", detail: "No such resource."}
	case errors.Is(err, connector.ErrConflict):
		api = &apiError{status: http.StatusConflict, code: "conflict", detail: "An agent with this card URL is already registered for your tenant."}
	case errors.Is(err, connector.ErrInvalid):
		api = &apiError{status: http.StatusBadRequest, code: "bad_request", detail: err.Error()}
	case errors.Is(err, connector.ErrUnavailable):
		api = &apiError{status: http.StatusServiceUnavailable, code: "unavailable", detail: "A dependency is unavailable; try again."}
	default:
		api = &apiError{status: http.StatusInternalServerError, code: "internal", detail: "Internal error."}
	}
	if api.status >= 500 && api.code != "card_unreachable" {
		// Logged here, once, at the edge. The error text never holds an API key: keys are only
		// ever in request bodies, which are not part of any error.
		s.log.ErrorContext(r.Context(), "request failed", slog.String("method", r.Method),
			slog.String("path", r.URL.Path), slog.Any("error", err))
	}
	doc := problemDoc{
		Type:     "about:blank",
		Title:    http.StatusText(api.status),
		Status:   api.status,
		Detail:   api.detail,
		Code:     api.code,
		Reason:   api.reason,
		Problems: api.problems,
	}
	w.Header().Set("Content-Type", "application/problem+json")
	if api.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="a2a-connector"`)
	}
	w.WriteHeader(api.status)
	_ = json.NewEncoder(w).Encode(doc)
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(v)
}

// decode reads a JSON body strictly: one object, no unknown fields, within MaxBodyBytes.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return badRequest("The request body is not valid JSON for this endpoint: %v.", err)
	}
	if dec.More() {
		return badRequest("The request body must hold exactly one JSON object.")
	}
	return nil
}
