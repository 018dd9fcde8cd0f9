package invoke

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/a2a-connector/a2a-connector/internal/a2a"
)

// step is one input to the assembler: an event, or the text of the status that ended the turn.
type step struct {
	ev          a2a.Event
	finalStatus string
}

func art(id, text string, appendIt, last bool) step {
	return step{ev: &a2a.TaskArtifactUpdateEvent{Artifact: a2a.Artifact{ArtifactID: id, Parts: a2a.Parts{a2a.TextPart(text)}}, Append: appendIt, LastChunk: last}}
}

func snap(arts ...a2a.Artifact) step {
	return step{ev: &a2a.Task{ID: "t", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}, Artifacts: arts}}
}

func textArtifact(id, text string) a2a.Artifact {
	return a2a.Artifact{ArtifactID: id, Parts: a2a.Parts{a2a.TextPart(text)}}
}

func feed(a *assembler, steps []step) []string {
	var deltas []string
	for _, s := range steps {
		var d string
		switch e := s.ev.(type) {
		case *a2a.TaskArtifactUpdateEvent:
			d = a.artifact(e)
		case *a2a.Task:
			d = a.snapshot(e)
		case *a2a.Message:
			d = a.message(e)
		case nil:
			d = a.finalStatus([]byte(s.finalStatus))
		}
		if d != "" {
			deltas = append(deltas, d)
		}
	}
	return deltas
}

