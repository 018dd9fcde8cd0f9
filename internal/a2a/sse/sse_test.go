package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// readAll reads events until an error and returns copies of them with that error.
func readAll(r io.Reader, max int) ([]Event, error) {
	sr := NewReader(r, max)
	var evs []Event
	for {
		ev, err := sr.Next()
		if err != nil {
			return evs, err
		}
		ev.Data = bytes.Clone(ev.Data)
		evs = append(evs, ev)
	}
}

func TestSSEReader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		input    string
		max      int // 0: 1 MiB
		want     []Event
		tooLarge bool // the stream ends with a *TooLargeError, else with io.EOF
	}{
		{
			name:  "lf_events",
			input: "data: a\n\ndata: b\n\n",
			want:  []Event{{Data: []byte("a")}, {Data: []byte("b")}},
		},
		{
			name:  "crlf_line_endings",
			input: "data: a\r\n\r\ndata: b\r\n\r\n",
			want:  []Event{{Data: []byte("a")}, {Data: []byte("b")}},
		},
		{
			name:  "cr_line_endings",
			input: "data: a\r\rdata: b\r\r",
			want:  []Event{{Data: []byte("a")}, {Data: []byte("b")}},
		},
		{
			name:  "mixed_line_endings",
			input: "data: a\r\ndata: b\rdata: c\n\r\n",
			want:  []Event{{Data: []byte("a\nb\nc")}},
		},
		{
			name:  "bom_at_start",
			input: "\xEF\xBB\xBFdata: a\n\n",
			want:  []Event{{Data: []byte("a")}},
		},
		{
			name:  "bom_before_comment",
			input: "\xEF\xBB\xBF: hello\ndata: a\n\n",
			want:  []Event{{Data: []byte("a")}},
		},
		{
			name:  "data_without_space",
			input: "data:{\"x\":1}\n\n",
			want:  []Event{{Data: []byte(`{"x":1}`)}},
		},
		{
			name:  "only_one_space_is_removed",
			input: "data:  a\n\n",
			want:  []Event{{Data: []byte(" a")}},
		},
		{
			name:  "multi_line_data_joined_with_newline",
			input: "data: {\"a\":\ndata: 1}\n\n",
			want:  []Event{{Data: []byte("{\"a\":\n1}")}},
		},
		{
			name:  "id_lines_ignored",
			input: "id: 1\ndata: a\n\ndata: b\n\nid: 2\ndata: c\n\n",
			want:  []Event{{Data: []byte("a")}, {Data: []byte("b")}, {Data: []byte("c")}},
		},
		{
			name:  "keep_alive_comments_ignored",
			input: ": keep-alive\n\n: keep-alive\n\ndata: a\n\n:\n\n",
			want:  []Event{{Data: []byte("a")}},
		},
		{
			name:  "retry_and_unknown_fields_ignored",
			input: "retry: 3000\nfoo: bar\ndata: a\nbaz\n\n",
			want:  []Event{{Data: []byte("a")}},
		},
		{
			name:  "event_type_recorded_and_reset",
			input: "event: ping\ndata: x\n\ndata: y\n\n",
			want:  []Event{{Type: "ping", Data: []byte("x")}, {Data: []byte("y")}},
		},
		{
			name:  "event_without_data_not_dispatched",
			input: "event: ping\n\ndata: y\n\n",
			want:  []Event{{Data: []byte("y")}},
		},
		{
			name:  "empty_data_line_dispatches_empty_event",
			input: "data:\n\n",
			want:  []Event{{Data: []byte("")}},
		},
		{
			name:  "field_without_colon_is_empty_data",
			input: "data\ndata\n\n",
			want:  []Event{{Data: []byte("\n")}},
		},
		{
			name:  "last_event_without_blank_line_at_eof",
			input: "data: a\n\ndata: b\n",
			want:  []Event{{Data: []byte("a")}, {Data: []byte("b")}},
		},
		{
			name:  "last_line_without_terminator_at_eof",
			input: "data: a",
			want:  []Event{{Data: []byte("a")}},
		},
		{
			name:  "empty_stream",
			input: "",
		},
		{
			name:  "event_at_exact_limit",
			input: "data: " + strings.Repeat("x", 8) + "\n\n",
			max:   8,
			want:  []Event{{Data: []byte(strings.Repeat("x", 8))}},
		},
		{
			name:     "one_data_line_over_limit",
			input:    "data: " + strings.Repeat("x", 9) + "\n\n",
			max:      8,
			tooLarge: true,
		},
		{
			name:     "joined_data_over_limit",
			input:    "data: xxxx\ndata: xxxx\n\n",
			max:      8,
			tooLarge: true,
		},
		{
			name:     "huge_line_without_newline",
			input:    "data: " + strings.Repeat("x", 100),
			max:      8,
			tooLarge: true,
		},
		{
			name:     "huge_event_name",
			input:    "event: " + strings.Repeat("x", 100) + "\ndata: a\n\n",
			max:      8,
			tooLarge: true,
		},
		{
			name:  "huge_comment_is_discarded_not_buffered",
			input: "data: a\n\n:" + strings.Repeat("x", 100) + "\ndata: b\n\n",
			max:   8,
			want:  []Event{{Data: []byte("a")}, {Data: []byte("b")}},
		},
		{
			name:     "events_before_an_oversized_one_are_delivered",
			input:    "data: a\n\ndata: " + strings.Repeat("x", 20) + "\n\ndata: c\n\n",
			max:      8,
			want:     []Event{{Data: []byte("a")}},
			tooLarge: true,
		},
	}
	for _, tt := range tests {
		readers := map[string]func() io.Reader{
			"whole":    func() io.Reader { return strings.NewReader(tt.input) },
			"one_byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(tt.input)) },
		}
		for rname, mk := range readers {
			t.Run(tt.name+"/"+rname, func(t *testing.T) {
				t.Parallel()
				max := tt.max
				if max == 0 {
					max = 1 << 20
				}
				got, err := readAll(mk(), max)
				if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
				if !tt.tooLarge {
					if err != io.EOF {
						t.Errorf("err = %v, want io.EOF", err)
					}
					return
				}
				var tl *TooLargeError
				if !errors.As(err, &tl) || tl.Limit != max {
					t.Errorf("err = %v, want a TooLargeError of %d", err, max)
				}
			})
		}
	}
}

func TestSSEReader_read_error_is_returned_and_sticky(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader("data: a\n\ndata: partial"), iotest.ErrReader(boom))
	sr := NewReader(r, 1024)
	if ev, err := sr.Next(); err != nil || string(ev.Data) != "a" {
		t.Fatalf("first event = %q, %v", ev.Data, err)
	}
	for range 2 {
		if _, err := sr.Next(); !errors.Is(err, boom) {
			t.Fatalf("err = %v, want %v", err, boom)
		}
	}
}
