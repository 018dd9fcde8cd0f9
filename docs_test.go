package connector_test

// The docs checks of the repository: references to docs/*.md sections resolve, no comment or doc
// names an issue by number, and the package table of docs/architecture.md §2 says what `go list`
// says. They live beside the domain package
// because they are about the whole module, not about one package of it; they read files and run
// `go list`, and the domain package itself still imports nothing.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
)

// doc is one markdown file: its headings' texts and their GitHub anchors.
type doc struct {
	headings []string
	anchors  map[string]bool
}

// readDocs reads README.md and docs/*.md, keyed by their path from the module root.
func readDocs(t *testing.T) map[string]*doc {
	t.Helper()
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*doc{}
	for _, f := range append(files, "README.md") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d := &doc{anchors: map[string]bool{}}
		seen := map[string]int{}
		inFence := false
		for line := range strings.Lines(string(b)) {
			line = strings.TrimRight(line, "\n")
			if strings.HasPrefix(line, "```") {
				inFence = !inFence
			}
			if inFence || !strings.HasPrefix(line, "#") {
				continue
			}
			text := strings.TrimSpace(strings.TrimLeft(line, "#"))
			d.headings = append(d.headings, text)
			a := anchor(text)
			if n := seen[a]; n > 0 {
				d.anchors[fmt.Sprintf("%s-%d", a, n)] = true
			} else {
				d.anchors[a] = true
			}
			seen[a]++
		}
		out[filepath.ToSlash(f)] = d
	}
	return out
}

// anchor is GitHub's anchor of a heading: lower case, every character but letters, digits,
// '_', '-' and spaces dropped, spaces turned into hyphens.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

func TestAnchor(t *testing.T) {
	t.Parallel()
	for heading, want := range map[string]string{
		"§4 One turn, traced":                                        "4-one-turn-traced",
		"Agent health (`GET /v1/agents/{id}/health`)":                "agent-health-get-v1agentsidhealth",
		"Goroutine stacks of open streams (2026-11-24, fourth pass)": "goroutine-stacks-of-open-streams-2026-11-24-fourth-pass",
		"A2A versions: which cards, which interface":                 "a2a-versions-which-cards-which-interface",
		"Against the team's targets (round 8)":                       "against-the-teams-targets-round-8",
	} {
		if got := anchor(heading); got != want {
			t.Errorf("anchor(%q) = %q, want %q", heading, got, want)
		}
	}
}

// The forms a reference to a section of the docs takes, in Go comments and in the docs:
//
//	docs/architecture.md §4              a numbered section of architecture.md; also
//	[architecture](architecture.md) §4, architecture §4, §4 of architecture.md
//	§4                                   in a markdown file, a numbered section of the same file
//	docs/operations.md#probes-and-shutdown, [text](faults.md#circuit-breaking-and-retries)
//	docs/performance.md, "Goroutine stacks of open streams"   the start of a heading's text
//	docs/operations.md ("Admission caps")
//	[text](#anchor)                      in a markdown file, a heading of the same file
//
// A section sign says whose section it is: one of our docs', in one of the forms above, or a
// standard's (RFC 6749 §4.4, A2A 1.0 §8.4, spec §3, §5.2 of RFC 6749).
var (
	sectionNum  = regexp.MustCompile(`^§\s?(\d+(?:\.\d+)*)`)
	sectionOf   = regexp.MustCompile(`^§\s?[\d.]*\d of (?:the )?(?:\[[^\]]*\]\()?(?:docs/)?([A-Za-z][\w-]*)(\.md)?`)
	sectionFile = regexp.MustCompile(`(?:docs/)?([A-Za-z][\w-]*)\.md\)?\s*$`)
	sectionWord = regexp.MustCompile(`\b([A-Za-z][\w-]*)\s*$`)
	anchorRef   = regexp.MustCompile(`(?:docs/)?([A-Za-z][\w-]*)\.md#([\w-]+)`)
	titleRef    = regexp.MustCompile(`(?:docs/)?([A-Za-z][\w-]*)\.md,? \(?["“]([^"”]+)["”]`)
	localRef    = regexp.MustCompile(`\]\(#([\w-]+)\)`)
	standardRef = regexp.MustCompile(`(RFC \d+|A2A [\d.]+|spec)\s*$`)
)

