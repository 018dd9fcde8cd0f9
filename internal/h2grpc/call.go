package h2grpc

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// defaultMaxRecv is grpc-go's default for a received message (4 MiB).
const defaultMaxRecv = 4 << 20

// Invoke makes a unary call (grpc.ClientConnInterface).
func (tg *Target) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	s, err := tg.open(ctx, method, false, opts)
	if err != nil {
		return err
	}
	if err := s.SendMsg(args); err != nil && err != io.EOF {
		return err
	}
	if err := s.RecvMsg(reply); err != nil {
		if err == io.EOF {
			return status.Error(codes.Internal, "h2grpc: the server ended a unary call without a response message")
		}
		return err
	}
	// The status comes after the message.
	if err := s.RecvMsg(nil); err != io.EOF {
		if err == nil {
			return status.Error(codes.Internal, "h2grpc: the server sent more than one response message to a unary call")
		}
		return err
	}
	return nil
}

// NewStream starts a call whose requests and responses the caller sends and receives
// (grpc.ClientConnInterface). Only calls with one request message are supported: the server
// streaming calls of generated clients.
func (tg *Target) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	if desc.ClientStreams {
		return nil, status.Error(codes.Unimplemented, "h2grpc: client streaming calls are not supported")
	}
	return tg.open(ctx, method, true, opts)
}

