package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
	"github.com/a2a-connector/a2a-connector/internal/grpcapi"
)

// `loadgen burst` is the burst row's tenant A in a process of its own: it connects to the
// replicas, builds its streams' requests, says "ready" on stdout, opens every stream at once
// when a line arrives on stdin, and when the last has ended writes a burstReport as JSON.

// burstReport is what `loadgen burst` measured.
type burstReport struct {
	CPU   int64       // nanoseconds of its own CPU from the burst's start until its last stream ended
	Calls []burstCall // one per stream
}

// burstCall is what one stream got.
type burstCall struct {
	// Answered is when (Unix nanoseconds) the connector first answered it: its refusal, or,
	// admitted, its first event; Took how long it ran in all (nanoseconds).
	Answered, Took int64
	Code           string // its gRPC code: OK, ResourceExhausted, …
	Err            string `json:",omitempty"` // the error, when it is neither

	start time.Time // when its HEADERS went out
}

// answer notes the stream's first answer.
func (c *burstCall) answer() {
	if c.Answered == 0 {
		c.Answered = time.Now().UnixNano()
	}
}

// runBurst is `loadgen burst`.
func runBurst(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("loadgen burst", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addrs := fs.String("addrs", "", "the connectors' gRPC addresses, comma-separated")
	conns := fs.Int("conns", 4, "HTTP/2 connections to each connector")
	tenant := fs.String("tenant", "", "tenant id of the streams")
	agent := fs.String("agent", "", "agent id of the streams")
	prefix := fs.String("prefix", "burst", "prefix of the session and turn ids")
	n := fs.Int("n", 5000, "streams opened at once")
	chunks := fs.Int("chunks", 10, "text chunks of each turn")
	delay := fs.Duration("delay", 100*time.Millisecond, "agent's pause between the chunks")
	tenantMetadata := fs.Bool("tenant-metadata", true, "name the tenant in the request metadata")
	turnTimeout := fs.Duration("turn-timeout", time.Minute, "deadline of one turn (grpc-timeout)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the burst to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	readyCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var hcs []*h2Conn
	defer func() {
		for _, hc := range hcs {
			hc.close()
		}
	}()
	for range *conns {
		for _, addr := range splitList(*addrs) {
			hc, err := dialH2(readyCtx, addr)
			if err != nil {
				return fmt.Errorf("burst: %w", err)
			}
			hcs = append(hcs, hc)
		}
	}
	// Every stream's request is built beforehand: the burst is one of streams, not of
	// marshalling. They all send the same text; their session and turn ids are their own.
	text := turnText(*prefix, *chunks, *delay)
	calls := make([]burstCall, *n)
	reqs := make([][]byte, *n)
	for i := range reqs {
		id := *prefix + "a" + strconv.Itoa(i)
		b, err := proto.Marshal(&pb.HandleTurnRequest{TenantId: *tenant, SessionId: id, TurnId: id, AgentId: *agent, Text: text})
		if err != nil {
			return err
		}
		reqs[i] = grpcFrame(b)
	}
	var hdr []hpack.HeaderField
	if *tenantMetadata {
		hdr = append(hdr, hpack.HeaderField{Name: grpcapi.TenantMetadataKey, Value: *tenant})
	}
	hdr = append(hdr, hpack.HeaderField{Name: "grpc-timeout", Value: strconv.FormatInt(turnTimeout.Milliseconds(), 10) + "m"})
	// Stream k of connection c is call c + k×len(hcs): each connection carries its share.
	for c, hc := range hcs {
		hc.calls, hc.stride, hc.first = calls, len(hcs), c
		go hc.read()
	}
	// No collection during the burst (a few MiB for 5,000 streams): it would spend the
	// client's CPU when the connector's is measured.
	runtime.GC()
	debug.SetGCPercent(-1)
	fmt.Fprintln(stdout, "ready")
	_, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil {
		return fmt.Errorf("burst: read the start: %w", err)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	cpu0 := cpuOf(os.Getpid())
	var wg sync.WaitGroup
	for _, hc := range hcs {
		wg.Go(func() { hc.burst(reqs, hdr) })
	}
	wg.Wait()
	wait, cancelWait := context.WithTimeout(ctx, *turnTimeout+10*time.Second)
	defer cancelWait()
	for _, hc := range hcs {
		hc.wait(wait)
	}
	cpu1 := cpuOf(os.Getpid())
	pprof.StopCPUProfile()
	return json.NewEncoder(stdout).Encode(burstReport{CPU: int64(cpu1 - cpu0), Calls: calls})
}

// grpcFrame is msg as a gRPC message on the wire: uncompressed, its length, itself.
func grpcFrame(msg []byte) []byte {
	b := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

// h2Conn is one HTTP/2 connection of the burst client, written and read frame by frame (the
// x/net/http2 framer): a stream costs it an HPACK block and two frames, a small part of what a
// gRPC client's stream costs. On a 2-core machine the burst's client then takes little of the
// CPU the connector is measured on; on the wire every stream is a gRPC call like any other.
type h2Conn struct {
	addr string
	c    net.Conn
	wmu  sync.Mutex // the framer's writing side (bw, henc, hbuf): the burst, and the reader's answers
	bw   *bufio.Writer
	fr   *http2.Framer
	henc *hpack.Encoder
	hbuf bytes.Buffer

	// Under mu: the calls (the connection's share of them), how many of its streams it opened
	// and how many ended, whether it has opened all it will or failed, its send window.
	mu            sync.Mutex
	calls         []burstCall
	stride, first int
	opened, ended int
	sent, failed  bool
	window        int64
	windowGrew    *sync.Cond
	done          chan struct{} // closed when every opened stream ended, or the connection did
}

// h2Window is the flow-control window this client gives the server, per stream and for the
// connection: large enough that it never has to give more during a burst.
const h2Window = 1 << 30

func dialH2(ctx context.Context, addr string) (*h2Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	hc := &h2Conn{addr: addr, c: c, bw: bufio.NewWriterSize(c, 64<<10), done: make(chan struct{}), window: 65535}
	hc.windowGrew = sync.NewCond(&hc.mu)
	hc.fr = http2.NewFramer(hc.bw, bufio.NewReaderSize(c, 64<<10))
	hc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	hc.henc = hpack.NewEncoder(&hc.hbuf)
	if _, err := io.WriteString(hc.bw, http2.ClientPreface); err != nil {
		c.Close()
		return nil, err
	}
	err = errors.Join(hc.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: h2Window},
		http2.Setting{ID: http2.SettingEnablePush, Val: 0}),
		hc.fr.WriteWindowUpdate(0, h2Window-65535), hc.bw.Flush())
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	// The server's settings, before anything else it sends.
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	f, err := hc.fr.ReadFrame()
	_ = c.SetReadDeadline(time.Time{})
	if sf, ok := f.(*http2.SettingsFrame); err != nil || !ok || sf.IsAck() {
		c.Close()
		return nil, fmt.Errorf("%s: want the server's settings, got %v (%v)", addr, f, err)
	}
	if err := errors.Join(hc.fr.WriteSettingsAck(), hc.bw.Flush()); err != nil {
		c.Close()
		return nil, err
	}
	return hc, nil
}

func (hc *h2Conn) close() { hc.c.Close() }

// burst opens this connection's share of the streams, each its HEADERS and its one DATA frame,
// as fast as the socket takes them.
func (hc *h2Conn) burst(reqs [][]byte, extra []hpack.HeaderField) {
	for i, id := hc.first, uint32(1); i < len(reqs); i, id = i+hc.stride, id+2 {
		hc.mu.Lock()
		for hc.window < int64(len(reqs[i])) && !hc.failed {
			hc.windowGrew.Wait() // the reader adds what the server grants
		}
		if hc.failed {
			hc.mu.Unlock()
			return
		}
		hc.window -= int64(len(reqs[i]))
		hc.calls[i].start = time.Now()
		hc.opened++
		hc.mu.Unlock()

		hc.wmu.Lock()
		hc.hbuf.Reset()
		for _, f := range []hpack.HeaderField{{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "http"},
			{Name: ":path", Value: pb.Connector_HandleTurn_FullMethodName}, {Name: ":authority", Value: hc.addr},
			{Name: "content-type", Value: "application/grpc"}, {Name: "te", Value: "trailers"}} {
			_ = hc.henc.WriteField(f)
		}
		for _, f := range extra {
			_ = hc.henc.WriteField(f)
		}
		err := errors.Join(hc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hc.hbuf.Bytes(), EndHeaders: true}),
			hc.fr.WriteData(id, true, reqs[i]))
		hc.wmu.Unlock()
		if err != nil {
			hc.fail(err)
			return
		}
	}
	hc.wmu.Lock()
	err := hc.bw.Flush()
	hc.wmu.Unlock()
	if err != nil {
		hc.fail(err)
		return
	}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if hc.sent = true; hc.ended == hc.opened {
		hc.closeDone()
	}
}