// refs checks references to sections of the docs against the docs it was given; failures are
// collected rather than reported, so that a test can show that a broken reference is caught.
type refs struct {
	docs     map[string]*doc
	exists   func(path string) bool // whether a file of the repository exists
	checked  int
	failures []string
}

// mdLink is a markdown link's target: a path, maybe with an anchor, or a URL.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// links checks that every relative link of a markdown line (of the file at file) leads to a file
// of the repository; the anchors of links to docs are check's.
func (r *refs) links(where, file, text string) {
	for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
		target, _, _ := strings.Cut(m[1], "#")
		if target == "" || strings.Contains(target, ":") {
			continue // the file's own anchor, or a URL (https:, mailto:)
		}
		r.checked++
		if p := path.Join(path.Dir(file), target); !r.exists(p) {
			r.failures = append(r.failures, fmt.Sprintf("%s: %q: there is no %s", where, m[0], p))
		}
	}
}

// find is the doc called name (docs/name.md or name.md at the root) and its path.
func (r *refs) find(name string) (string, *doc) {
	for _, p := range []string{"docs/" + name + ".md", name + ".md"} {
		if d, ok := r.docs[p]; ok {
			return p, d
		}
	}
	return "", nil
}

// check checks every reference in text, found at where; local is the doc text is part of (nil
// outside the docs), whose own "§N" and "#anchor" references it resolves.
func (r *refs) check(where, text string, local *doc) {
	fail := func(format string, args ...any) { r.failures = append(r.failures, fmt.Sprintf(format, args...)) }
	find := r.find
	for i := strings.Index(text, "§"); i >= 0; i = next(text, i) {
		num := sectionNum.FindStringSubmatch(text[i:])
		if num == nil {
			continue // a section named, not numbered: A2A 1.0 §"HTTP+JSON/REST"
		}
		quote := text[max(0, i-40):min(len(text), i+len(num[0])+20)]
		name, named := sectionOwner(text[:i], text[i:], func(n string) bool { _, d := find(n); return d != nil })
		p, _, _ := strings.Cut(where, ":")
		d := local
		switch {
		case !named:
			if d == nil || !slices.ContainsFunc(d.headings, func(h string) bool { return strings.HasPrefix(h, "§") }) {
				fail("%s: %q: a section sign that does not say whose section (docs/x.md §n, x §n, §n of x.md, RFC n, A2A v, spec)", where, quote)
				continue
			}
		case name == "":
			continue // a standard's section
		default:
			if p, d = find(name); d == nil {
				fail("%s: %q: there is no %s.md", where, quote, name)
				continue
			}
		}
		r.checked++
		if !slices.ContainsFunc(d.headings, func(h string) bool { return strings.HasPrefix(h, "§"+num[1]+" ") }) {
			fail("%s: %q: %s has no section §%s", where, quote, p, num[1])
		}
	}
	for _, m := range anchorRef.FindAllStringSubmatch(text, -1) {
		r.checked++
		if p, d := find(m[1]); d == nil || !d.anchors[m[2]] {
			fail("%s: %q: %s has no heading with anchor #%s", where, m[0], or(p, m[1]+".md"), m[2])
		}
	}
	for _, m := range titleRef.FindAllStringSubmatch(text, -1) {
		p, d := find(m[1])
		if d == nil {
			continue // a quoted string after another .md file's name
		}
		r.checked++
		title := strings.ToLower(m[2])
		if !slices.ContainsFunc(d.headings, func(h string) bool {
			return strings.HasPrefix(strings.ToLower(h), title)
		}) {
			fail("%s: %q: %s has no heading that starts %q", where, m[0], p, m[2])
		}
	}
	if local != nil {
		for _, m := range localRef.FindAllStringSubmatch(text, -1) {
			r.checked++
			if !local.anchors[m[1]] {
				fail("%s: %q: no heading of its own file has anchor #%s", where, m[0], m[1])
			}
		}
	}
}