// open takes a connection and prepares a call; nothing is written before SendMsg.
func (tg *Target) open(ctx context.Context, method string, streaming bool, opts []grpc.CallOption) (*stream, error) {
	s := &stream{tg: tg, ctx: ctx, method: method, maxRecv: defaultMaxRecv}
	for _, o := range opts {
		switch o := o.(type) {
		case grpc.MaxRecvMsgSizeCallOption:
			s.maxRecv = o.MaxRecvMsgSize
		case grpc.HeaderCallOption:
			s.headerAddr = o.HeaderAddr
		case grpc.TrailerCallOption:
			s.trailerAddr = o.TrailerAddr
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	return s, nil
}

// stream is one call on one connection, driven by its caller's goroutine.
type stream struct {
	tg      *Target
	ctx     context.Context
	method  string
	maxRecv int

	// mu guards c against the context hook (onDone), which may run at any time: while the
	// caller's goroutine does I/O on c (inIO), the hook closes c to end it; otherwise the hook
	// takes c, resets the stream and pools c.
	mu     sync.Mutex
	c      *conn
	inIO   bool
	done   bool // the hook ran: c is not the caller's any more
	reused bool
	stop   func() bool // unregisters the hook
	id     uint32
	// request is the framed request message, kept to send it again on a fresh connection when
	// a pooled one turns out to be dead before anything came back.
	request []byte
	sent    bool
	// framesRead counts frames read since the request was written.
	framesRead int

	sendWindow int64
	recvUnack  int64

	gotHeaders bool
	header     metadata.MD
	trailer    metadata.MD
	headerAddr *metadata.MD
	// trailerAddr receives the trailers when the call ends.
	trailerAddr *metadata.MD

	buf []byte // received message bytes not yet returned
	off int

	ended  bool
	endErr error // io.EOF for OK
	// broken: the connection failed (or its context hook closed it); refused: the server
	// refused the call unprocessed (GOAWAY before it, REFUSED_STREAM), so it may go again.
	broken, refused bool
	attempts        int
}

// SendMsg writes the call's headers and its one request message with END_STREAM.
func (s *stream) SendMsg(m any) error {
	if s.sent {
		return status.Error(codes.Internal, "h2grpc: only one request message is supported")
	}
	pm, ok := m.(proto.Message)
	if !ok {
		return status.Errorf(codes.Internal, "h2grpc: request %T is not a proto message", m)
	}
	body, err := proto.Marshal(pm)
	if err != nil {
		return status.Errorf(codes.Internal, "h2grpc: marshal request: %v", err)
	}
	s.request = make([]byte, 5+len(body))
	binary.BigEndian.PutUint32(s.request[1:5], uint32(len(body)))
	copy(s.request[5:], body)
	s.sent = true
	for {
		err := s.start()
		if err == nil {
			err = s.writeRequest()
		}
		if err == nil {
			return nil
		}
		if !s.retryable() {
			return s.fail(err)
		}
		s.abandon()
	}
}

// resend sends the call again on a fresh connection when that is safe (retryable), and
// reports whether it did.
func (s *stream) resend() bool {
	if !s.retryable() {
		return false
	}
	s.abandon()
	s.ended, s.endErr, s.refused = false, nil, false
	s.buf, s.off, s.gotHeaders = s.buf[:0], 0, false
	if err := s.start(); err != nil {
		s.ended, s.endErr = true, err
		return false
	}
	if err := s.writeRequest(); err != nil {
		s.ended, s.endErr = true, err
		return false
	}
	return true
}

// CloseSend does nothing: the request went out with END_STREAM.
func (s *stream) CloseSend() error { return nil }

// Context is the call's context.
func (s *stream) Context() context.Context { return s.ctx }

// Header returns the response headers, reading until they came.
func (s *stream) Header() (metadata.MD, error) {
	for !s.gotHeaders && !s.ended {
		if err := s.readFrame(); err != nil {
			return nil, err
		}
	}
	return s.header, nil
}

// Trailer returns the trailers once the call ended.
func (s *stream) Trailer() metadata.MD { return s.trailer }

// start takes a connection and hooks the call's context to it: when ctx ends, the connection
// is closed, which ends a blocked read or write at once (and the server sees the call gone).
func (s *stream) start() error {
	c, reused, err := s.tg.t.get(s.ctx, s.tg)
	if err != nil {
		if errors.Is(err, errClosed) {
			return status.Error(codes.Unavailable, err.Error())
		}
		if s.ctx.Err() != nil {
			return status.FromContextError(s.ctx.Err()).Err()
		}
		return status.Errorf(codes.Unavailable, "connection error: %v", err)
	}
	s.mu.Lock()
	s.c, s.reused, s.broken, s.done = c, reused, false, false
	s.mu.Unlock()
	s.attempts++
	s.stop = context.AfterFunc(s.ctx, s.onDone)
	c.nextID += 2
	if c.nextID == 2 {
		c.nextID = 1
	}
	s.id = c.nextID
	s.sendWindow = c.peerWindow
	s.framesRead = 0
	return nil
}

// writeRequest writes HEADERS and the request in DATA frames, within the flow-control windows.
func (s *stream) writeRequest() error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	c := s.c
	if err := s.writeHeaders(); err != nil {
		return err
	}
	rest := s.request
	for len(rest) > 0 {
		n := int64(len(rest))
		for min(s.sendWindow, c.sendWindow) <= 0 {
			// Wait for the server to open its window (our requests are small; rare).
			if err := c.bw.Flush(); err != nil {
				return s.connErr(err)
			}
			if err := s.readFrameLocked(); err != nil {
				return err
			}
			if s.ended {
				return nil // answered before it read the request: RecvMsg reports how
			}
		}
		n = min(n, s.sendWindow, c.sendWindow, int64(c.maxFrame))
		if err := c.fr.WriteData(s.id, int(n) == len(rest), rest[:n]); err != nil {
			return s.connErr(err)
		}
		s.sendWindow -= n
		c.sendWindow -= n
		rest = rest[n:]
	}
	if err := c.bw.Flush(); err != nil {
		return s.connErr(err)
	}
	return nil
}

// writeHeaders writes the request's HEADERS: the pseudo-headers, gRPC's own, the deadline and
// the outgoing metadata.
func (s *stream) writeHeaders() error {
	c, tg := s.c, s.tg
	c.hbuf.b = c.hbuf.b[:0]
	field := func(k, v string) { _ = c.henc.WriteField(hpack.HeaderField{Name: k, Value: v}) }
	scheme := "http"
	if tg.secure {
		scheme = "https"
	}
	field(":method", "POST")
	field(":scheme", scheme)
	field(":path", s.method)
	field(":authority", tg.authority)
	field("content-type", "application/grpc")
	field("user-agent", tg.t.o.UserAgent)
	field("te", "trailers")
	if d, ok := s.ctx.Deadline(); ok {
		field("grpc-timeout", encodeTimeout(time.Until(d)))
	}
	md, _ := metadata.FromOutgoingContext(s.ctx)
	for k, vs := range md {
		if reservedHeader(k) {
			continue
		}
		for _, v := range vs {
			if strings.HasSuffix(k, "-bin") {
				v = base64.RawStdEncoding.EncodeToString([]byte(v))
			}
			field(k, v)
		}
	}
	block := c.hbuf.b
	first := true
	for len(block) > 0 || first {
		n := min(len(block), int(c.maxFrame))
		frag, last := block[:n], n == len(block)
		var err error
		if first {
			err = c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s.id, BlockFragment: frag, EndHeaders: last})
		} else {
			err = c.fr.WriteContinuation(s.id, last, frag)
		}
		if err != nil {
			return s.connErr(err)
		}
		block, first = block[n:], false
	}
	return nil
}

