package session

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWithholder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		count        int
		deltas       []string
		want         []string // what is sent of each delta
		wantWithheld int
	}{
		{"zero_withholds_nothing", 0, []string{"ab", "cd"}, []string{"ab", "cd"}, 0},
		{"count_at_a_delta_boundary", 2, []string{"ab", "cd"}, []string{"", "cd"}, 2},
		{"count_inside_a_delta", 3, []string{"ab", "cdef"}, []string{"", "def"}, 3},
		{"count_spanning_deltas", 5, []string{"ab", "cd", "efg"}, []string{"", "", "fg"}, 5},
		// 你 is 3 bytes: a count of 4 falls after its first byte; the whole character goes.
		{"count_inside_a_multibyte_character_advances_to_its_end", 4, []string{"a你好"}, []string{"好"}, 4},
		{"count_inside_a_character_at_a_delta_end", 2, []string{"a你", "好"}, []string{"", "好"}, 4},
		{"count_at_a_character_boundary_is_exact", 7, []string{"a你好", "b"}, []string{"", "b"}, 7},
		{"emoji_of_four_bytes", 1, []string{"😀x"}, []string{"x"}, 4},
		{"reply_shorter_than_the_count_is_withheld_whole", 100, []string{"abc", "你"}, []string{"", ""}, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := withholder{left: tc.count}
			var got []string
			for _, d := range tc.deltas {
				got = append(got, w.cut(d))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("sent (-want +got):\n%s", diff)
			}
			if w.withheld != tc.wantWithheld {
				t.Errorf("withheld %d bytes, want %d", w.withheld, tc.wantWithheld)
			}
			// What was withheld and what was sent make the whole reply, once.
			whole := strings.Join(tc.deltas, "")
			if sent := strings.Join(got, ""); whole[:w.withheld]+sent != whole {
				t.Errorf("withheld %q + sent %q != reply %q", whole[:w.withheld], sent, whole)
			}
		})
	}
}
