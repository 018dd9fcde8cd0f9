package a2aclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/a2a"

	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/a2a-connector/a2a-connector/internal/a2a/sse"
)

// Stream is the answer to message/stream or tasks/resubscribe: a sequence of Events read with
// Next. See the package doc for its contract.
type Stream struct {
	call   call
	method string

	body   io.ReadCloser // nil once a JSON answer was read whole
	sse    *sse.Reader   // nil for a JSON answer
	single a2a.Event     // the one event of a JSON answer, until Next returns it
	// recv yields the events of a gRPC stream (nil otherwise); onRelease returns its pooled
	// connection.
	recv      func() (a2a.Event, error)
	onRelease func()

	cancel context.CancelCauseFunc
	cause  func() error // context.Cause of the request's context

	timer *time.Timer // nil when StreamOptions set no limit
	first time.Duration
	idle  time.Duration
	// start is the monotonic origin of lastProgress.
	start time.Time
	// lastProgress is when event bytes last arrived, in nanoseconds since start (+1, so that
	// 0 means "none yet"). Written by the reading goroutine, read by the timer.
	lastProgress atomic.Int64
	closed       atomic.Bool
	cleanOnce    sync.Once

	events int   // owned by Next's goroutine
	err    error // sticky, owned by Next's goroutine
}

func (c *Client) stream(ctx context.Context, ep Endpoint, op Op, params any, so StreamOptions) (*Stream, error) {
	cl, err := c.newCall(ep, op)
	if err != nil {
		return nil, err
	}
	reqCtx, cancel := context.WithCancelCause(ctx)
	method := cl.method
	s := &Stream{
		call:   cl,
		method: method,
		cancel: cancel,
		cause:  func() error { return context.Cause(reqCtx) },
		first:  so.FirstEventTimeout,
		idle:   so.IdleTimeout,
		start:  time.Now(),
	}
	if s.first <= 0 {
		s.first = s.idle
	}
	if s.first > 0 {
		s.timer = time.AfterFunc(s.first, s.onTimer)
	}

	if ep.Binding == BindingGRPC {
		return c.grpcStream(reqCtx, ep, cl, params, s)
	}
	resp, err := c.doREST(reqCtx, ep, &cl, params, "text/event-stream")
	if err != nil {
		s.release()
		return nil, err
	}
	s.call = cl
	switch mt := mediaType(resp.Header); {
	case mt == "text/event-stream":
		s.body = resp.Body
		s.sse = sse.NewReader(resp.Body, c.opts.MaxEventBytes)
		if s.timer != nil {
			s.sse.SetProgress(s.markProgress)
		}
		return s, nil
	case isJSONType(mt):
		// A JSON body instead of a stream is one JSON-RPC answer, most often an error.
		return c.singleAnswer(reqCtx, s, resp)
	default:
		resp.Body.Close()
		s.release()
		return nil, unexpectedType(method, mt)
	}
}

// singleAnswer reads a JSON body that came instead of a stream: one JSON-RPC answer, most often
// an error. (Apart from stream so that its frame is not on the stack of every streaming turn.)
func (c *Client) singleAnswer(ctx context.Context, s *Stream, resp *http.Response) (*Stream, error) {
	body, err := c.readBody(ctx, s.method, resp.Body)
	resp.Body.Close()
	if err != nil {
		s.release()
		return nil, err
	}
	ev, err := s.call.decode(body)
	if err != nil {
		s.release()
		return nil, err
	}
	s.single = ev
	if s.timer != nil {
		s.timer.Stop()
	}
	return s, nil
}

// markProgress records that event bytes arrived. It is called by the reading goroutine for
// every event line, so it only stores a time; the timer decides later.
func (s *Stream) markProgress() {
	s.lastProgress.Store(int64(time.Since(s.start)) + 1)
}

// onTimer runs on the timer's goroutine when a limit may have run out. When event bytes arrived
// since it was armed, it re-arms itself for the rest of the idle limit; otherwise it cancels the
// request, which makes a blocked read return at once, with a cause that Next reports.
func (s *Stream) onTimer() {
	if s.closed.Load() {
		return
	}
	last := s.lastProgress.Load()
	if last == 0 {
		s.cancel(fmt.Errorf("no event within %s: %w", s.first, ErrFirstEventTimeout))
		return
	}
	if s.idle <= 0 {
		return // the first event came; no idle limit applies after it
	}
	silent := time.Since(s.start) - time.Duration(last-1)
	if silent < s.idle {
		s.timer.Reset(s.idle - silent)
		return
	}
	s.cancel(fmt.Errorf("nothing of an event for %s: %w", s.idle, ErrIdleTimeout))
}

