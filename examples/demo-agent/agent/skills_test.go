package agent

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestChooseSkill(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		want string
	}{
		{name: "guide_example_repeat", text: "示例: 重复我说的话", want: skillRepeat},
		{name: "guide_example_add", text: "1与2相加是多少", want: skillAdd},
		{name: "guide_example_count", text: "数一下我说了几句话", want: skillCount},
		{name: "guide_example_flash", text: "进行闪光", want: skillFlash},
		{name: "guide_example_coach_with_the_guides_typo", text: "如何打好蓝球", want: skillCoach},
		{name: "football", text: "怎么踢足球", want: skillCoach},
		{name: "repeat_wins_over_add", text: "重复：1加2", want: skillRepeat},
		{name: "coach_wins_over_the_broad_jia", text: "篮球加油", want: skillCoach},
		{name: "plus_sign", text: "3+4", want: skillAdd},
		{name: "english_add", text: "Add 3 and 5", want: skillAdd},
		{name: "english_plus", text: "what is 2 plus 2", want: skillAdd},
		{name: "english_words_only_whole", text: "what is my address", want: ""},
		{name: "english_count", text: "How many sentences have I said?", want: skillCount},
		{name: "english_echo", text: "echo hello", want: skillRepeat},
		{name: "english_blink", text: "Blink the light", want: skillFlash},
		{name: "english_soccer", text: "teach me soccer", want: skillCoach},
		{name: "summer_is_not_sum", text: "summer is hot", want: ""},
		{name: "weather", text: "今天会下雨吗?", want: ""},
		{name: "empty", text: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := chooseSkill(tt.text, false); got != tt.want {
				t.Errorf("chooseSkill(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestRepeatContent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text, want string
	}{
		{name: "after_the_colon", text: "重复我说的话：今天天气很好", want: "今天天气很好"},
		{name: "ascii_colon", text: "复读: hello", want: "hello"},
		{name: "request_runs_to_the_colon", text: "重复一下我说的话：你好呀", want: "你好呀"},
		{name: "colon_inside_the_words_is_kept", text: "重复：时间：10点", want: "时间：10点"},
		{name: "no_separator", text: "重复今天天气很好", want: "今天天气很好"},
		{name: "nothing_after_the_request_echoes_everything", text: "重复我说的话", want: "重复我说的话"},
		{name: "english", text: "Repeat after me: the sky is blue", want: "the sky is blue"},
		{name: "english_echo", text: "echo hello world", want: "hello world"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := repeatContent(tt.text); got != tt.want {
				t.Errorf("repeatContent(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestSplitChunks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		text       string
		wantChunks []string
	}{
		{name: "six_runes_in_three", text: "今天天气很好", wantChunks: []string{"今天", "天气", "很好"}},
		{name: "english_at_spaces", text: "the weather is nice today", wantChunks: []string{"the ", "weather is ", "nice today"}},
		{name: "one_rune", text: "好", wantChunks: []string{"好"}},
		{name: "long_text_at_most_six", text: strings.Repeat("长", 100), wantChunks: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := splitChunks(tt.text)
			if strings.Join(got, "") != tt.text {
				t.Errorf("chunks %q do not join to %q", got, tt.text)
			}
			if len(got) > 6 {
				t.Errorf("%d chunks, want at most 6", len(got))
			}
			if utf8.RuneCountInString(tt.text) >= 3 && len(got) < 3 {
				t.Errorf("%d chunks, want at least 3", len(got))
			}
			if tt.wantChunks != nil {
				if diff := cmp.Diff(tt.wantChunks, got); diff != "" {
					t.Errorf("chunks (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestAdd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		lang lang
		want string // "" means input-required
	}{
		{name: "guide_example", text: "1与2相加是多少", want: "1与2相加等于3"},
		{name: "decimals_are_exact", text: "0.1加0.2", want: "0.1与0.2相加等于0.3"},
		{name: "trailing_zeros_dropped", text: "1.5加1.5", want: "1.5与1.5相加等于3"},
		{name: "three_numbers", text: "1、2和3相加", want: "1、2与3相加等于6"},
		{name: "negative", text: "-3加5", want: "-3与5相加等于2"},
		{name: "minus_after_a_digit_is_not_a_sign", text: "5-3 sum", lang: en, want: "5 plus 3 equals 8"},
		{name: "full_width_digits", text: "１２加３", want: "12与3相加等于15"},
		{name: "english", text: "add 10 and 20", lang: en, want: "10 plus 20 equals 30"},
		{name: "one_number_asks", text: "5加上一个数", want: ""},
		{name: "words_are_not_numbers", text: "帮我算一下加法", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rep := add(turnInput{text: tt.text, lang: tt.lang}, nil)
			if tt.want == "" {
				if rep.state != "input-required" || rep.message == "" {
					t.Errorf("state %s message %q, want input-required with a question", rep.state, rep.message)
				}
				return
			}
			if diff := cmp.Diff([]string{tt.want}, rep.chunks); diff != "" || rep.state != "completed" {
				t.Errorf("state %s, chunks (-want +got):\n%s", rep.state, diff)
			}
		})
	}
}

func TestDetectLang(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		text     string
		fallback lang
		want     lang
	}{
		{name: "han", text: "3和5", fallback: en, want: zh},
		{name: "latin", text: "3 and 5", fallback: zh, want: en},
		{name: "digits_keep_the_fallback", text: "3 5", fallback: en, want: en},
		{name: "mixed_is_chinese", text: "flash 闪光", fallback: en, want: zh},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := detectLang(tt.text, tt.fallback); got != tt.want {
				t.Errorf("detectLang(%q) = %v, want %v", tt.text, got, tt.want)
			}
		})
	}
}

func TestCoachChunks_are_long_enough_to_stream(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		lang lang
		text string
	}{
		{"zh_basketball", zh, "篮球"}, {"zh_football", zh, "足球"}, {"en_basketball", en, "basketball"}, {"en_football", en, "soccer"},
	} {
		chunks := coachChunks(tt.lang, tt.text)
		if len(chunks) < 8 {
			t.Errorf("%s: %d chunks, want at least 8", tt.name, len(chunks))
		}
		if text := strings.Join(chunks, ""); strings.Count(text, "\n\n") < 2 {
			t.Errorf("%s: want several paragraphs, got %q", tt.name, text)
		}
	}
}

func TestLRU_forgets_the_least_recently_used(t *testing.T) {
	t.Parallel()
	c := newLRU[int](2)
	c.add("a", 1)
	c.add("b", 2)
	c.get("a") // a is now more recent than b
	c.add("c", 3)
	if _, ok := c.peek("b"); ok {
		t.Error("b kept, want it evicted")
	}
	for _, k := range []string{"a", "c"} {
		if _, ok := c.peek(k); !ok {
			t.Errorf("%s evicted, want kept", k)
		}
	}
}