// reservedHeader: headers the transport sets itself, which metadata may not override.
func reservedHeader(k string) bool {
	if strings.HasPrefix(k, ":") {
		return true
	}
	switch k {
	case "content-type", "user-agent", "te", "grpc-timeout", "grpc-encoding", "grpc-accept-encoding", "connection", "host":
		return true
	}
	return false
}

// RecvMsg reads the next response message into m, or returns io.EOF once the call ended with
// OK, or its status error. m nil asks only for the end.
func (s *stream) RecvMsg(m any) error {
	for {
		if msg, ok, err := s.nextMessage(); err != nil {
			return s.fail(err)
		} else if ok {
			if m == nil {
				return nil
			}
			pm, isProto := m.(proto.Message)
			if !isProto {
				return s.fail(status.Errorf(codes.Internal, "h2grpc: response %T is not a proto message", m))
			}
			if err := proto.Unmarshal(msg, pm); err != nil {
				return s.fail(status.Errorf(codes.Internal, "grpc: failed to unmarshal the received message: %v", err))
			}
			s.readBuffered()
			return nil
		}
		if s.ended {
			if s.off < len(s.buf) {
				return s.fail(status.Error(codes.Internal, "h2grpc: the stream ended inside a message"))
			}
			s.release(!s.broken)
			return s.endErr
		}
		if !s.sent {
			return status.Error(codes.Internal, "h2grpc: RecvMsg before SendMsg")
		}
		if err := s.readFrame(); err != nil {
			if s.resend() {
				continue
			}
			return s.fail(err)
		}
		if s.ended && s.refused && s.resend() {
			continue
		}
	}
}

// nextMessage cuts the next whole message out of the received bytes.
func (s *stream) nextMessage() ([]byte, bool, error) {
	b := s.buf[s.off:]
	if len(b) < 5 {
		return nil, false, nil
	}
	if b[0] != 0 {
		return nil, false, status.Error(codes.Internal, "grpc: compressed message received, and no compression was offered")
	}
	n := binary.BigEndian.Uint32(b[1:5])
	if int64(n) > int64(s.maxRecv) {
		return nil, false, status.Errorf(codes.ResourceExhausted, "grpc: received message larger than max (%d vs. %d)", n, s.maxRecv)
	}
	if len(b) < 5+int(n) {
		return nil, false, nil
	}
	s.off += 5 + int(n)
	msg := b[5 : 5+n]
	if s.off == len(s.buf) {
		s.buf, s.off = s.buf[:0], 0
	}
	return msg, true, nil
}

// readFrame reads one frame and acts on it.
func (s *stream) readFrame() error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	return s.readFrameLocked()
}

