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
	sectionOf   = regexp.MustCompile(`^§\s?[\d.]*\d of (?:the )?(?:\[[^\]]*\]\()?(?:docs/)?([A-Za-z][\w-]*)`)
	sectionFile = regexp.MustCompile(`(?:docs/)?([A-Za-z][\w-]*)\.md\)?\s*$`)
	sectionWord = regexp.MustCompile(`\b([A-Za-z][\w-]*)\s*$`)
	anchorRef   = regexp.MustCompile(`(?:docs/)?([A-Za-z][\w-]*)\.md#([\w-]+)`)
	titleRef    = regexp.MustCompile(`(?:docs/)?([A-Za-z][\w-]*)\.md,? \(?["“]([^"”]+)["”]`)
	localRef    = regexp.MustCompile(`\]\(#([\w-]+)\)`)
	standardRef = regexp.MustCompile(`(RFC \d+|A2A [\d.]+|spec)\s*$`)
)

// TestDocReferencesResolve finds every reference to a section of README.md or docs/*.md in the
// Go code's comments, the docs, the scripts and the chart, and fails on each that points to no
// section.
func TestDocReferencesResolve(t *testing.T) {
	t.Parallel()
	docs := readDocs(t)
	find := func(name string) (string, *doc) {
		for _, p := range []string{"docs/" + name + ".md", name + ".md"} {
			if d, ok := docs[p]; ok {
				return p, d
			}
		}
		return "", nil
	}
	checked := 0
	check := func(where, text string, local *doc) {
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
					t.Errorf("%s: %q: a section sign that does not say whose section (docs/x.md §n, x §n, §n of x.md, RFC n, A2A v, spec)", where, quote)
					continue
				}
			case name == "":
				continue // a standard's section
			default:
				if p, d = find(name); d == nil {
					t.Errorf("%s: %q: there is no %s.md", where, quote, name)
					continue
				}
			}
			checked++
			if !slices.ContainsFunc(d.headings, func(h string) bool { return strings.HasPrefix(h, "§"+num[1]+" ") }) {
				t.Errorf("%s: %q: %s has no section §%s", where, quote, p, num[1])
			}
		}
		for _, m := range anchorRef.FindAllStringSubmatch(text, -1) {
			checked++
			if p, d := find(m[1]); d == nil || !d.anchors[m[2]] {
				t.Errorf("%s: %q: %s has no heading with anchor #%s", where, m[0], or(p, m[1]+".md"), m[2])
			}
		}
		for _, m := range titleRef.FindAllStringSubmatch(text, -1) {
			p, d := find(m[1])
			if d == nil {
				continue // a quoted string after another .md file's name
			}
			checked++
			title := strings.ToLower(m[2])
			if !slices.ContainsFunc(d.headings, func(h string) bool {
				return strings.HasPrefix(strings.ToLower(h), title)
			}) {
				t.Errorf("%s: %q: %s has no heading that starts %q", where, m[0], p, m[2])
			}
		}
		if local != nil {
			for _, m := range localRef.FindAllStringSubmatch(text, -1) {
				checked++
				if !local.anchors[m[1]] {
					t.Errorf("%s: %q: no heading of its own file has anchor #%s", where, m[0], m[1])
				}
			}
		}
	}

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
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Errorf("only %d references checked: the patterns no longer match how the code refers to the docs", checked)
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
		for i, line := range strings.Split(string(b), "\n") {
			if m := issueRef.FindString(line); m != "" {
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

// generated is the header Go's convention gives generated files.
var generated = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// sectionOwner says whose section the section sign that starts after (with before in front of
// it) names: the name of one of our docs (isDoc), "" for a standard's, and named false when
// neither is said.
func sectionOwner(before, after string, isDoc func(string) bool) (name string, named bool) {
	if m := sectionOf.FindStringSubmatch(after); m != nil {
		if isDoc(m[1]) {
			return m[1], true // §4 of architecture.md
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