func TestAssembler(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		max          int
		steps        []step
		wantDeltas   []string
		wantText     string
		wantTooLarge bool
	}{
		{
			name:       "append_adds_to_the_artifact",
			steps:      []step{art("a", "Hello", false, false), art("a", ", ", true, false), art("a", "world", true, true)},
			wantDeltas: []string{"Hello", ", ", "world"},
			wantText:   "Hello, world",
		},
		{
			name:       "append_to_an_unknown_artifact_starts_it",
			steps:      []step{art("a", "x", true, false), art("a", "y", true, false)},
			wantDeltas: []string{"x", "y"},
			wantText:   "xy",
		},
		{
			name:       "cumulative_replace_emits_only_the_extension",
			steps:      []step{art("a", "Hel", false, false), art("a", "Hello", false, false), art("a", "Hello world", false, true)},
			wantDeltas: []string{"Hel", "lo", " world"},
			wantText:   "Hello world",
		},
		{
			name: "replace_that_changes_sent_text_emits_nothing_until_it_extends_again",
			steps: []step{
				art("a", "Hello", false, false),
				art("a", "Jello", false, false),       // correction: cannot be unsaid
				art("a", "Hello world", false, false), // extends what was said again
			},
			wantDeltas: []string{"Hello", " world"},
			wantText:   "Hello world",
		},
		{
			name:       "final_text_carries_a_correction_never_spoken",
			steps:      []step{art("a", "Hello", false, false), art("a", "Jello there", false, true)},
			wantDeltas: []string{"Hello"},
			wantText:   "Jello there",
		},
		{
			name:       "replace_with_absent_append_replaces",
			steps:      []step{art("a", "one", false, false), art("a", "two", false, false)},
			wantDeltas: []string{"one"},
			wantText:   "two",
		},
		{
			name:       "artifacts_concatenate_in_order_of_appearance",
			steps:      []step{art("a", "first. ", false, true), art("b", "second.", false, true)},
			wantDeltas: []string{"first. ", "second."},
			wantText:   "first. second.",
		},
		{
			name: "growing_an_earlier_artifact_cannot_be_spoken_in_place",
			steps: []step{
				art("a", "a1 ", false, false),
				art("b", "b1", false, false),
				art("a", "a2 ", true, false),
			},
			wantDeltas: []string{"a1 ", "b1"},
			wantText:   "a1 a2 b1",
		},
		{
			name:       "task_artifacts_sharing_an_id_are_both_kept_as_in_the_guide",
			steps:      []step{snap(textArtifact("c3fe", "今天天气晴，"), textArtifact("c3fe", "没有雨。"))},
			wantDeltas: []string{"今天天气晴，没有雨。"},
			wantText:   "今天天气晴，没有雨。",
		},
		{
			name:       "repeated_snapshots_while_polling_emit_only_growth",
			steps:      []step{snap(textArtifact("a", "ab")), snap(textArtifact("a", "ab")), snap(textArtifact("a", "abc"))},
			wantDeltas: []string{"ab", "c"},
			wantText:   "abc",
		},
		{
			name:       "snapshot_without_artifacts_keeps_streamed_text",
			steps:      []step{art("a", "kept", false, true), snap()},
			wantDeltas: []string{"kept"},
			wantText:   "kept",
		},
		{
			name:       "message_result_is_the_reply",
			steps:      []step{{ev: &a2a.Message{Role: a2a.RoleAgent, MessageID: "m", Parts: a2a.Parts{a2a.TextPart("hi "), a2a.TextPart("there")}}}},
			wantDeltas: []string{"hi there"},
			wantText:   "hi there",
		},
		{
			name:       "status_message_is_the_reply_when_no_artifact_text_came",
			steps:      []step{{finalStatus: "Which city?"}},
			wantDeltas: []string{"Which city?"},
			wantText:   "Which city?",
		},
		{
			name:       "status_message_is_ignored_when_artifact_text_came",
			steps:      []step{art("a", "Sunny.", false, true), {finalStatus: "Anything else?"}},
			wantDeltas: []string{"Sunny."},
			wantText:   "Sunny.",
		},
		{
			name:         "reply_over_the_cap_keeps_what_was_sent",
			max:          10,
			steps:        []step{art("a", "12345", false, false), art("a", "67890", true, false), art("a", "x", true, false), art("a", "y", true, true)},
			wantDeltas:   []string{"12345", "67890"},
			wantText:     "1234567890",
			wantTooLarge: true,
		},
		{
			name:         "snapshot_over_the_cap",
			max:          4,
			steps:        []step{snap(textArtifact("a", "12345"))},
			wantText:     "",
			wantTooLarge: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			maxBytes := tt.max
			if maxBytes == 0 {
				maxBytes = DefaultMaxTextBytes
			}
			a := newAssembler(maxBytes)
			gotDeltas := feed(a, tt.steps)
			if diff := cmp.Diff(tt.wantDeltas, gotDeltas); diff != "" {
				t.Errorf("deltas (-want +got):\n%s", diff)
			}
			if got := a.text(); got != tt.wantText {
				t.Errorf("text = %q, want %q", got, tt.wantText)
			}
			if a.tooLarge != tt.wantTooLarge {
				t.Errorf("tooLarge = %v, want %v", a.tooLarge, tt.wantTooLarge)
			}
		})
	}
}

func TestAssemblerTracksLastChunk(t *testing.T) {
	t.Parallel()
	a := newAssembler(DefaultMaxTextBytes)
	feed(a, []step{art("a", "x", false, false), art("b", "y", false, true)})
	if a.byID["a"].lastChunk || !a.byID["b"].lastChunk {
		t.Errorf("lastChunk: a=%v b=%v, want false true", a.byID["a"].lastChunk, a.byID["b"].lastChunk)
	}
	feed(a, []step{art("a", "z", true, true)})
	if !a.byID["a"].lastChunk {
		t.Error("lastChunk of a not recorded")
	}
}

func TestAssemblerMetadataAndNonTextParts(t *testing.T) {
	t.Parallel()
	a := newAssembler(DefaultMaxTextBytes)
	a.artifact(&a2a.TaskArtifactUpdateEvent{Artifact: a2a.Artifact{ArtifactID: "a",
		Parts:    a2a.Parts{a2a.TextPart("x"), {Kind: a2a.PartURL, URL: "https://x/y.png"}},
		Metadata: map[string]any{"command": "flash", "n": 1.0}}})
	a.artifact(&a2a.TaskArtifactUpdateEvent{Append: true, Artifact: a2a.Artifact{ArtifactID: "a",
		Parts:    a2a.Parts{{Kind: a2a.PartData, Data: json.RawMessage(`{"k":1}`)}},
		Metadata: map[string]any{"n": 2.0}}})
	a.artifact(&a2a.TaskArtifactUpdateEvent{Artifact: a2a.Artifact{ArtifactID: "b", Parts: a2a.Parts{a2a.TextPart("no metadata")}}})
	if diff := cmp.Diff(map[string]any{"command": "flash", "n": 2.0}, a.meta); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	if got := a.nonText(); got != 2 {
		t.Errorf("nonText = %d, want 2", got)
	}
	if got := a.text(); got != "xno metadata" {
		t.Errorf("text = %q", got)
	}
}