// read reads the server's frames until the connection ends: a stream's first answer, its
// grpc-status, and what the protocol asks an answer to.
func (hc *h2Conn) read() {
	for {
		f, err := hc.fr.ReadFrame()
		if err != nil {
			hc.fail(err)
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				hc.write(func() error { return hc.fr.WriteSettingsAck() })
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				hc.write(func() error { return hc.fr.WritePing(true, f.Data) })
			}
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				hc.mu.Lock()
				hc.window += int64(f.Increment)
				hc.windowGrew.Broadcast()
				hc.mu.Unlock()
			}
		case *http2.MetaHeadersFrame:
			hc.mu.Lock()
			if c := hc.call(f.StreamID); c != nil {
				c.answer()
				if code := f.PseudoValue("status"); code != "" && code != "200" {
					hc.end(c, "Unknown", "HTTP status "+code)
				}
				for _, hf := range f.Fields {
					if hf.Name == "grpc-status" {
						hc.end(c, grpcCode(hf.Value), grpcMessage(f.Fields))
					}
				}
			}
			hc.mu.Unlock()
		case *http2.DataFrame:
			hc.mu.Lock()
			if c := hc.call(f.StreamID); c != nil {
				c.answer()
			}
			hc.mu.Unlock()
		case *http2.RSTStreamFrame:
			hc.mu.Lock()
			if c := hc.call(f.StreamID); c != nil {
				hc.end(c, "Unknown", "stream reset: "+f.ErrCode.String())
			}
			hc.mu.Unlock()
		case *http2.GoAwayFrame:
			hc.fail(fmt.Errorf("GOAWAY %s", f.ErrCode))
			return
		}
	}
}

