package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseNode(t *testing.T) {
	t.Parallel()
	got, err := parseNode("name=n1,pg=127.0.0.1:5432,rest=http://127.0.0.1:8008,data=/d,config=/c.yml,pidfile=/p")
	if err != nil {
		t.Fatal(err)
	}
	want := node{name: "n1", pg: "127.0.0.1:5432", rest: "http://127.0.0.1:8008", data: "/d", config: "/c.yml", pidfile: "/p"}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(node{})); diff != "" {
		t.Errorf("parseNode (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"name=n1", "name=n1,pg=x,rest=y,data=d,config=c,pidfile=p,port=1"} {
		if _, err := parseNode(bad); err == nil {
			t.Errorf("parseNode(%q) = nil error", bad)
		}
	}
}

// The report's row says when turns failed relative to the fault, and when they were served again.
func TestFaultRow_times_are_relative_to_the_fault(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := func(d float64) time.Time { return at.Add(time.Duration(d * float64(time.Second))) }
	f := fault{name: "kill", at: at, healed: s(2.5), turns: []turn{
		{start: s(-0.1), end: s(0.1), failure: "grpc Unavailable"},
		{start: s(1), end: s(2), failure: "grpc Unavailable"},
		{start: s(1.5), end: s(1.6), failure: "OUTCOME_FAILED internal"},
		{start: s(2.1), end: s(2.5)},
	}}
	want := "| kill | 4 | 3 | 0.10 → 2.00 | 2.50 | grpc Unavailable ×2, OUTCOME_FAILED internal ×1 |"
	if got := f.row(); got != want {
		t.Errorf("row =\n%s\nwant\n%s", got, want)
	}
	if got := (fault{name: "quiet", at: at}).row(); !strings.Contains(got, "| 0 | 0 | — | — | — |") {
		t.Errorf("row of a fault nothing failed in = %s", got)
	}
}