// FuzzAssembler feeds random update sequences and checks the invariants the dialog engine relies
// on: the deltas are exactly the sent text, the sent text never exceeds the cap, and while in
// sync the reply is what was sent.
func FuzzAssembler(f *testing.F) {
	f.Add([]byte("\x00a\x01b\x02c\x03d"), 16)
	f.Add([]byte("\x10hello\x11hel\x12help\x13\x20xyz"), 8)
	f.Fuzz(func(t *testing.T, ops []byte, maxBytes int) {
		if maxBytes <= 0 || maxBytes > 1<<16 {
			maxBytes = 32
		}
		a := newAssembler(maxBytes)
		var spoken strings.Builder
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i], ops[i+1]
			id := string(rune('a' + op%3))
			text := strings.Repeat(string(rune('a'+arg%5)), int(arg%7))
			var d string
			switch op % 5 {
			case 0, 1:
				d = a.artifact(&a2a.TaskArtifactUpdateEvent{Append: op%5 == 0, LastChunk: arg%2 == 0,
					Artifact: a2a.Artifact{ArtifactID: id, Parts: a2a.Parts{a2a.TextPart(text)}}})
			case 2:
				d = a.snapshot(&a2a.Task{Artifacts: []a2a.Artifact{textArtifact(id, text), textArtifact("a", text)}})
			case 3:
				d = a.message(&a2a.Message{Parts: a2a.Parts{a2a.TextPart(text)}})
			case 4:
				d = a.finalStatus([]byte(text))
			}
			spoken.WriteString(d)
		}
		// While synced the assembler keeps what it sent only as the reply itself.
		sent := string(a.sent)
		if a.synced {
			sent = string(a.full())
		}
		if spoken.String() != sent {
			t.Fatalf("deltas %q != sent %q (synced %v)", spoken.String(), sent, a.synced)
		}
		if len(sent) > maxBytes {
			t.Fatalf("sent %d bytes, cap %d", len(sent), maxBytes)
		}
		if a.synced && a.text() != sent {
			t.Fatalf("synced but text %q != sent %q", a.text(), sent)
		}
		if !a.tooLarge && a.size != len(a.full()) {
			t.Fatalf("size %d, but the reply has %d bytes", a.size, len(a.full()))
		}
	})
}

// BenchmarkAssembler is the assembler's cost for one streamed reply: a new artifact and n-1
// chunks appended to it (one text part each, as streaming agents send them), then the reply.
func BenchmarkAssembler(b *testing.B) {
	for _, n := range []int{3, 100} {
		b.Run(fmt.Sprintf("chunks=%d", n), func(b *testing.B) {
			evs := make([]*a2a.TaskArtifactUpdateEvent, n)
			for i := range evs {
				evs[i] = &a2a.TaskArtifactUpdateEvent{Append: i > 0, LastChunk: i == n-1,
					Artifact: a2a.Artifact{ArtifactID: "art-1", Parts: a2a.Parts{a2a.TextPart(fmt.Sprintf("chunk %03d of the reply. ", i))}}}
			}
			b.ReportAllocs()
			for b.Loop() {
				a := newAssembler(DefaultMaxTextBytes)
				for _, ev := range evs {
					if a.artifact(ev) == "" {
						b.Fatal("no delta")
					}
				}
				if len(a.text()) == 0 {
					b.Fatal("no reply")
				}
			}
		})
	}
}
