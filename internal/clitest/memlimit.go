package clitest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// CheckMemoryLimit checks that the program follows its container's memory limit: started by
// serveArgs with env (its own settings; the secret key and the log level are added here) inside
// a real memory cgroup of
// 256 MiB, it says it set GOMEMLIMIT to 90 % of that; with the operator's GOMEMLIMIT it keeps
// that, and with AUTOMEMLIMIT=off it leaves the runtime alone. Making a cgroup needs root and a
// writable cgroup file system (as in CI); elsewhere the test is skipped, saying why.
func CheckMemoryLimit(t *testing.T, bin string, serveArgs, env []string) {
	t.Helper()
	limit := int64(256 << 20)
	procs := memoryCgroup(t, limit)
	want := uint64(float64(limit) * 0.9) // as automemlimit rounds
	const pkg = `"package":"github.com/KimMachineGun/automemlimit/memlimit"`
	for _, tc := range []struct {
		name, env, wantLine string
	}{
		{"from the cgroup", "", fmt.Sprintf(`"msg":"GOMEMLIMIT is updated",%s,"GOMEMLIMIT":%d,`, pkg, want)},
		{"the operator's GOMEMLIMIT wins", "GOMEMLIMIT=300MiB", `"msg":"GOMEMLIMIT is already set, skipping",` + pkg + `,"GOMEMLIMIT":"300MiB"`},
		{"AUTOMEMLIMIT=off", "AUTOMEMLIMIT=off", `"msg":"AUTOMEMLIMIT is off, skipping"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := append([]string{"PATH=" + os.Getenv("PATH"), "A2AC_LOG_LEVEL=info",
				"A2AC_SECRET_KEY=" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))}, env...)
			if tc.env != "" {
				e = append(e, tc.env)
			}
			line, all := firstLine(t, procs, bin, serveArgs, e, "GOMEMLIMIT", "AUTOMEMLIMIT")
			if !strings.Contains(line, tc.wantLine) {
				t.Errorf("memory limit log line:\n  %s\nwant it to contain\n  %s\nall output:\n%s", line, tc.wantLine, all)
			}
		})
	}
}

// firstLine starts bin with args and env inside the cgroup whose cgroup.procs is procs, and
// returns its first stderr line that mentions any of words, and its output until then. The
// program is killed when the line is there: it may go on serving (or waiting for a database).
func firstLine(t *testing.T, procs, bin string, args, env []string, words ...string) (string, string) {
	t.Helper()
	// Thirty seconds is hundreds of times what starting takes; it only ends a program that
	// never logs the line.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// The shell moves itself into the cgroup, then becomes the program (same process).
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", `echo $$ > "$0" && exec "$@"`, procs, bin}, args...)...)
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	var all strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		all.WriteString(sc.Text() + "\n")
		for _, w := range words {
			if strings.Contains(sc.Text(), w) {
				return sc.Text(), all.String()
			}
		}
	}
	t.Fatalf("%s ended without a line about %v:\n%s", filepath.Base(bin), words, all.String())
	return "", ""
}

// memoryCgroup makes a memory cgroup limited to limit bytes (cgroup v1 or v2), removed when the
// test ends, and returns its cgroup.procs file; it skips the test when the machine does not
// let it.
func memoryCgroup(t *testing.T, limit int64) string {
	t.Helper()
	name := "a2ac-test-" + uuid.NewString()
	dir, limitFile := filepath.Join("/sys/fs/cgroup/memory", name), "memory.limit_in_bytes" // v1
	if controllers, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		if !strings.Contains(string(controllers), "memory") {
			t.Skip("cgroup v2 without the memory controller: cannot make a memory cgroup")
		}
		dir, limitFile = filepath.Join("/sys/fs/cgroup", name), "memory.max"
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a memory cgroup (needs root and a writable cgroup file system): %v", err)
	}
	t.Cleanup(func() {
		// A cgroup can go once its processes have; each program was killed and waited for.
		for range 50 {
			if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("could not remove the test cgroup %s", dir)
	})
	if err := os.WriteFile(filepath.Join(dir, limitFile), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		t.Skipf("cannot set a cgroup memory limit here (the memory controller is not enabled for child cgroups): %v", err)
	}
	return filepath.Join(dir, "cgroup.procs")
}
