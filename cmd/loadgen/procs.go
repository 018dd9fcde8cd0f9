package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// child is one program the load generator started (connector, console-api, stub agent), in its
// own process group, its stdout and stderr going to a log file.
type child struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed when the process has exited
	err  error         // what Wait returned; read after done
}

// stopTimeout bounds a child's orderly stop before it is killed.
const stopTimeout = 15 * time.Second

// startChild starts path with args and env, its output going to logDir/name.log. Each line of
// that log is offered to ready; startChild returns when ready returns a non-empty string
// (returned as the address), when the child exits, or after readyTimeout. A nil ready means:
// return once started.
func startChild(ctx context.Context, name, path string, args, env []string, logDir string, ready func(line []byte) string) (*child, string, error) {
	logPath := filepath.Join(logDir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, "", fmt.Errorf("start %s: %w", name, err)
	}
	defer logf.Close() // the child has its own copy of the descriptor
	cmd := exec.Command(path, args...)
	cmd.Env = env
	// The log file itself, not a pipe: with a pipe this process would wake to copy every line
	// the child writes (the connector logs one per turn), spending the CPU and the wake-ups of
	// the machine it measures on the measuring tool's bookkeeping.
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own process group: a Ctrl-C at the terminal reaches only the load generator, which then
	// stops the load before the servers, in that order. Pdeathsig: if the load generator is
	// killed outright, its children do not outlive it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()

	if ready == nil {
		return c, "", nil
	}
	deadline := time.Now().Add(readyTimeout)
	var offset int64
	for {
		// Checked before the exit, so a child that logged its address and then died is
		// reported by whoever uses the address, with its log.
		var addr string
		if addr, offset = findInLog(logPath, offset, ready); addr != "" {
			return c, addr, nil
		}
		select {
		case <-c.done:
			return c, "", fmt.Errorf("%s exited before it was ready (%v); log: %s%s", name, c.err, logPath, tail(logPath))
		case <-ctx.Done():
			c.stop()
			return c, "", ctx.Err()
		case <-time.After(readyPoll):
		}
		if time.Now().After(deadline) {
			c.stop()
			return c, "", fmt.Errorf("%s not ready after %s; log: %s%s", name, readyTimeout, logPath, tail(logPath))
		}
	}
}

// findInLog reads the whole lines of the log from offset on and returns what ready finds in the
// first line it accepts, and the offset after the last whole line read.
func findInLog(path string, offset int64, ready func(line []byte) string) (string, int64) {
	f, err := os.Open(path)
	if err != nil {
		return "", offset
	}
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, offset, 1<<30))
	if err != nil {
		return "", offset
	}
	for {
		line, rest, ok := bytes.Cut(b, []byte("\n"))
		if !ok {
			return "", offset // a partial line is read again, whole, next time
		}
		offset += int64(len(line)) + 1
		if addr := ready(line); addr != "" {
			return addr, offset
		}
		b = rest
	}
}

// readyPoll is how often a starting child's log is read for its ready line.
const readyPoll = 10 * time.Millisecond

// readyTimeout bounds the wait for a child to listen.
const readyTimeout = 60 * time.Second

// runChild runs a program to its end (console-api migrate), output to logDir/name.log.
func runChild(ctx context.Context, name, path string, args, env []string, logDir string) error {
	c, _, err := startChild(ctx, name, path, args, env, logDir, nil)
	if err != nil {
		return err
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		c.stop()
		return ctx.Err()
	}
	if c.err != nil {
		return fmt.Errorf("%s: %w; log: %s%s", name, c.err, c.log, tail(c.log))
	}
	return nil
}

// stop ends the child's whole process group: SIGTERM, then SIGKILL after stopTimeout. It
// returns once the process has exited. Stopping a child twice is fine.
func (c *child) stop() {
	pid := c.cmd.Process.Pid
	select {
	case <-c.done:
		// The leader exited; take down anything it left in its group.
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		return
	default:
	}
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-c.done:
	case <-timer.C:
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-c.done
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// exited reports whether the child has ended.
func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// tail is the last lines of a log file, for an error message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return "\n  " + strings.Join(lines, "\n  ")
}

// logAddr returns a ready func that finds the JSON log line whose msg is msg and returns its
// addr attribute (the connector and console-api log the address they listen on).
func logAddr(msg string) func([]byte) string {
	key := []byte(`"msg":"` + msg + `"`)
	return func(line []byte) string {
		if !bytes.Contains(line, key) {
			return ""
		}
		_, rest, ok := bytes.Cut(line, []byte(`"addr":"`))
		if !ok {
			return ""
		}
		addr, _, ok := bytes.Cut(rest, []byte(`"`))
		if !ok {
			return ""
		}
		return string(addr)
	}
}

// procSample is one reading of a process's counters from /proc.
type procSample struct {
	cpu time.Duration // user + system time, whole process (all threads)
	// childCPU is the CPU of its reaped children (cutime + cstime); for Postgres, the backends
	// that exited.
	childCPU time.Duration
}

// clockTick is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every Linux ABI Go runs on.
const clockTick = 10 * time.Millisecond

// readStat reads utime, stime, cutime, cstime and the parent pid from /proc/<pid>/stat.
func readStat(pid int) (procSample, int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procSample{}, 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces: split after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procSample{}, 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); field n is f[n-3].
	if len(f) < 15 {
		return procSample{}, 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	num := func(field int) int64 {
		v, _ := strconv.ParseInt(f[field-3], 10, 64)
		return v
	}
	s := procSample{
		cpu:      time.Duration(num(14)+num(15)) * clockTick,
		childCPU: time.Duration(num(16)+num(17)) * clockTick,
	}
	return s, int(num(4)), nil
}