// TestDocReferencesResolve finds every reference to a section of README.md or docs/*.md in the
// Go code's comments, the docs, the scripts and the chart, and fails on each that points to no
// section.
func TestDocReferencesResolve(t *testing.T) {
	t.Parallel()
	docs := readDocs(t)
	r := &refs{docs: docs, exists: func(p string) bool { _, err := os.Stat(p); return err == nil }}
	check := r.check
	err := filepath.WalkDir(".", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if p != "." && (strings.HasPrefix(e.Name(), ".") || e.Name() == "node_modules" || e.Name() == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		p = filepath.ToSlash(p)
		switch ext := path.Ext(p); {
		case ext == ".go":
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, p, nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			for _, cg := range f.Comments {
				// One comment group is one text: a reference may be broken over two lines.
				check(fset.Position(cg.Pos()).String(), strings.Join(strings.Fields(cg.Text()), " "), nil)
			}
		case ext == ".md" || ext == ".sh" || ext == ".yaml" || ext == ".tpl" || e.Name() == "Makefile":
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			local := docs[p]
			for i, line := range strings.Split(string(b), "\n") {
				check(fmt.Sprintf("%s:%d", p, i+1), line, local)
				if ext == ".md" {
					r.links(fmt.Sprintf("%s:%d", p, i+1), p, line)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range r.failures {
		t.Error(f)
	}
	if r.checked < 50 {
		t.Errorf("only %d references checked: the patterns no longer match how the code refers to the docs", r.checked)
	}
}

// TestDocReferenceCheckCatchesBrokenOnes shows the check of TestDocReferencesResolve failing on
// each form of reference when the section, heading or file it names does not exist, and passing
// the same forms when it does.
func TestDocReferenceCheckCatchesBrokenOnes(t *testing.T) {
	t.Parallel()
	arch := &doc{headings: []string{"Architecture", "§1 What it does", "§2 Packages, one job each"}, anchors: map[string]bool{}}
	faults := &doc{headings: []string{"Faults", "Circuit breaking and retries"}, anchors: map[string]bool{"circuit-breaking-and-retries": true}}
	docs := map[string]*doc{"docs/architecture.md": arch, "docs/faults.md": faults}
	for _, tc := range []struct {
		text  string
		local *doc
		bad   bool
	}{
		{"see docs/architecture.md §2 for", nil, false},
		{"see docs/architecture.md §14 for", nil, true},
		{"(the core model; architecture §2)", nil, false},
		{"(the core model; architecture §14)", nil, true},
		{"([architecture](architecture.md) §14, step 4)", faults, true},
		{"§2 of architecture.md", nil, false},
		{"§14 of architecture.md", nil, true},
		{"§2 of the [faults](faults.md) table", faults, true}, // faults.md has no numbered sections
		{"§1 of docs/nowhere.md", nil, true},                  // a file that must exist
		{"nowhere.md §2", nil, true},
		{"its hold (§2)", arch, false}, // a section of its own file
		{"its hold (§7)", arch, true},
		{"its hold (§2)", nil, true}, // whose?
		{"RFC 6749 §4.4", nil, false},
		{"[retries](faults.md#circuit-breaking-and-retries)", nil, false},
		{"[retries](faults.md#circuit-breaking)", nil, true},
		{`docs/faults.md, "Circuit breaking"`, nil, false},
		{`docs/faults.md, "Retry budget"`, nil, true},
		{"[below](#circuit-breaking-and-retries)", faults, false},
		{"[below](#retries)", faults, true},
	} {
		r := &refs{docs: docs}
		r.check("x", tc.text, tc.local)
		if bad := len(r.failures) > 0; bad != tc.bad {
			t.Errorf("check(%q): failures %q, want failing %v", tc.text, r.failures, tc.bad)
		}
		if r.checked == 0 && !tc.bad && !strings.Contains(tc.text, "RFC") && !strings.Contains(tc.text, "nowhere") {
			t.Errorf("check(%q): nothing checked", tc.text)
		}
	}
	files := map[string]bool{"docs/faults.md": true, "README.md": true, "docs/screenshots/a.png": true}
	for _, tc := range []struct {
		file, text string
		bad        bool
	}{
		{"docs/architecture.md", "[faults](faults.md)", false},
		{"docs/architecture.md", "[readme](../README.md#two-commands)", false},
		{"docs/architecture.md", "![a](screenshots/a.png)", false},
		{"README.md", "[faults](docs/faults.md)", false},
		{"README.md", "[faults](faults.md)", true},
		{"docs/architecture.md", "[gone](performance-history.md)", true},
		{"docs/architecture.md", "[Go](https://go.dev/doc) [x](#local)", false},
	} {
		r := &refs{exists: func(p string) bool { return files[p] }}
		r.links("x", tc.file, tc.text)
		if bad := len(r.failures) > 0; bad != tc.bad {
			t.Errorf("links(%s, %q): failures %q, want failing %v", tc.file, tc.text, r.failures, tc.bad)
		}
	}
}

// historyLink is the one way a main doc may refer to the tuning history: a link to the whole
// appendix whose text says it is history.
var historyLink = regexp.MustCompile(`\[[^\]]*\b[Hh]istory\b[^\]]*\]\((?:docs/)?performance-history\.md\)`)

// TestDocsHistoryIsAnAppendix keeps docs/performance-history.md an appendix that nothing needs:
// it says so at its top, and README.md and the other docs mention it only by a link to the
// whole page whose text says "history" (no anchor into it, no "see its seventh pass").
func TestDocsHistoryIsAnAppendix(t *testing.T) {
	t.Parallel()
	const history = "docs/performance-history.md"
	b, err := os.ReadFile(history)
	if err != nil {
		t.Fatal(err)
	}
	if top, _, _ := strings.Cut(string(b), "\n\n"); !strings.Contains(top, "Appendix") {
		t.Errorf("%s: its title does not say it is an appendix: %q", history, top)
	}
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(files, "README.md") {
		if filepath.ToSlash(f) == history {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if n := strings.Count(line, "performance-history.md"); n > len(historyLink.FindAllString(line, -1)) {
				t.Errorf("%s:%d: the tuning history is an appendix: link it only as [… history …](performance-history.md), without an anchor: %s", f, i+1, line)
			}
		}
	}
}

// issueRef is a reference to an issue by its number ("issue", or "issues", a space, maybe "#",
// digits; any case): the repository has no tracker, so the reader cannot follow it.
var issueRef = regexp.MustCompile(`(?i)\bissues? #?\d+`)

// TestDocsNameNoIssueNumbers fails on every "issue <number>" in the Go files and the markdown of the
// repository: a comment or a doc says what it means instead. Dependencies' files (node_modules,
// third_party) and generated code are not ours to word.
func TestDocsNameNoIssueNumbers(t *testing.T) {
	t.Parallel()
	files := 0
	err := filepath.WalkDir(".", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if p != "." && (strings.HasPrefix(e.Name(), ".") || e.Name() == "node_modules" || e.Name() == "third_party" || e.Name() == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := path.Ext(p); ext != ".go" && ext != ".md" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if generated.Match(b) {
			return nil
		}
		files++
		lines := strings.Split(string(b), "\n")
		for i, line := range lines {
			if m := issueRefIn(line, lines[min(i+1, len(lines)-1):]); m != "" {
				t.Errorf("%s:%d: %q: the repository has no issue tracker; say what is meant", filepath.ToSlash(p), i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Errorf("only %d files read: the walk no longer finds the code", files)
	}
}

// issueRefIn is the reference to an issue by number that starts in line, also one whose number
// wraps to the next line ("issue" ending a comment line, "12" starting the next); "" if none.
func issueRefIn(line string, next []string) string {
	if m := issueRef.FindString(line); m != "" {
		return m
	}
	if len(next) == 0 {
		return ""
	}
	cont := strings.TrimLeft(next[0], " \t/*#>")
	if loc := issueRef.FindStringIndex(line + " " + cont); loc != nil && loc[0] < len(line) {
		return (line + " " + cont)[loc[0]:loc[1]]
	}
	return ""
}

func TestIssueRefIn(t *testing.T) {
	t.Parallel()
	w := "issue" // spelt apart from its numbers, so that this file passes the test it holds
	for _, tc := range []struct{ line, next, want string }{
		{"as " + w + " 12 said", "", w + " 12"},
		{"// Seeds are the requests of " + w, "// 12 and their kin", w + " 12"},
		{"  Tried in " + w, "  26 with 2 MiB", w + " 26"},
		{"see Issues" + " #7", "", "Issues" + " #7"},
		{"an " + w, "the next line", ""},
		{"no " + w + " here", "", ""},
		{"ends with 12", w + " 13 starts here", ""}, // the next line's own, reported there
	} {
		var next []string
		if tc.next != "" {
			next = []string{tc.next}
		}
		if got := issueRefIn(tc.line, next); got != tc.want {
			t.Errorf("issueRefIn(%q, %q) = %q, want %q", tc.line, tc.next, got, tc.want)
		}
	}
}

// generated is the header Go's convention gives generated files.
var generated = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// sectionOwner says whose section the section sign that starts after (with before in front of
// it) names: the name of one of our docs (isDoc), "" for a standard's, and named false when
// neither is said.
func sectionOwner(before, after string, isDoc func(string) bool) (name string, named bool) {
	if m := sectionOf.FindStringSubmatch(after); m != nil {
		if isDoc(m[1]) || m[2] != "" {
			return m[1], true // §4 of architecture.md, or of any x.md, which must then exist
		}
		return "", true // §5.2 of RFC 6749
	}
	if m := sectionFile.FindStringSubmatch(before); m != nil {
		return m[1], true // architecture.md §4, [architecture](architecture.md) §4: the file must exist
	}
	if m := sectionWord.FindStringSubmatch(before); m != nil && isDoc(m[1]) {
		return m[1], true // architecture §4
	}
	if standardRef.MatchString(before) {
		return "", true
	}
	return "", false
}

func TestDocSectionOwner(t *testing.T) {
	t.Parallel()
	isDoc := func(n string) bool { return n == "architecture" || n == "faults" }
	for _, tc := range []struct {
		text, want string
		named      bool
	}{
		{"see docs/architecture.md §4 for", "architecture", true},
		{"([architecture](architecture.md) §4)", "architecture", true},
		{"(the core model; architecture §14)", "architecture", true},
		{"§14 of architecture.md", "architecture", true},
		{"§3 of the [faults](faults.md) table", "faults", true},
		{"§2 of docs/architecture.md", "architecture", true},
		{"nowhere.md §2", "nowhere", true}, // a file that must exist
		{"§2 of nowhere.md", "nowhere", true},
		{"(RFC 6749 §4.4)", "", true},
		{"§5.2 of RFC 6749", "", true},
		{"A2A 1.0 §8.4", "", true},
		{"the spec §3", "", true},
		{"its hold (§6.7)", "", false},
		{"the design's §2", "", false},
	} {
		i := strings.Index(tc.text, "§")
		name, named := sectionOwner(tc.text[:i], tc.text[i:], isDoc)
		if name != tc.want || named != tc.named {
			t.Errorf("sectionOwner(%q) = %q, %v; want %q, %v", tc.text, name, named, tc.want, tc.named)
		}
	}
}

// goPackage is what TestArchitectureImportTable reads of `go list -json`.
type goPackage struct {
	ImportPath string
	Imports    []string
}

// TestArchitectureImportTable keeps the table of docs/architecture.md §2 true: every package of
// the module is in one row, and each row's "imports (ours)" is what its packages import of the
// module (tests aside), except the binaries' row, which wires everything.
func TestArchitectureImportTable(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go list")
	}
	cmd := exec.CommandContext(t.Context(), "go", "list", "-json", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	const module = "github.com/a2a-connector/a2a-connector"
	rel := func(importPath string) string {
		return strings.TrimPrefix(strings.TrimPrefix(importPath, module), "/")
	}
	imports := map[string][]string{} // package (from the module root, "" for the root) → ours it imports
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p goPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		var ours []string
		for _, imp := range p.Imports {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				ours = append(ours, rel(imp))
			}
		}
		imports[rel(p.ImportPath)] = ours
	}

	rows := architectureTable(t)
	listed := map[string]bool{}
	for _, r := range rows {
		for _, p := range r.packages {
			if _, ok := imports[p]; !ok {
				t.Errorf("architecture.md §2 lists %q, which `go list ./...` does not have", or(p, "connector (root)"))
			}
			listed[p] = true
		}
		if r.imports == nil { // the binaries' row
			continue
		}
		want := map[string]bool{}
		for _, p := range r.packages {
			for _, imp := range imports[p] {
				if !slices.Contains(r.packages, imp) {
					want[shortName(imp)] = true
				}
			}
		}
		wantList := sortedKeys(want)
		if diff := cmp.Diff(wantList, r.imports); diff != "" {
			t.Errorf("architecture.md §2, row %s: imports (ours) should be %s (-go list +table):\n%s",
				r.cell, strings.Join(quoteAll(wantList), ", "), diff)
		}
	}
	for p := range imports {
		if !listed[p] {
			t.Errorf("architecture.md §2 has no row for %q", p)
		}
	}
}

// tableRow is one row of the table of docs/architecture.md §2: its packages (paths from the
// module root, "" for the root), its imports column as short names (nil for "all of the above")
// and its first cell.
type tableRow struct {
	cell     string
	packages []string
	imports  []string
}

var backticked = regexp.MustCompile("`([^`]+)`")

func architectureTable(t *testing.T) []tableRow {
	t.Helper()
	f, err := os.Open("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []tableRow
	in := false
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = strings.HasPrefix(line, "## §2 ")
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") && !strings.HasPrefix(line, "| test-only") && !strings.HasPrefix(line, "| tools") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 3 {
			t.Fatalf("architecture.md §2: a row without three cells: %s", line)
		}
		r := tableRow{cell: strings.TrimSpace(cells[0])}
		for _, m := range backticked.FindAllStringSubmatch(cells[0], -1) {
			p := m[1]
			if p == "connector" {
				p = ""
			}
			r.packages = append(r.packages, p)
		}
		switch imp := strings.TrimSpace(cells[2]); imp {
		case "all of the above":
		case "—":
			r.imports = []string{}
		default:
			r.imports = []string{}
			for _, name := range strings.Split(imp, ",") {
				r.imports = append(r.imports, strings.Trim(strings.TrimSpace(name), "`"))
			}
			slices.Sort(r.imports)
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) < 20 {
		t.Fatalf("architecture.md §2: found %d rows; has the table moved?", len(rows))
	}
	return rows
}

// shortName is how the table names an imported package: `connector` for the root, `proto` for
// the generated code, the last element otherwise.
func shortName(p string) string {
	switch {
	case p == "":
		return "connector"
	case strings.HasPrefix(p, "api/proto/"):
		return "proto"
	}
	return path.Base(p)
}

func sortedKeys(m map[string]bool) []string {
	out := []string{}
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = "`" + v + "`"
	}
	return out
}

// or is a when it is set, else b.
func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// next is the index of the section sign after the one at i in text, or -1.
func next(text string, i int) int {
	j := strings.Index(text[i+len("§"):], "§")
	if j < 0 {
		return -1
	}
	return i + len("§") + j
}
