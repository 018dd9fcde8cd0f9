// Package clitest runs the project's real programs the way a user does, for the tests of their
// command lines: it builds a package's binary and checks what given arguments print and how the
// program exits. It is for tests only and must never be linked into a binary.
package clitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Build builds the program of the package in the current directory into a temp folder, the way
// `make run` builds it (CGO_ENABLED=0, -trimpath), so the build cache it left is reused.
func Build(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	build := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// Case is one command line and what it must do.
type Case struct {
	Name     string
	Args     []string
	WantCode int
	// Want is text that stderr must contain.
	Want string
	// WantStdout is text that stdout must contain.
	WantStdout string
	// NoLogs: no line of stdout or stderr may be a JSON log line (a client prints only what
	// its user asked for).
	NoLogs bool
}

// Run runs bin once per case, with an empty environment and a closed stdin, and checks the exit
// status and stderr. A case expecting success also fails when stderr reports help as an error
// ("help requested").
func Run(t *testing.T, bin string, cases []Case) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			t.Parallel()
			// A minute is hundreds of times what help takes; it only ends a program that
			// ignored the flag and went on serving.
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			var stdout, stderr bytes.Buffer
			cmd := exec.CommandContext(ctx, bin, tt.Args...)
			cmd.Env = []string{}
			cmd.Stdin = strings.NewReader("")
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.WantCode {
				t.Errorf("exit status %d, want %d; stderr:\n%s", code, tt.WantCode, &stderr)
			}
			if !strings.Contains(stderr.String(), tt.Want) {
				t.Errorf("stderr lacks %q:\n%s", tt.Want, &stderr)
			}
			if tt.WantCode == 0 && strings.Contains(stderr.String(), "help requested") {
				t.Errorf("help is reported as an error:\n%s", &stderr)
			}
			if !strings.Contains(stdout.String(), tt.WantStdout) {
				t.Errorf("stdout lacks %q:\n%s", tt.WantStdout, &stdout)
			}
			if tt.NoLogs {
				for _, out := range []*bytes.Buffer{&stdout, &stderr} {
					if line := logLine(out.String()); line != "" {
						t.Errorf("a log line in the output:\n%s", line)
					}
				}
			}
		})
	}
}

// logLine is the first line of out that is a JSON object (what the programs' loggers write), or "".
func logLine(out string) string {
	for _, line := range strings.Split(out, "\n") {
		var obj map[string]any
		if json.Unmarshal([]byte(strings.TrimSpace(line)), &obj) == nil {
			return line
		}
	}
	return ""
}