// cpuOf is a process's CPU time so far, 0 when it cannot be read.
func cpuOf(pid int) time.Duration {
	s, _, err := readStat(pid)
	if err != nil {
		return 0
	}
	return s.cpu
}

// treeCPU is the CPU time of a Postgres cluster: the postmaster, its live children, and the
// children it already reaped (which the kernel adds to the postmaster's cutime/cstime).
func treeCPU(root int) time.Duration {
	s, _, err := readStat(root)
	if err != nil {
		return 0
	}
	total := s.cpu + s.childCPU
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return total
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == root {
			continue
		}
		cs, ppid, err := readStat(pid)
		if err != nil || ppid != root {
			continue
		}
		total += cs.cpu
	}
	return total
}

// memStatus reads VmRSS and VmHWM (bytes) from /proc/<pid>/status.
func memStatus(pid int) (rss, hwm int64, err error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var dst *int64
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			dst = &rss
		case strings.HasPrefix(line, "VmHWM:"):
			dst = &hwm
		default:
			continue
		}
		f := strings.Fields(line)
		if len(f) >= 2 {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			*dst = kb << 10
		}
	}
	return rss, hwm, sc.Err()
}

// resetPeakRSS asks the kernel to reset VmHWM to the current RSS (Linux ≥ 4.0, writing "5" to
// clear_refs); false when not allowed, in which case only sampled RSS is meaningful.
func resetPeakRSS(pid int) bool {
	f, err := os.OpenFile("/proc/"+strconv.Itoa(pid)+"/clear_refs", os.O_WRONLY, 0)
	if err != nil {
		return false
	}
	_, werr := io.WriteString(f, "5")
	cerr := f.Close()
	return werr == nil && cerr == nil
}

// rssWatch follows a process's peak RSS over a phase: VmHWM after a reset when the kernel lets
// us, else the largest VmRSS seen by sampling every 50 ms.
type rssWatch struct {
	pid     int
	hwmOK   bool
	stopped chan struct{}
	done    chan struct{}
	max     int64
}

func watchRSS(pid int) *rssWatch {
	w := &rssWatch{pid: pid, hwmOK: resetPeakRSS(pid), stopped: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if rss, _, err := memStatus(pid); err == nil && rss > w.max {
				w.max = rss
			}
			select {
			case <-w.stopped:
				return
			case <-t.C:
			}
		}
	}()
	return w
}

// peak stops the watch and returns the peak RSS in bytes.
func (w *rssWatch) peak() int64 {
	close(w.stopped)
	<-w.done
	peak := w.max
	if w.hwmOK {
		if _, hwm, err := memStatus(w.pid); err == nil && hwm > peak {
			peak = hwm
		}
	}
	return peak
}

// raiseFDLimit lifts the soft open-files limit to the hard one. Go already does this for its
// own process, but restores the old soft limit in children unless Setrlimit was called; calling
// it here makes the connector, console-api and stub agent inherit the raised limit too.
func raiseFDLimit() (uint64, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, fmt.Errorf("getrlimit: %w", err)
	}
	l.Cur = l.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, fmt.Errorf("setrlimit: %w", err)
	}
	return l.Cur, nil
}

// logCounts is what a program logged at WARN and ERROR in a span of its log.
type logCounts struct {
	errors, warnings int
	kinds            map[string]int // "LEVEL msg: error", ids and quoted values elided
}

// logSize is the current length of a log file: the start of a span for scanLog.
func logSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logSizes is logSize of each log.
func logSizes(paths []string) []int64 {
	out := make([]int64, len(paths))
	for i, p := range paths {
		out[i] = logSize(p)
	}
	return out
}

// scanLogs is scanLog of each log from its offset, added up.
func scanLogs(paths []string, offsets []int64) logCounts {
	lc := logCounts{kinds: map[string]int{}}
	for i, p := range paths {
		one := scanLog(p, offsets[i])
		lc.errors += one.errors
		lc.warnings += one.warnings
		for k, v := range one.kinds {
			if _, ok := lc.kinds[k]; ok || len(lc.kinds) < maxErrorKinds {
				lc.kinds[k] += v
			}
		}
	}
	return lc
}

// scanLog counts the WARN and ERROR lines of a JSON log (slog's) from offset on. A turn can end
// well for its caller while the connector logs that something behind it failed (a session it
// could not save); those count here, since the client cannot see them.
func scanLog(path string, offset int64) logCounts {
	lc := logCounts{kinds: map[string]int{}}
	f, err := os.Open(path)
	if err != nil {
		return lc
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return lc
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte(`"level":"ERROR"`)) && !bytes.Contains(line, []byte(`"level":"WARN"`)) {
			continue
		}
		var e struct{ Level, Msg, Error string }
		if json.Unmarshal(line, &e) != nil {
			continue
		}
		if e.Level == "ERROR" {
			lc.errors++
		} else {
			lc.warnings++
		}
		kind := e.Level + " " + e.Msg
		if e.Error != "" {
			kind += ": " + elideQuoted(e.Error)
		}
		if _, ok := lc.kinds[kind]; ok || len(lc.kinds) < maxErrorKinds {
			lc.kinds[kind]++
		}
	}
	return lc
}

// elideQuoted replaces every double-quoted part of s with "…", so errors that differ only in
// the session or turn they name count as one kind.
func elideQuoted(s string) string {
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '"' && !in:
			in = true
			b.WriteString(`"…`)
		case r == '"' && in:
			in = false
			b.WriteRune(r)
		case !in:
			b.WriteRune(r)
		}
	}
	if in {
		b.WriteRune('"')
	}
	return b.String()
}