// readBuffered reads the frames that already arrived whole, without waiting for more: the
// trailers usually come with the last message, and then the call ends and its connection goes
// back to the pool now, before the caller stops reading.
func (s *stream) readBuffered() {
	if s.ended || s.enter() != nil {
		return
	}
	for !s.ended {
		br := s.c.br
		if br.Buffered() < 9 {
			break // Peek would wait for the socket
		}
		hdr, err := br.Peek(9)
		if err != nil || br.Buffered() < 9+(int(hdr[0])<<16|int(hdr[1])<<8|int(hdr[2])) {
			break
		}
		if s.readFrameLocked() != nil {
			break
		}
	}
	s.leave()
	if s.ended && s.off == len(s.buf) && !s.broken {
		s.release(true)
	}
}

// enter claims the connection for the caller's I/O; it fails once the context ended.
func (s *stream) enter() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || s.c == nil {
		s.broken = true
		if err := s.ctx.Err(); err != nil {
			return status.FromContextError(err).Err()
		}
		return status.Error(codes.Canceled, "h2grpc: the call was closed")
	}
	s.inIO = true
	return nil
}

func (s *stream) leave() {
	s.mu.Lock()
	s.inIO = false
	s.mu.Unlock()
}

// onDone is the context hook: the call's context ended. I/O in progress is ended by closing
// the connection (it is lost); otherwise the stream is reset (RST_STREAM CANCEL, unless it had
// ended) and the connection pooled, as when a turn stops reading after its last event.
func (s *stream) onDone() {
	s.mu.Lock()
	c := s.c
	if c == nil || s.done {
		s.mu.Unlock()
		return
	}
	s.done = true
	if s.inIO {
		s.mu.Unlock()
		c.close()
		return
	}
	s.c = nil
	ended, id := s.ended, s.id
	s.mu.Unlock()
	if !ended {
		c.nc.SetWriteDeadline(time.Now().Add(time.Second))
		err := c.fr.WriteRSTStream(id, http2.ErrCodeCancel)
		if err == nil {
			err = c.bw.Flush()
		}
		c.nc.SetWriteDeadline(time.Time{})
		if err != nil {
			c.close()
			return
		}
	}
	c.t.put(c)
}

// readFrameLocked is readFrame within enter and leave.
func (s *stream) readFrameLocked() error {
	c := s.c
	f, err := c.fr.ReadFrame()
	if err != nil {
		return s.connErr(err)
	}
	s.framesRead++
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if f.IsAck() {
			return nil
		}
		if err := f.ForeachSetting(func(st http2.Setting) error {
			switch st.ID {
			case http2.SettingInitialWindowSize:
				delta := int64(st.Val) - c.peerWindow
				c.peerWindow += delta
				s.sendWindow += delta
			case http2.SettingMaxFrameSize:
				c.maxFrame = st.Val
			}
			return nil
		}); err != nil {
			return s.connErr(err)
		}
		return s.flushAfter(c.fr.WriteSettingsAck())
	case *http2.PingFrame:
		if f.IsAck() {
			return nil
		}
		return s.flushAfter(c.fr.WritePing(true, f.Data))
	case *http2.WindowUpdateFrame:
		if f.StreamID == 0 {
			c.sendWindow += int64(f.Increment)
		} else if f.StreamID == s.id {
			s.sendWindow += int64(f.Increment)
		}
		return nil
	case *http2.GoAwayFrame:
		c.goAway, c.lastGoodID = true, f.LastStreamID
		if s.id > f.LastStreamID && !s.ended {
			// Not processed: safe to send again.
			s.ended, s.refused = true, true
			s.endErr = status.Errorf(codes.Unavailable, "the server is going away (%v) before this call", f.ErrCode)
		}
		return nil
	case *http2.RSTStreamFrame:
		if f.StreamID != s.id {
			return nil
		}
		s.ended, s.endErr, s.refused = true, rstError(f.ErrCode), f.ErrCode == http2.ErrCodeRefusedStream
		return nil
	case *http2.MetaHeadersFrame:
		if f.StreamID != s.id {
			return nil
		}
		return s.onHeaders(f)
	case *http2.DataFrame:
		if err := s.onData(f); err != nil {
			return err
		}
		return nil
	}
	return nil // PRIORITY, unknown frame types
}

