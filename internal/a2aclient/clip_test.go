package a2aclient

import "testing"

func TestClip(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, in string
		n        int
		more     string
		want     string
	}{
		{"short_text_is_kept", "hello", 5, "…", "hello"},
		{"long_text_is_cut_and_marked", "hello world", 5, "…", "hello…"},
		{"no_mark_when_asked_for_none", "hello world", 5, "", "hello"},
		{"cut_at_a_rune_boundary", "héllo", 2, "...", "h..."},
		{"invalid_utf8_is_replaced", "a\xffb", 10, "…", "a\uFFFDb"},
		{"zero_bytes", "abc", 0, "…", "…"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Clip(tt.in, tt.n, tt.more); got != tt.want {
				t.Errorf("Clip(%q, %d, %q) = %q, want %q", tt.in, tt.n, tt.more, got, tt.want)
			}
		})
	}
}
