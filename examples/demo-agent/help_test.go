package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHelp builds the real binary and runs it as a user would: every spelling of help prints the
// usage and exits 0; a wrong flag still exits 1. The environment is empty and stdin closed.
func TestHelp(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{name: "-h", args: []string{"-h"}, want: "-chunk-delay"},
		{name: "-help", args: []string{"-help"}, want: "-chunk-delay"},
		{name: "--help", args: []string{"--help"}, want: "-public-url"},
		{name: "unknown flag", args: []string{"-no-such-flag"}, wantCode: 1, want: "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// A minute is hundreds of times what help takes; it only ends a program that
			// ignored the flag and went on serving.
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			var stdout, stderr bytes.Buffer
			cmd := exec.CommandContext(ctx, bin, tt.args...)
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
			if code != tt.wantCode {
				t.Errorf("exit status %d, want %d; stderr:\n%s", code, tt.wantCode, &stderr)
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr lacks %q:\n%s", tt.want, &stderr)
			}
			if tt.wantCode == 0 && strings.Contains(stderr.String(), "help requested") {
				t.Errorf("help is reported as an error:\n%s", &stderr)
			}
		})
	}
}

// buildBinary builds this package's program into a temp folder, the way `make run` builds it
// (CGO_ENABLED=0, -trimpath), so the build cache it left is reused.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "demo-agent")
	build := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
