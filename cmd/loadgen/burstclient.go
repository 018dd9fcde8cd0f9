package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
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

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"
)

// `loadgen burst` is the burst row's tenant A in a process of its own: it connects to the
// replicas, starts its streams' goroutines, says "ready" on stdout, opens every stream at once
// when a line arrives on stdin, and when the last has ended writes a burstReport as JSON.

// burstReport is what `loadgen burst` measured.
type burstReport struct {
	CPU   int64       // nanoseconds of its own CPU from the burst's start until its last stream ended
	Calls []burstCall // one per stream
}

// burstCall is what one stream got.
type burstCall struct {
	// Answered is when (Unix nanoseconds) it was refused or failed, or, admitted, got its first
	// text; Took how long it ran in all (nanoseconds).
	Answered, Took int64
	Code           string // its gRPC code: OK, ResourceExhausted, …
	Err            string `json:",omitempty"` // the error, when it is neither
}

// runBurst is `loadgen burst`.
func runBurst(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("loadgen burst", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addrs := fs.String("addrs", "", "the connectors' gRPC addresses, comma-separated")
	conns := fs.Int("conns", 4, "gRPC connections to each connector")
	tenant := fs.String("tenant", "", "tenant id of the streams")
	agent := fs.String("agent", "", "agent id of the streams")
	prefix := fs.String("prefix", "burst", "prefix of the session and turn ids")
	n := fs.Int("n", 5000, "streams opened at once")
	chunks := fs.Int("chunks", 10, "text chunks of each turn")
	delay := fs.Duration("delay", 100*time.Millisecond, "agent's pause between the chunks")
	tenantMetadata := fs.Bool("tenant-metadata", true, "name the tenant in the request metadata")
	turnTimeout := fs.Duration("turn-timeout", time.Minute, "client deadline of one turn")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the burst to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	v, err := newViaClient(splitList(*addrs), *conns, *tenant, *agent, *tenantMetadata)
	if err != nil {
		return err
	}
	defer v.close()
	// Connected before the burst, so that it is one of streams, not of connection setups.
	readyCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for _, cc := range v.conns {
		for s := cc.GetState(); s != connectivity.Ready; s = cc.GetState() {
			if !cc.WaitForStateChange(readyCtx, s) {
				return fmt.Errorf("burst: connection to %s not ready: %w", cc.Target(), readyCtx.Err())
			}
		}
	}

	// The streams wait at a gate on goroutines started beforehand, their stacks grown to what
	// the call needs: the burst is one of streams, not of goroutine starts and stack copies in
	// this process (a quarter of its CPU otherwise). They all send the same text, so the reply
	// they check is built once; their session and turn ids are their own.
	gate := make(chan struct{})
	calls := make([]burstCall, *n)
	text, want := turnText(*prefix, *chunks, *delay), replyText(*prefix, *chunks)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			growStack()
			<-gate
			id := *prefix + "a" + strconv.Itoa(i)
			tctx, cancel := context.WithTimeout(ctx, *turnTimeout)
			defer cancel()
			start := time.Now()
			tt, err := v.turn(tctx, id, id, text, want)
			c := &calls[i]
			c.Took, c.Answered = int64(time.Since(start)), time.Now().UnixNano()
			c.Code = status.Code(err).String() // Unknown for a turn that failed loadgen's checks
			switch {
			case err == nil:
				c.Answered = start.Add(tt.firstText).UnixNano()
			case status.Code(err) != codes.ResourceExhausted:
				c.Err = err.Error()
			}
		})
	}
	// No collection during the burst (a few MiB for 5,000 streams): it would shrink the stacks
	// just grown and spend the client's CPU when the connector's is measured.
	runtime.GC()
	debug.SetGCPercent(-1)
	fmt.Fprintln(stdout, "ready")
	_, err = bufio.NewReader(stdin).ReadString('\n')
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
	close(gate)
	wg.Wait()
	cpu1 := cpuOf(os.Getpid())
	pprof.StopCPUProfile()
	if err != nil {
		return fmt.Errorf("burst: read the start: %w", err)
	}
	return json.NewEncoder(stdout).Encode(burstReport{CPU: int64(cpu1 - cpu0), Calls: calls})
}

// growStack grows the calling goroutine's stack to 32 KiB at once, while it is shallow.
//
//go:noinline
func growStack() {
	var frame [24 << 10]byte
	keepFrame(frame[:])
}

// keepFrame uses the frame so the compiler cannot drop it, without letting it escape.
//
//go:noinline
func keepFrame(b []byte) { b[len(b)-1] = 0 }

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