// Next returns the next event. It returns io.EOF (unwrapped) when the agent ended the stream
// cleanly, and otherwise an error as described in the package doc. Errors are sticky. Next must
// not be called from two goroutines at once.
func (s *Stream) Next() (a2a.Event, error) {
	if s.err != nil {
		return nil, s.err
	}
	if s.closed.Load() {
		s.err = fmt.Errorf("a2a %s: %w", s.method, errStreamClosed)
		return nil, s.err
	}
	if s.recv != nil {
		ev, err := s.recv()
		if err != nil {
			if err != io.EOF {
				if cause := s.cause(); cause != nil && !errors.Is(err, cause) {
					err = fmt.Errorf("a2a %s: %w", s.method, cause)
				}
			}
			return nil, s.fail(err)
		}
		s.gotEvent()
		return ev, nil
	}
	if s.sse == nil {
		if s.single != nil {
			ev := s.single
			s.single = nil
			s.events++
			return ev, nil
		}
		return nil, s.fail(io.EOF)
	}
	for {
		raw, err := s.sse.Next()
		if err != nil {
			return nil, s.fail(s.readError(err))
		}
		ev, err := s.decode(raw)
		if err != nil {
			return nil, s.fail(err)
		}
		if ev == nil {
			continue
		}
		s.gotEvent()
		return ev, nil
	}
}

// gotEvent counts an event; after the first, the idle limit applies: the timer is re-armed once
// for it (later events only record progress).
func (s *Stream) gotEvent() {
	s.events++
	if s.events == 1 && s.timer != nil {
		if s.idle > 0 {
			s.timer.Reset(s.idle)
		} else {
			s.timer.Stop()
		}
	}
}

// EventsRead returns how many events Next has returned. Callers use it to tell "failed before
// anything was processed" (safe to fall back to another endpoint) from a stream cut short.
func (s *Stream) EventsRead() int { return s.events }

// Close ends the stream and releases its connection and timer. It may be called at any time from
// any goroutine, any number of times; a Next blocked in another goroutine returns an error.
func (s *Stream) Close() error {
	s.closed.Store(true)
	s.release()
	return nil
}

func (s *Stream) release() {
	s.cleanOnce.Do(func() {
		if s.timer != nil {
			s.timer.Stop()
		}
		s.cancel(errStreamClosed)
		if s.body != nil {
			s.body.Close()
		}
		if s.onRelease != nil {
			s.onRelease()
		}
	})
}

func (s *Stream) fail(err error) error {
	s.err = err
	s.release()
	return err
}

// readError explains a failed read: a timer, ctx or Close ended the request (the cause says
// which), the stream ended, or the connection broke.
func (s *Stream) readError(err error) error {
	if cause := s.cause(); cause != nil {
		return fmt.Errorf("a2a %s: %w", s.method, cause)
	}
	if errors.Is(err, io.EOF) {
		return io.EOF
	}
	var tooLarge *sse.TooLargeError
	if errors.As(err, &tooLarge) {
		return withMethod(s.method, &a2a.ProtocolError{Kind: a2a.ProtocolEventTooLarge, Detail: tooLarge.Error()})
	}
	return fmt.Errorf("a2a %s: read event stream: %w", s.method, err)
}

// decode turns one SSE event into an Event; (nil, nil) means the event is to be skipped.
func (s *Stream) decode(raw sse.Event) (a2a.Event, error) {
	if trimmedEmpty(raw.Data) {
		return nil, nil
	}
	switch raw.Type {
	case "", "message":
		return s.call.decode(raw.Data)
	case "error":
		return nil, s.errorEvent(raw.Data)
	default:
		if s.call.rest {
			// ping and other named events: skipped unless they carry an A2A object.
			ev, err := s.call.decode(raw.Data)
			if _, isProtocol := err.(*a2a.ProtocolError); isProtocol {
				return nil, nil
			}
			return ev, err
		}
		// ping and other named events: skipped unless they carry a JSON-RPC answer.
		var probe struct {
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if jsonv1.Unmarshal(raw.Data, &probe) != nil || (!present(probe.Result) && !present(probe.Error)) {
			return nil, nil
		}
		return s.call.decode(raw.Data)
	}
}

// errorEvent interprets the data of an "event: error": a JSON-RPC response with an error, a bare
// JSON-RPC error object, or junk.
func (s *Stream) errorEvent(data []byte) error {
	if s.call.rest {
		if e, ok := s.call.restError(data, 0); ok {
			return e
		}
		return &a2a.ProtocolError{Method: s.method, Kind: a2a.ProtocolErrorEvent, Detail: "error event data " + quoteShort(string(data))}
	}
	var probe struct {
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
		Code    json.RawMessage `json:"code"`
		Message json.RawMessage `json:"message"`
	}
	if jsonv1.Unmarshal(data, &probe) == nil {
		switch {
		case present(probe.Error):
			if _, err := decodeEnvelope(s.method, data, s.call.id); err != nil {
				return err
			}
		case present(probe.Code) || present(probe.Message):
			var e a2a.RPCError
			if jsonv1.Unmarshal(data, &e) == nil {
				e.Method = s.method
				return &e
			}
		}
	}
	return &a2a.ProtocolError{Method: s.method, Kind: a2a.ProtocolErrorEvent, Detail: "error event data " + quoteShort(string(data))}
}
