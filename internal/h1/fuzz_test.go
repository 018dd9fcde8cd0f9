package h1_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/h1"
)

// FuzzH1Response answers a first request with arbitrary bytes (in one TCP write, then, when
// fin, the server's close) and a second request with an exact answer carrying a nonce the
// input cannot know, over real loopback connections. Whatever the first bytes are (a response,
// several, part of one, chunked or not, a 408, garbage), the transport must not panic, must end
// each exchange within its context, and must answer the second request with exactly its own
// answer: nothing of the first exchange may reach it. Framing itself (chunked, trailers,
// Content-Length) is net/http's reader, exercised here through the same bytes; what is fuzzed
// is what h1 adds around it: the header cap, 1xx skipping, releasing and pooling connections,
// and, when closeEarly, finishing a body closed after its first read (drain) before pooling it.
func FuzzH1Response(f *testing.F) {
	needsSocketCheck(f)
	for _, seed := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirstHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray",
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n{\"result\":\"first\"}",
		"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n",
		"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n0\r\nX-Trailer: t\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nfirst\r\nffffffffffffffff\r\n",
		"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n10\r\ndata: {\"id\":1}\n\n\r\n0\r\n\r\nevent: error\ndata: {}\n\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n6\r\nsecond\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n6\r\nsecond\r\n0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray",
		"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nuntil close",
		"HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nfirst!",
		"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5\r\n\r\nfirst",
		"",
	} {
		f.Add([]byte(seed), false, false, false)
		f.Add([]byte(seed), true, true, false)
		f.Add([]byte(seed), false, false, true)
	}
	// A response of exactly netguard's read buffer, then a reply too many: the response ends
	// with the buffer, and the stray reply waits in the socket.
	head := "HTTP/1.1 200 OK\r\nContent-Length: 984\r\n\r\n"
	f.Add([]byte(head+strings.Repeat("x", 1024-len(head))+"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray"), false, true, false)
	f.Fuzz(func(t *testing.T, first []byte, fin, smallBuffer, closeEarly bool) {
		if len(first) > 4<<10 {
			// One write of a few KiB reaches the client whole on loopback: what follows a
			// response is there when the response ends, as with a server that writes both at
			// once. Later bytes race with the next request in any HTTP/1.1 client.
			return
		}
		nonce := make([]byte, 8)
		rand.Read(nonce)
		want := "second " + hex.EncodeToString(nonce)
		url := rawServer(t, func(_ int, c net.Conn) { serveFuzz(c, first, fin, want) })
		o := h1.Options{MaxResponseHeaderBytes: 1 << 10}
		if smallBuffer {
			o.ReadBufferSize = 1 << 10 // netguard's: more of what follows stays in the socket
		}
		tr := newTransport(t, o)

		// The first exchange may fail in any way, or hang until its context ends; bytes that
		// never complete a response end it only at its deadline.
		exchange(t, tr, url, "1", 50*time.Millisecond, closeEarly)
		resp, got, err := exchange(t, tr, url, "2", bound, false)
		if err != nil || resp.StatusCode != http.StatusOK || got != want {
			t.Fatalf("second request: %v, %q, %v; want 200 %q (first bytes %q, fin %v)", status(resp), got, err, want, first, fin)
		}
	})
}

// serveFuzz answers the first request (body "1") with first, closing the connection after it
// when fin, and the second (body "2") with want. It tells them apart by their bodies, not by
// connection order: a first request whose context ended before it connected may leave the
// second to be accepted first.
func serveFuzz(c net.Conn, first []byte, fin bool, want string) {
	br := bufio.NewReader(c)
	for {
		_, body, err := readRequest(br)
		if err != nil {
			return
		}
		if body == "1" {
			c.Write(first)
			if fin {
				return
			}
			continue
		}
		answer(c, want)
	}
}

// exchange sends one request (marked idempotent, as the agent calls are) and reads its answer
// with a context of timeout, or only its first read's worth when closeEarly. It fails the test
// if the transport outlives the context by bound.
func exchange(t *testing.T, tr http.RoundTripper, url, body string, timeout time.Duration, closeEarly bool) (*http.Response, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	type result struct {
		resp *http.Response
		body string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			done <- result{err: err}
			return
		}
		req.Header["Idempotency-Key"] = nil
		resp, err := tr.RoundTrip(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		var b []byte
		if closeEarly {
			p := make([]byte, 16)
			n, rerr := resp.Body.Read(p)
			b, err = p[:n], rerr
		} else {
			b, err = io.ReadAll(resp.Body)
		}
		resp.Body.Close()
		done <- result{resp, string(b), err}
	}()
	select {
	case r := <-done:
		return r.resp, r.body, r.err
	case <-time.After(timeout + bound):
		t.Fatalf("request %s still running %v after its context ended", body, bound)
		return nil, "", nil
	}
}

func status(resp *http.Response) string {
	if resp == nil {
		return "no response"
	}
	return resp.Status
}
