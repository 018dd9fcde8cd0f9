package voice

import (
	"strings"
	"testing"
)

func TestFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		fault func(string) string
		value string
		want  string // a part of the fault; "" for none
	}{
		{"every_keypad_key", DigitsFault, "0123456789*#ABCD", ""},
		{"digits_at_the_limit", DigitsFault, strings.Repeat("1", MaxDTMFDigits), ""},
		{"digits_over_the_limit", DigitsFault, strings.Repeat("1", MaxDTMFDigits+1), "longer than 64 digits"},
		{"a_letter_is_no_key", DigitsFault, "12x", "at byte 2 that is not a DTMF key"},
		{"lowercase_key", DigitsFault, "a", "not a DTMF key"},
		{"channel_kind", ChannelKindFault, "in-car_2", ""},
		{"channel_kind_upper", ChannelKindFault, "Voice", `may hold only a-z`},
		{"channel_kind_long", ChannelKindFault, strings.Repeat("v", MaxChannelKindBytes+1), "longer than 32 bytes"},
		{"locale", LocaleFault, "zh-CN", ""},
		{"locale_not_a_tag", LocaleFault, "not a tag", "not a well-formed BCP 47"},
		{"locale_long", LocaleFault, strings.Repeat("a", MaxLocaleBytes+1), "longer than 35 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.fault(tt.value)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("fault = %q, want one containing %q", got, tt.want)
			}
			if got != "" && strings.Contains(got, tt.value) && len(tt.value) > 1 {
				t.Errorf("fault %q repeats the value", got)
			}
		})
	}
}
