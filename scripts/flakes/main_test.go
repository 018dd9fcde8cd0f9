package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Lines as cmd/test2json writes them (trimmed to the fields read).
const (
	passRun = `{"Action":"start","Package":"p/a"}
{"Action":"run","Package":"p/a","Test":"TestOK"}
{"Action":"output","Package":"p/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"pass","Package":"p/a","Test":"TestOK"}
{"Action":"pass","Package":"p/a"}
`
	subtestFails = `{"Action":"run","Package":"p/a","Test":"TestT"}
{"Action":"run","Package":"p/a","Test":"TestT/slow"}
{"Action":"output","Package":"p/a","Test":"TestT/slow","Output":"    t_test.go:9: timeout\n"}
{"Action":"output","Package":"p/a","Test":"TestT/slow","Output":"--- FAIL: TestT/slow (1.00s)\n"}
{"Action":"fail","Package":"p/a","Test":"TestT/slow"}
{"Action":"fail","Package":"p/a","Test":"TestT"}
{"Action":"output","Package":"p/a","Output":"FAIL\n"}
{"Action":"fail","Package":"p/a"}
`
	buildFails = `{"ImportPath":"p/b [p/b.test]","Action":"build-output","Output":"# p/b\n"}
{"ImportPath":"p/b [p/b.test]","Action":"build-output","Output":"b.go:3:1: syntax error\n"}
{"ImportPath":"p/b [p/b.test]","Action":"build-fail"}
{"Action":"start","Package":"p/b"}
{"Action":"output","Package":"p/b","Output":"FAIL\tp/b [build failed]\n"}
{"Action":"fail","Package":"p/b","FailedBuild":"p/b [p/b.test]"}
`
	timesOut = `not json: a line of noise
{"Action":"run","Package":"p/c","Test":"TestOK"}
{"Action":"pass","Package":"p/c","Test":"TestOK"}
{"Action":"run","Package":"p/c","Test":"TestHang"}
{"Action":"run","Package":"p/c","Test":"TestHang/inner"}
{"Action":"output","Package":"p/c","Test":"TestHang/inner","Output":"panic: test timed out after 10m0s\n"}
{"Action":"output","Package":"p/c","Output":"FAIL\tp/c\t600.1s\n"}
{"Action":"fail","Package":"p/c"}
`
	crashes = `{"Action":"run","Package":"p/d","Test":"TestOK"}
{"Action":"pass","Package":"p/d","Test":"TestOK"}
{"Action":"output","Package":"p/d","Output":"pgtest: cannot reach Postgres\n"}
{"Action":"fail","Package":"p/d"}
`
)

func TestParseRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want map[key][]string
	}{
		{name: "a passing run has no failures", in: passRun, want: map[key][]string{}},
		{
			name: "a failing subtest is reported, not its parent or package",
			in:   subtestFails,
			want: map[key][]string{{"p/a", "TestT/slow"}: {"    t_test.go:9: timeout", "--- FAIL: TestT/slow (1.00s)"}},
		},
		{
			name: "a build failure is the package's, with the compiler's words",
			in:   buildFails,
			want: map[key][]string{{"p/b", ""}: {"# p/b", "b.go:3:1: syntax error", "FAIL\tp/b [build failed]"}},
		},
		{
			name: "a test cut off by a timeout failed, though no line says so; noise is skipped",
			in:   timesOut,
			want: map[key][]string{{"p/c", "TestHang/inner"}: {"panic: test timed out after 10m0s"}},
		},
		{
			name: "a package that fails outside any test is the package's",
			in:   crashes,
			want: map[key][]string{{"p/d", ""}: {"pgtest: cannot reach Postgres"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseRun(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got.failures); diff != "" {
				t.Errorf("failures (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRun goes through the files: counts per test over the runs, the most frequent first, and
// the exit verdict.
func TestRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run1 := file("run-1.json", subtestFails+buildFails)
	run2 := file("run-2.json", passRun+subtestFails)
	run3 := file("run-3.json", passRun)

	tests := []struct {
		name       string
		args       []string
		wantFailed bool
		wantLines  []string // in this order in the output
	}{
		{
			name:       "table over three runs",
			args:       []string{run1, run2, run3},
			wantFailed: true,
			wantLines: []string{
				"2 tests failed in 3 runs:",
				"  p/a TestT/slow  2/3",
				"  p/b (package)   1/3",
				"--- p/a TestT/slow, first failure (run 1):",
				"    --- FAIL: TestT/slow (1.00s)",
				"--- p/b (package), first failure (run 1):",
				"    # p/b",
				"    b.go:3:1: syntax error",
			},
		},
		{name: "all passed", args: []string{run3, run3}, wantLines: []string{"no test failed in 2 runs"}},
		{name: "one line for one run", args: []string{"-line", run1}, wantFailed: true, wantLines: []string{"2 failed: p/a TestT/slow, p/b (package)"}},
		{name: "package paths trimmed", args: []string{"-line", "-trim", "p/", run1}, wantFailed: true, wantLines: []string{"2 failed: a TestT/slow, b (package)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			failed, err := run(tt.args, &stdout, &stderr)
			if err != nil {
				t.Fatal(err)
			}
			if failed != tt.wantFailed {
				t.Errorf("failed = %v, want %v", failed, tt.wantFailed)
			}
			rest := stdout.String()
			for _, l := range tt.wantLines {
				i := strings.Index(rest, l+"\n")
				if i < 0 {
					t.Fatalf("output lacks %q (or not in order):\n%s", l, &stdout)
				}
				rest = rest[i+len(l):]
			}
		})
	}
}

func TestRunRefusesMissingFiles(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	if _, err := run([]string{filepath.Join(t.TempDir(), "absent.json")}, &stdout, &stderr); err == nil {
		t.Error("a missing file was accepted")
	}
	if _, err := run(nil, &stdout, &stderr); err == nil {
		t.Error("no files accepted")
	}
}