// write writes a frame at once (an answer the protocol asks for).
func (hc *h2Conn) write(w func() error) {
	hc.wmu.Lock()
	err := errors.Join(w(), hc.bw.Flush())
	hc.wmu.Unlock()
	if err != nil {
		hc.fail(err)
	}
}

// fail ends every stream still open with err.
func (hc *h2Conn) fail(err error) {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	hc.endAll(err)
}

// call is the stream's call, nil for an id this connection did not open.
func (hc *h2Conn) call(id uint32) *burstCall {
	if id == 0 || id%2 == 0 {
		return nil
	}
	i := hc.first + int(id-1)/2*hc.stride
	if i >= len(hc.calls) {
		return nil
	}
	return &hc.calls[i]
}

// end records a stream's end, once; the last one ends the connection's wait. mu held.
func (hc *h2Conn) end(c *burstCall, code, msg string) {
	if c.Code != "" {
		return
	}
	c.answer()
	c.Took, c.Code = int64(time.Since(c.start)), code
	if code != codes.OK.String() && code != codes.ResourceExhausted.String() {
		c.Err = code + ": " + msg
	}
	if hc.ended++; hc.ended == hc.opened && hc.sent {
		hc.closeDone()
	}
}

// endAll ends every stream still open with err, and the wait. mu held.
func (hc *h2Conn) endAll(err error) {
	hc.failed = true
	hc.windowGrew.Broadcast()
	for i := hc.first; i < len(hc.calls); i += hc.stride {
		if c := &hc.calls[i]; c.Code == "" && !c.start.IsZero() {
			c.answer()
			c.Took, c.Code, c.Err = int64(time.Since(c.start)), "Unavailable", err.Error()
		}
	}
	hc.closeDone()
}