// flushAfter flushes what an answer to the server wrote.
func (s *stream) flushAfter(err error) error {
	if err == nil {
		err = s.c.bw.Flush()
	}
	if err != nil {
		return s.connErr(err)
	}
	return nil
}

// onData keeps the message bytes of a DATA frame of this call and gives the server back its
// window once half of it is used.
func (s *stream) onData(f *http2.DataFrame) error {
	c := s.c
	n := int64(f.Length) // padding counts against the window too
	c.recvUnacked += n
	if f.StreamID == s.id && !s.ended {
		s.buf = append(s.buf, f.Data()...)
		s.recvUnack += n
		if f.StreamEnded() {
			s.ended, s.endErr = true, status.Error(codes.Internal, "server closed the stream without sending trailers")
		}
	}
	var err error
	wrote := false
	if c.recvUnacked >= c.recvWindow/2 {
		err, wrote = c.fr.WriteWindowUpdate(0, uint32(c.recvUnacked)), true
		c.recvUnacked = 0
	}
	if err == nil && s.recvUnack >= c.recvWindow/2 && !s.ended {
		err, wrote = c.fr.WriteWindowUpdate(s.id, uint32(s.recvUnack)), true
		s.recvUnack = 0
	}
	if err == nil && wrote {
		err = c.bw.Flush()
	}
	if err != nil {
		return s.connErr(err)
	}
	return nil
}

// onHeaders reads the response headers (the first HEADERS) and the trailers (the one that
// ends the stream; a response of trailers only is both).
func (s *stream) onHeaders(f *http2.MetaHeadersFrame) error {
	md := metadata.MD{}
	for _, hf := range f.RegularFields() {
		v := hf.Value
		if strings.HasSuffix(hf.Name, "-bin") {
			if b, err := decodeBin(v); err == nil {
				v = string(b)
			}
		}
		md[hf.Name] = append(md[hf.Name], v)
	}
	if !s.gotHeaders {
		s.gotHeaders = true
		s.header = md
		if s.headerAddr != nil {
			*s.headerAddr = md
		}
		if st := f.PseudoValue("status"); st != "200" {
			code, _ := strconv.Atoi(st)
			s.ended, s.endErr = true, status.Errorf(httpCode(code), "unexpected HTTP status code received from server: %d (%s)", code, http.StatusText(code))
			return nil
		}
		if ct := md.Get("content-type"); len(ct) == 0 || !strings.HasPrefix(ct[0], "application/grpc") {
			s.ended, s.endErr = true, status.Errorf(codes.Unknown, "unexpected content-type %q received from server", strings.Join(ct, ", "))
			return nil
		}
		if !f.StreamEnded() {
			return nil
		}
	}
	if !f.StreamEnded() {
		return status.Error(codes.Internal, "h2grpc: trailers that do not end the stream")
	}
	s.trailer = md
	if s.trailerAddr != nil {
		*s.trailerAddr = md
	}
	s.ended, s.endErr = true, trailerStatus(md)
	return nil
}

// trailerStatus is the call's end as the trailers say it: io.EOF for OK.
func trailerStatus(md metadata.MD) error {
	codeText := md.Get("grpc-status")
	if len(codeText) == 0 {
		return status.Error(codes.Unknown, "server closed the stream without a grpc-status")
	}
	n, err := strconv.Atoi(codeText[0])
	if err != nil {
		return status.Errorf(codes.Unknown, "malformed grpc-status %q", codeText[0])
	}
	code := codes.Code(n)
	if code == codes.OK {
		return io.EOF
	}
	msg := ""
	if m := md.Get("grpc-message"); len(m) > 0 {
		if u, err := url.PathUnescape(m[0]); err == nil {
			msg = u
		} else {
			msg = m[0]
		}
	}
	if d := md.Get("grpc-status-details-bin"); len(d) > 0 {
		p := &spb.Status{}
		if proto.Unmarshal([]byte(d[0]), p) == nil && codes.Code(p.GetCode()) == code {
			return status.FromProto(p).Err()
		}
	}
	return status.Error(code, msg)
}

