// Command flakes reads the `go test -json` output of several runs of the same tests, one file
// per run, and reports which tests failed in how many runs. It is the report of `make stress`
// (scripts/stress.sh); it runs no tests itself and judges nothing but the recorded verdicts.
//
//	go run ./scripts/flakes RUN.json...        table of failing tests, first failure of each
//	go run ./scripts/flakes -line RUN.json     one line: what failed in this run
//
// The exit status is 1 when any run had a failure, 2 when the files cannot be read.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
)

func main() {
	failed, err := run(os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "flakes:", err)
		os.Exit(2)
	case failed:
		os.Exit(1)
	}
}

// run reports on the runs named in args and says whether any of them failed.
func run(args []string, stdout, stderr io.Writer) (failed bool, err error) {
	fs := flag.NewFlagSet("flakes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	line := fs.Bool("line", false, "print one line about the one run given")
	trim := fs.String("trim", "", "a prefix to cut from package paths when printing, e.g. the module path and a slash")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: flakes [-line] [-trim PREFIX] RUN.json...   (each file: the go test -json output of one run)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return false, err
	}
	if fs.NArg() == 0 || (*line && fs.NArg() != 1) {
		fs.Usage()
		return false, errors.New("no runs given (or more than one with -line)")
	}
	runs := make([]runResult, 0, fs.NArg())
	for _, name := range fs.Args() {
		r, err := readRun(name, *trim)
		if err != nil {
			return false, err
		}
		runs = append(runs, r)
	}
	if *line {
		writeLine(stdout, runs[0])
		return len(runs[0].failures) > 0, nil
	}
	s := summarize(runs)
	writeReport(stdout, s, len(runs))
	return len(s) > 0, nil
}

// event is one line of `go test -json` (cmd/test2json), the fields we use.
type event struct {
	Action      string
	Package     string
	Test        string
	Output      string
	ImportPath  string // build-output events (Go 1.24+)
	FailedBuild string // on a package's fail: the ImportPath whose build failed
}

// key names a failure: a test, or a package that failed outside any test (Test empty): it did
// not build, TestMain failed, or the binary crashed or timed out.
type key struct {
	Package, Test string
}

func (k key) String() string {
	if k.Test == "" {
		return k.Package + " (package)"
	}
	return k.Package + " " + k.Test
}

// runResult is what one run says: its failures, each with the output that explains it.
type runResult struct {
	failures map[key][]string
}

// readRun parses one run's file, cutting trim from the package paths. Lines that are not JSON
// (a build's stderr, a note) are skipped.
func readRun(name, trim string) (runResult, error) {
	f, err := os.Open(name)
	if err != nil {
		return runResult{}, err
	}
	defer f.Close()
	r, err := parseRun(f)
	if err != nil {
		return runResult{}, fmt.Errorf("%s: %w", name, err)
	}
	if trim == "" {
		return r, nil
	}
	trimmed := runResult{failures: make(map[key][]string, len(r.failures))}
	for k, out := range r.failures {
		k.Package = strings.TrimPrefix(k.Package, trim)
		trimmed.failures[k] = out
	}
	return trimmed, nil
}

func parseRun(in io.Reader) (runResult, error) {
	output := map[key][]string{}
	buildOutput := map[string][]string{}
	failed := map[key]bool{}
	running := map[key]bool{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20) // a test may print long lines
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "build-output":
			buildOutput[e.ImportPath] = append(buildOutput[e.ImportPath], strings.TrimRight(e.Output, "\n"))
		case "output":
			output[k] = append(output[k], strings.TrimRight(e.Output, "\n"))
		case "run":
			running[k] = true
		case "pass", "skip":
			delete(running, k)
		case "fail":
			delete(running, k)
			failed[k] = true
			if e.FailedBuild != "" {
				output[k] = append(buildOutput[e.FailedBuild], output[k]...)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return runResult{}, err
	}
	// A test still running when its package failed was cut off: a timeout or a crash, whose
	// panic test2json files under it. It failed, though no verdict line says so.
	for k := range running {
		if failed[key{Package: k.Package}] {
			failed[k] = true
		}
	}
	r := runResult{failures: map[key][]string{}}
	for k := range failed {
		if k.Test == "" && failedTestIn(failed, k.Package) {
			continue // the package failed because its tests did; they are the news
		}
		if k.Test != "" && failedSubtest(failed, k) {
			continue // a parent fails with its subtest; report only the subtest
		}
		r.failures[k] = output[k]
	}
	return r, nil
}

func failedTestIn(failed map[key]bool, pkg string) bool {
	for k := range failed {
		if k.Package == pkg && k.Test != "" {
			return true
		}
	}
	return false
}

func failedSubtest(failed map[key]bool, parent key) bool {
	for k := range failed {
		if k.Package == parent.Package && strings.HasPrefix(k.Test, parent.Test+"/") {
			return true
		}
	}
	return false
}

// flaky is one test that failed in some runs.
type flaky struct {
	key
	failedRuns int      // how many runs it failed in
	firstRun   int      // the first of them, from 1
	firstOut   []string // that run's output for it
}

// summarize counts, per failure, the runs it appeared in: the most frequent first.
func summarize(runs []runResult) []flaky {
	byKey := map[key]*flaky{}
	for i, r := range runs {
		for k, out := range r.failures {
			f := byKey[k]
			if f == nil {
				f = &flaky{key: k, firstRun: i + 1, firstOut: out}
				byKey[k] = f
			}
			f.failedRuns++
		}
	}
	s := make([]flaky, 0, len(byKey))
	for _, f := range byKey {
		s = append(s, *f)
	}
	sort.Slice(s, func(i, j int) bool {
		if s[i].failedRuns != s[j].failedRuns {
			return s[i].failedRuns > s[j].failedRuns
		}
		return s[i].String() < s[j].String()
	})
	return s
}

// maxOutputLines bounds the output shown per failure: the end, where the verdict is.
const maxOutputLines = 25

func writeReport(w io.Writer, s []flaky, runs int) {
	if len(s) == 0 {
		fmt.Fprintf(w, "no test failed in %s\n", plural(runs, "run"))
		return
	}
	fmt.Fprintf(w, "%s failed in %s:\n\n", plural(len(s), "test"), plural(runs, "run"))
	width := len("test")
	for _, f := range s {
		width = max(width, len(f.String()))
	}
	fmt.Fprintf(w, "  %-*s  %s\n", width, "test", "failed runs")
	for _, f := range s {
		fmt.Fprintf(w, "  %-*s  %d/%d\n", width, f.String(), f.failedRuns, runs)
	}
	for _, f := range s {
		fmt.Fprintf(w, "\n--- %s, first failure (run %d):\n", f, f.firstRun)
		out := f.firstOut
		if len(out) > maxOutputLines {
			fmt.Fprintf(w, "    [... %d lines ...]\n", len(out)-maxOutputLines)
			out = out[len(out)-maxOutputLines:]
		}
		for _, l := range out {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
}

func writeLine(w io.Writer, r runResult) {
	if len(r.failures) == 0 {
		fmt.Fprintln(w, "no failures")
		return
	}
	names := make([]string, 0, len(r.failures))
	for k := range r.failures {
		names = append(names, k.String())
	}
	slices.Sort(names)
	fmt.Fprintf(w, "%d failed: %s\n", len(names), strings.Join(names, ", "))
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