func (hc *h2Conn) closeDone() {
	select {
	case <-hc.done:
	default:
		close(hc.done)
	}
}

// wait returns once every stream of the connection ended, or ctx did.
func (hc *h2Conn) wait(ctx context.Context) {
	select {
	case <-hc.done:
	case <-ctx.Done():
		hc.fail(ctx.Err())
	}
}

// grpcCode names a grpc-status value as codes.Code does.
func grpcCode(v string) string {
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return "Unknown"
	}
	return codes.Code(n).String()
}

func grpcMessage(fields []hpack.HeaderField) string {
	for _, f := range fields {
		if f.Name == "grpc-message" {
			if m, err := url.PathUnescape(f.Value); err == nil {
				return m
			}
			return f.Value
		}
	}
	return ""
}

// burstClient is a running `loadgen burst`.
type burstClient struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	done  chan struct{}
	err   error // what Wait returned; read after done
}

// startBurstClient starts `loadgen burst` for the runner's replicas and returns once its
// streams are ready to open. Its log goes to burst.log in the log folder.
func (r *runner) startBurstClient(ctx context.Context, tenantA, agentA, prefix string) (*burstClient, error) {
	o := r.o
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own binary: %w", err)
	}
	logf, err := os.OpenFile(filepath.Join(r.s.logDir, "burst.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start the burst client: %w", err)
	}
	defer logf.Close() // the child has its own copy
	cmd := exec.Command(self, "burst", "-addrs", strings.Join(r.addrs, ","), "-conns", strconv.Itoa(o.conns),
		"-tenant", tenantA, "-agent", agentA, "-prefix", prefix, "-n", strconv.Itoa(o.burst),
		"-chunks", strconv.Itoa(o.noisyChunks), "-delay", o.noisyDelay.String(),
		"-tenant-metadata="+strconv.FormatBool(o.tenantMetadata), "-turn-timeout", o.turnTimeout.String())
	if o.debugAddr != "" { // profiles asked for: the burst client's too
		cmd.Args = append(cmd.Args, "-cpuprofile", filepath.Join(r.s.logDir, prefix+".pprof"))
	}
	cmd.Stderr = logf
	// As the other children: its own process group, and killed with the load generator.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	c := &burstClient{cmd: cmd, done: make(chan struct{})}
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c.out = bufio.NewReaderSize(stdout, 1<<20)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the burst client: %w", err)
	}
	ready := make(chan error, 1)
	go func() {
		line, err := c.out.ReadString('\n')
		if err == nil && line != "ready\n" {
			err = fmt.Errorf("said %q", line)
		}
		ready <- err
	}()
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = ctx.Err()
	case <-time.After(readyTimeout):
		err = fmt.Errorf("not ready after %s", readyTimeout)
	}
	if err != nil {
		c.stop()
		return nil, fmt.Errorf("burst client: %w; log: %s%s", err, logf.Name(), tail(logf.Name()))
	}
	return c, nil
}

// fire opens the burst and returns what the client measured once every stream has ended.
func (c *burstClient) fire() (burstReport, error) {
	var rep burstReport
	if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
		return rep, fmt.Errorf("burst client: start: %w", err)
	}
	if err := json.NewDecoder(c.out).Decode(&rep); err != nil {
		return rep, fmt.Errorf("burst client: report: %w", err)
	}
	return rep, nil
}

// stop ends the client: it exits once it has reported; else it is killed.
func (c *burstClient) stop() {
	c.stdin.Close()
	go func() { c.err = c.cmd.Wait(); close(c.done) }()
	select {
	case <-c.done:
	case <-time.After(stopTimeout):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.done
	}
}
