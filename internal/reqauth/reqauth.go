// Package reqauth carries how a request to an agent is authorized when a header set once is not
// enough: a signature (AWS Signature Version 4) covers the method, URL, headers, body and time of
// the request it is on, so it is computed again for every attempt, by whoever sends it (the
// a2aclient retry loop, h1's re-sends, the card fetcher, gRPC's per-call credentials).
//
// The hook rides in the request's context, which every layer between the call and the wire
// already passes on. It refuses nothing and logs nothing: a Func's errors are its own.
package reqauth

import (
	"context"
	"net/http"
)

// Func authorizes one attempt of req by setting headers on it (the credential, a signature over
// the request). body is the request's whole body (nil: none); req.Body is not read. A Func must
// be safe for concurrent use.
type Func func(req *http.Request, body []byte) error

type key struct{}

type carried struct {
	f    Func
	body []byte
}

// With returns ctx carrying f, for the request whose body is body. f nil returns ctx.
func With(ctx context.Context, f Func, body []byte) context.Context {
	if f == nil {
		return ctx
	}
	return context.WithValue(ctx, key{}, carried{f: f, body: body})
}

// From returns the Func ctx carries and the body it was given for, or nil.
func From(ctx context.Context) (Func, []byte) {
	c, ok := ctx.Value(key{}).(carried)
	if !ok {
		return nil, nil
	}
	return c.f, c.body
}

// Apply authorizes req with the Func its context carries, if any, on a copy of its header (the
// header map of an earlier attempt may still be read by the transport that sent it). Senders
// call it right before each attempt.
func Apply(req *http.Request) error {
	f, body := From(req.Context())
	if f == nil {
		return nil
	}
	req.Header = req.Header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	return f(req, body)
}

// Header is the Func of a credential that is a fixed set of headers (an API key, a bearer
// token): it sets them on every attempt.
func Header(h http.Header) Func {
	return func(req *http.Request, _ []byte) error {
		for k, vs := range h {
			req.Header[k] = vs
		}
		return nil
	}
}