// httpCode is grpc-go's mapping of a non-200 HTTP status to a gRPC code.
func httpCode(s int) codes.Code {
	switch s {
	case http.StatusBadRequest:
		return codes.Internal
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusForbidden:
		return codes.PermissionDenied
	case http.StatusNotFound:
		return codes.Unimplemented
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return codes.Unavailable
	}
	return codes.Unknown
}

// rstError is the status of a call the server reset, as grpc-go reads each HTTP/2 error code.
func rstError(code http2.ErrCode) error {
	switch code {
	case http2.ErrCodeRefusedStream:
		return status.Error(codes.Unavailable, "stream refused by the server (REFUSED_STREAM)")
	case http2.ErrCodeCancel:
		return status.Error(codes.Canceled, "stream terminated by RST_STREAM with error code: CANCEL")
	case http2.ErrCodeEnhanceYourCalm:
		return status.Error(codes.ResourceExhausted, "stream terminated by RST_STREAM with error code: ENHANCE_YOUR_CALM")
	case http2.ErrCodeInadequateSecurity:
		return status.Error(codes.PermissionDenied, "stream terminated by RST_STREAM with error code: INADEQUATE_SECURITY")
	}
	return status.Errorf(codes.Internal, "stream terminated by RST_STREAM with error code: %v", code)
}

func decodeBin(v string) ([]byte, error) {
	if len(v)%4 == 0 {
		return base64.StdEncoding.DecodeString(v)
	}
	return base64.RawStdEncoding.DecodeString(v)
}

// connErr is a failure of the connection itself: the call's context when it ended (its hook
// closed the connection), else UNAVAILABLE, as grpc-go reports a broken transport.
func (s *stream) connErr(err error) error {
	s.broken = true
	s.c.close()
	if ctxErr := s.ctx.Err(); ctxErr != nil {
		return status.FromContextError(ctxErr).Err()
	}
	if st, ok := status.FromError(err); ok {
		return st.Err()
	}
	return status.Errorf(codes.Unavailable, "connection error: %v", err)
}

// retryable: the call may be sent again on a fresh connection, once: the server refused it
// unprocessed, or it went out on a pooled connection and nothing came back since (the server
// had closed it while idle).
func (s *stream) retryable() bool {
	if s.attempts > 1 || s.ctx.Err() != nil {
		return false
	}
	return s.refused || (s.reused && s.framesRead == 0 && !s.gotHeaders)
}

// abandon closes the call's connection without returning it to the pool.
func (s *stream) abandon() {
	if c := s.take(); c != nil {
		c.close()
	}
	s.reused = false
}

// take unregisters the context hook and returns the connection, or nil when the hook has it
// (or had it).
func (s *stream) take() *conn {
	if s.stop != nil {
		s.stop()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.c
	if s.done {
		return nil
	}
	s.c = nil
	return c
}

// fail ends the call with err: its connection is closed (what is left of the stream is not
// read).
func (s *stream) fail(err error) error {
	if !s.ended {
		s.ended, s.endErr = true, err
	}
	s.release(false)
	return err
}

// release gives the connection back, to the pool when the call ended cleanly (reusable) and the
// context hook did not fire, otherwise closed.
func (s *stream) release(reusable bool) {
	c := s.take()
	if c == nil {
		return
	}
	if reusable && !c.goAway && c.nextID < 1<<30 {
		c.t.put(c)
		return
	}
	c.close()
}

// encodeTimeout writes a gRPC timeout: at most eight digits and a unit.
func encodeTimeout(d time.Duration) string {
	if d <= 0 {
		return "1n"
	}
	const max = 99999999
	for _, u := range []struct {
		unit time.Duration
		s    string
	}{{time.Nanosecond, "n"}, {time.Microsecond, "u"}, {time.Millisecond, "m"}, {time.Second, "S"}, {time.Minute, "M"}, {time.Hour, "H"}} {
		if v := d / u.unit; v <= max {
			if d%u.unit != 0 {
				v++ // round up: never tell the server less time than there is
			}
			return strconv.FormatInt(int64(v), 10) + u.s
		}
	}
	return fmt.Sprintf("%dH", max)
}
