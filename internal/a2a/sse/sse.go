// Package sse reads a Server-Sent Events stream (WHATWG "event stream" framing) into events,
// tolerant of what real A2A agents send and bounded whatever the input: at most one line and one
// event's data, each capped near the limit, are held at a time.
//
// Deviations from the standard, on purpose: a last event without the blank line before EOF is
// dispatched (agents close streams that way right after their final status); "id:" and "retry:"
// are ignored (the client never reconnects with Last-Event-ID). It knows nothing of JSON-RPC or
// A2A: what an event's data means is the caller's.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// TooLargeError is returned when an event's data or one line exceeds the Reader's limit.
type TooLargeError struct {
	Limit int // the Reader's maxEventBytes
}

func (e *TooLargeError) Error() string { return fmt.Sprintf("an event exceeds %d bytes", e.Limit) }

// Event is one dispatched Server-Sent Event.
type Event struct {
	// Type is the "event:" field; empty means the default type "message".
	Type string
	// Data is the data lines joined with "\n". It is only valid until the next call to Next.
	Data []byte
}

// linePrefixAllowance lets a "data: " line carry a full MaxEventBytes value.
const linePrefixAllowance = 16

// progressEvery is how many bytes of one long line count as progress on their own, so that a
// large event arriving slowly does not look like a silent agent.
const progressEvery = 4 << 10

// bufferSize is the reader's own buffer (see NewReader).
const bufferSize = 512

var utf8BOM = []byte("\xEF\xBB\xBF")

// Reader splits an event stream into events following the WHATWG rules, with the deviations
// described in the package doc. It holds at most one line and one event's data, each capped near
// its limit, whatever the input. It is not safe for concurrent use.
type Reader struct {
	br        *bufio.Reader
	max       int
	lineLimit int

	line      []byte
	data      []byte
	dataLines int
	eventType string

	// progress, when set (SetProgress), is called for every event line (not comments or blank
	// lines) and every progressEvery bytes within a long one: a caller's idle clock.
	progress func()

	started bool  // the first line (where a BOM may be) was seen
	lastCR  bool  // the previous line ended with CR: a following LF belongs to it
	err     error // sticky: once set, Next returns it
}

// NewReader returns a Reader of r whose events (and lines) may hold at most maxEventBytes of
// data.
func NewReader(r io.Reader, maxEventBytes int) *Reader {
	return &Reader{
		// Small: r is a response body, already buffered by the HTTP transport, so this buffer
		// saves no system calls, only copies; under 10,000 open streams its size is memory.
		br:        bufio.NewReaderSize(r, bufferSize),
		max:       maxEventBytes,
		lineLimit: maxEventBytes + linePrefixAllowance,
	}
}

// SetProgress makes the Reader call f for every event line it reads (not comments or blank
// lines, so keep-alive padding is not progress) and for every 4 KiB within a long line, so that a
// large event arriving slowly does not look like a silent peer.
func (r *Reader) SetProgress(f func()) { r.progress = f }

func (r *Reader) tooLarge() error {
	return &TooLargeError{Limit: r.max}
}

// Next returns the next event that has data. It returns io.EOF after the last one, a
// *TooLargeError for an oversized event, or the read error. Errors are sticky.
func (r *Reader) Next() (Event, error) {
	if r.err != nil {
		return Event{}, r.err
	}
	for {
		line, err := r.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && r.dataLines > 0 {
				// Agents close the stream right after their last event, sometimes without the
				// blank line; dropping it (as the standard says) would lose the final status.
				ev := r.dispatch()
				r.err = io.EOF
				return ev, nil
			}
			r.err = err
			return Event{}, err
		}
		if !r.started {
			r.started = true
			line = bytes.TrimPrefix(line, utf8BOM)
		}
		if len(line) > 0 && line[0] != ':' && r.progress != nil {
			r.progress()
		}
		if len(line) == 0 {
			if r.dataLines > 0 {
				return r.dispatch(), nil
			}
			r.eventType = ""
			continue
		}
		if line[0] == ':' {
			continue
		}
		name, value, found := bytes.Cut(line, []byte(":"))
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(name) {
		case "data":
			size := len(r.data) + len(value)
			if r.dataLines > 0 {
				size++
			}
			if size > r.max {
				r.err = r.tooLarge()
				return Event{}, r.err
			}
			if r.dataLines > 0 {
				r.data = append(r.data, '\n')
			}
			r.data = append(r.data, value...)
			r.dataLines++
		case "event":
			r.eventType = string(value)
		default:
			// "id:", "retry:" and unknown fields: nothing to do for a client that never
			// reconnects with Last-Event-ID.
		}
	}
}

// dispatch returns the pending event and clears the buffers. The returned Data aliases r.data,
// which the next line overwrites.
func (r *Reader) dispatch() Event {
	ev := Event{Type: r.eventType, Data: r.data}
	r.data = r.data[:0]
	r.dataLines = 0
	r.eventType = ""
	return ev
}

// lineRun takes the buffered bytes up to the next CR or LF into the line (or drops them, in a
// comment), calling progress at every progressEvery bytes of the line as the byte loop would.
// It returns the line's length after the run, or 0 when nothing was taken; a result over
// lineLimit means the line is too long (the run is not kept).
func (r *Reader) lineRun(comment bool) int {
	buf, _ := r.br.Peek(r.br.Buffered())
	if i := bytes.IndexAny(buf, "\r\n"); i >= 0 {
		buf = buf[:i]
	}
	if len(buf) == 0 {
		return 0
	}
	n := len(buf)
	if !comment {
		if len(r.line)+n > r.lineLimit {
			return len(r.line) + n
		}
		before := len(r.line)
		r.line = append(r.line, buf...)
		if r.progress != nil {
			for k := before/progressEvery + 1; k*progressEvery <= len(r.line); k++ {
				r.progress()
			}
		}
	}
	_, _ = r.br.Discard(n) // n bytes are buffered: Discard cannot fail
	return max(len(r.line), 1)
}

// readLine returns the next line without its terminator (LF, CRLF or CR). A comment line comes
// back as ":" alone, its content discarded unread into memory, so keep-alive padding costs
// nothing. A last line without a terminator is returned before io.EOF. A line over lineLimit is an
// event_too_large error.
func (r *Reader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	consumed := false
	comment := false
	for {
		// Once a line has begun, the ordinary bytes already buffered are taken as one run; the
		// byte loop below handles a line's first byte (comment, BOM, the LF of a CRLF) and its
		// terminator.
		if consumed {
			if n := r.lineRun(comment); n > 0 {
				if n > r.lineLimit {
					return nil, r.tooLarge()
				}
				continue
			}
		}
		b, err := r.br.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) && consumed {
				return r.line, nil
			}
			return nil, err
		}
		if r.lastCR {
			r.lastCR = false
			if b == '\n' {
				continue
			}
		}
		switch b {
		case '\n':
			return r.line, nil
		case '\r':
			r.lastCR = true
			return r.line, nil
		}
		if !consumed && b == ':' && r.started {
			comment = true
			r.line = append(r.line, ':')
		}
		consumed = true
		if comment {
			continue
		}
		if len(r.line) >= r.lineLimit {
			return nil, r.tooLarge()
		}
		r.line = append(r.line, b)
		if len(r.line)%progressEvery == 0 && r.progress != nil {
			r.progress()
		}
	}
}
