//go:build e2eotel

package e2eotel

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// The names docs/operations.md promises, read from its "Metrics" and "Spans" sections, so that
// the check and the docs cannot drift apart.

// docMetric is one row of the metrics table.
type docMetric struct {
	name, kind, unit string
}

// docSpan is one row of the spans table: the attribute names a span may carry, those it always
// carries (the names before the row's first "; ", by the table's convention: later clauses say
// when the rest appear), and the row's text, which lists the attributes' documented values.
type docSpan struct {
	name          string
	attrs, always map[string]bool
	cell          string
}

type docs struct {
	metrics map[string]docMetric
	// standard are the instrumentation libraries' metrics the docs name (all in seconds).
	standard []string
	spans    map[string]docSpan
}

var (
	backticked = regexp.MustCompile("`([^`]+)`")
	// attrName is an attribute or metric name: dotted lower-case words. Values in the same cells
	// (`COMPLETED`, `message/stream`, `ok`) do not match.
	attrName = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$`)
)

// section returns the text of the markdown section whose heading is title, up to the next
// heading of the same or a higher level.
func section(md, title string) (string, error) {
	lines := strings.Split(md, "\n")
	for i, l := range lines {
		level := len(l) - len(strings.TrimLeft(l, "#"))
		if level == 0 || strings.TrimSpace(l[level:]) != title {
			continue
		}
		var out []string
		for _, m := range lines[i+1:] {
			if n := len(m) - len(strings.TrimLeft(m, "#")); n > 0 && n <= level && strings.HasPrefix(m[n:], " ") {
				break
			}
			out = append(out, m)
		}
		return strings.Join(out, "\n"), nil
	}
	return "", fmt.Errorf("docs: no section %q", title)
}

// names returns the dotted names quoted in text.
func names(text string) []string {
	var out []string
	for _, m := range backticked.FindAllStringSubmatch(text, -1) {
		if attrName.MatchString(m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

func readDocs(path string) (docs, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return docs{}, fmt.Errorf("read docs: %w", err)
	}
	d := docs{metrics: map[string]docMetric{}, spans: map[string]docSpan{}}
	metrics, err := section(string(b), "Metrics")
	if err != nil {
		return d, err
	}
	for _, l := range strings.Split(metrics, "\n") {
		cells := strings.Split(l, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`a2ac.") {
			continue
		}
		ns := names(cells[1])
		typ := strings.TrimSpace(cells[2])
		units := backticked.FindStringSubmatch(typ)
		if len(ns) == 0 || units == nil {
			return d, fmt.Errorf("docs: metrics row %q has no name or unit", l)
		}
		kind, _, _ := strings.Cut(typ, ",")
		kind = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kind), "(gauge)"))
		d.metrics[ns[0]] = docMetric{name: ns[0], kind: kind, unit: units[1]}
	}
	// The paragraph on the libraries' metrics may wrap: take the whole paragraph.
	if i := strings.Index(metrics, "The instrumentation libraries add"); i >= 0 {
		para, _, _ := strings.Cut(metrics[i:], "\n\n")
		for _, n := range names(para) {
			if strings.HasSuffix(n, ".duration") {
				d.standard = append(d.standard, n)
			}
		}
	}
	spans, err := section(string(b), "Spans")
	if err != nil {
		return d, err
	}
	for _, l := range strings.Split(spans, "\n") {
		cells := strings.Split(l, "|")
		if len(cells) < 4 {
			continue
		}
		head := backticked.FindStringSubmatch(cells[1])
		if head == nil {
			continue
		}
		cell := strings.Join(cells[2:len(cells)-1], "|")
		s := docSpan{name: head[1], attrs: map[string]bool{}, always: map[string]bool{}, cell: cell}
		first, _, _ := strings.Cut(cell, "; ")
		for _, n := range names(cell) {
			s.attrs[n] = true
		}
		for _, n := range names(first) {
			s.always[n] = true
		}
		d.spans[s.name] = s
	}
	if len(d.metrics) == 0 || len(d.spans) == 0 || len(d.standard) == 0 {
		return d, fmt.Errorf("docs: found %d metrics, %d library metrics and %d spans; did the tables move?",
			len(d.metrics), len(d.standard), len(d.spans))
	}
	return d, nil
}
