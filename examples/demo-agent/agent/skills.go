package agent

import (
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/a2a-connector/a2a-connector/internal/a2a/a2av0"
)

// lang is the language the agent answers in: the user's.
type lang int

const (
	zh lang = iota
	en
)

// detectLang answers in Chinese when the text has any Han character, in English when it has
// Latin letters, else in fallback (a bare "3 5" keeps the task's language).
func detectLang(text string, fallback lang) lang {
	latin := false
	for _, r := range text {
		if unicode.Is(unicode.Han, r) {
			return zh
		}
		if r < utf8.RuneSelf && unicode.IsLetter(r) {
			latin = true
		}
	}
	if latin {
		return en
	}
	return fallback
}

// turnInput is what a skill needs to know about one user message.
type turnInput struct {
	text string
	lang lang
	// sentences is the number of user messages in the context, this one included.
	sentences int
	// skill is the skill of the input-required task this message continues; "" for a new task.
	skill string
	// numbers are the addends the continued add task already has.
	numbers []number

	// voiceSkills enables the skills of the voice extension: the agent declares it.
	voiceSkills bool
	// voice is the turn's voice metadata; the zero value when the turn did not activate the
	// extension.
	voice voiceInput
	// question and expect are the held task's last question and how it asked for the answer,
	// for a reprompt on silence.
	question string
	expect   *expectation
	// topics are the skills the context used so far, oldest first (the hand-off summary).
	topics []string
	// said is the reply the turn's interruption cut, nil when there is no interruption or the
	// agent does not remember that reply.
	said *spokenReply
}

// reply is what a skill decided; the agent turns it into stream events.
type reply struct {
	skill string
	// state is the final or interrupted state the turn ends in.
	state a2av0.TaskState
	// chunks are the artifact text chunks, in order, all of one artifact.
	chunks []string
	// slow spaces the chunks by Options.ChunkDelay.
	slow bool
	// metadata goes on the last chunk's artifact (device commands).
	metadata map[string]any
	// message is the text of the final status message (the question of input-required, the
	// reason of rejected or canceled); "" for none.
	message string
	// numbers are kept on the task for the next turn of an input-required add.
	numbers []number

	// notice, when set, is a working status message sent before the first chunk.
	notice string
	// noBargeIn asks that the reply not be interrupted (sent with notice, when activated).
	noBargeIn bool
	// expect says how to collect the answer to an input-required question.
	expect *expectation
	// finish says how a completed turn ends the agent's part; nil is a plain completion.
	finish *finishing
	// question is the question an input-required reply waits on when message says more than
	// it (a reprompt, an acknowledgement); "" means message is the question.
	question string
}

// decide picks the skill for a message and computes its answer. It is pure: all state it needs
// is in in.
func decide(in turnInput) reply {
	if rep, ok := resume(in); ok {
		return rep
	}
	return acknowledge(in, choose(in))
}

// choose answers the turn's input: silence with a reprompt, a hand-off request whatever the
// task, a continuation by the skill that asked, anything else by its keywords.
func choose(in turnInput) reply {
	if in.voice.kind == inputNoInput {
		return reprompt(in)
	}
	skill := chooseSkill(in.text, in.voiceSkills)
	if skill == skillHandoff {
		return handoff(in)
	}
	switch in.skill {
	case skillAdd, skillBalance:
		if isCancelWord(in.text) {
			return reply{skill: in.skill, state: a2av0.TaskStateCanceled, message: cancelText(in.lang, in.skill)}
		}
		if in.skill == skillBalance {
			return balance(in)
		}
		return add(in, in.numbers)
	}
	switch skill {
	case skillRepeat:
		return reply{skill: skillRepeat, state: a2av0.TaskStateCompleted, chunks: splitChunks(repeatContent(in.text))}
	case skillCount:
		return reply{skill: skillCount, state: a2av0.TaskStateCompleted, chunks: []string{countText(in.lang, in.sentences)}}
	case skillFlash:
		return reply{
			skill:    skillFlash,
			state:    a2av0.TaskStateCompleted,
			chunks:   []string{pick(in.lang, "好的，正在闪光", "OK, flashing now")},
			metadata: flashCommand(in.text),
		}
	case skillCoach:
		return reply{skill: skillCoach, state: a2av0.TaskStateCompleted, chunks: coachChunks(in.lang, in.text), slow: true}
	case skillAdd:
		return add(in, nil)
	case skillBalance:
		return pinQuestion(in.lang, false)
	case skillTerms:
		return terms(in.lang)
	}
	return reply{state: a2av0.TaskStateRejected, message: rejectText(in.lang, in.voiceSkills)}
}

// rejectText says what the agent can do; the voice skills are named only by an agent that has them.
func rejectText(l lang, voiceSkills bool) string {
	if voiceSkills {
		return pick(l,
			"抱歉，这个我不会。我可以复读你的话、计算加法、数你说了几句话、闪光、教你打篮球和踢足球，还能查余额、读服务条款和转人工。",
			"Sorry, I can't help with that. I can repeat what you say, add numbers, count your sentences, flash, coach you in basketball or football, check your balance, read the terms, and pass you to a human.")
	}
	return pick(l,
		"抱歉，这个我不会。我可以复读你的话、计算加法、数你说了几句话、闪光，还能教你打篮球和踢足球。",
		"Sorry, I can't help with that. I can repeat what you say, add numbers, count your sentences, flash, and coach you in basketball or football.")
}

// cancelText confirms that the question of skill is dropped.
func cancelText(l lang, skill string) string {
	if skill == skillBalance {
		return pick(l, "好的，不查余额了。", "OK, I won't check your balance.")
	}
	return pick(l, "好的，已取消计算。", "OK, I won't add anything.")
}

func pick(l lang, zhText, enText string) string {
	if l == en {
		return enText
	}
	return zhText
}

// keyword says which skill a word or phrase asks for. Chinese keywords match anywhere in the
// text; English ones match whole words (so "address" does not ask for "add").
type keyword struct {
	skill string
	zh    []string
	en    []string
}

// chooseSkill returns the skill the text asks for, or "". The order settles overlaps: "重复：1加2"
// repeats, "篮球加油" coaches, "转人工查余额" hands off, and the broad "加" is tried last. The
// voice extension's skills are known only to an agent that declares it.
func chooseSkill(text string, voiceSkills bool) string {
	table := []keyword{
		{skill: skillRepeat, zh: []string{"复读", "重复"}, en: []string{"repeat", "echo"}},
		{skill: skillHandoff, zh: []string{"转人工", "人工", "真人", "再见", "拜拜"}, en: []string{"human", "agent", "operator", "representative", "goodbye", "bye"}},
		{skill: skillBalance, zh: []string{"查余额", "余额"}, en: []string{"balance"}},
		{skill: skillTerms, zh: []string{"条款", "免责声明"}, en: []string{"terms", "disclosure"}},
		{skill: skillCount, zh: []string{"数数", "数一下", "数一数", "几句"}, en: []string{"count", "how many"}},
		{skill: skillFlash, zh: []string{"闪光", "闪灯", "闪一下", "闪烁"}, en: []string{"flash", "blink"}},
		{skill: skillCoach, zh: []string{"教练", "篮球", "蓝球", "足球"}, en: []string{"coach", "basketball", "football", "soccer"}},
		{skill: skillAdd, zh: []string{"相加", "加法", "加", "+", "＋"}, en: []string{"plus", "add", "sum"}},
	}
	// "人工智能" (artificial intelligence) is no request for a human (人工).
	matchText := strings.ReplaceAll(text, "人工智能", "")
	for _, k := range table {
		if !voiceSkills && (k.skill == skillHandoff || k.skill == skillBalance || k.skill == skillTerms) {
			continue
		}
		if hasKeyword(matchText, k.zh, k.en) {
			return k.skill
		}
	}
	return ""
}

// englishWords returns the lowercased runs of ASCII letters of text.
func englishWords(text string) []string {
	return strings.FieldsFunc(asciiLower(text), func(r rune) bool { return r > 'z' || r < 'a' })
}

// asciiLower lowercases ASCII letters only, keeping byte offsets equal to text's.
func asciiLower(text string) string {
	b := []byte(text)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func isCancelWord(text string) bool {
	return hasKeyword(text, []string{"取消", "算了", "不用了", "退出"}, []string{"cancel", "never mind", "stop", "quit"})
}

// repeatContent is what the repeat skill says back: the words after the request ("重复我说的话：
// 今天天气很好" → "今天天气很好"), or the whole text when nothing follows the request.
func repeatContent(text string) string {
	const cut = " \t\r\n:：,，.。!！、"
	lower := asciiLower(text)
	for _, kw := range []string{"复读我说的话", "重复我说的话", "复读一下", "重复一下", "复读", "重复", "repeat after me", "repeat", "echo"} {
		i := strings.Index(lower, kw)
		if i < 0 {
			continue
		}
		after := text[i+len(kw):]
		rest := strings.TrimLeft(after, cut)
		if rest == after {
			// "重复一下我说的话：xxx": the request goes on up to a nearby colon.
			if j := strings.IndexAny(rest, ":："); j >= 0 && j < 24 {
				rest = strings.TrimLeft(rest[j:], cut)
			}
		}
		if strings.TrimSpace(rest) != "" {
			return strings.TrimSpace(rest)
		}
		break
	}
	return strings.TrimSpace(text)
}

// splitChunks splits text into 3 to 6 pieces (fewer when it is shorter), at spaces when it has
// them, so the repeat skill streams. Joined, the pieces are text.
func splitChunks(text string) []string {
	var tokens []string
	if strings.Contains(text, " ") {
		tokens = strings.SplitAfter(text, " ")
	} else {
		for _, r := range text {
			tokens = append(tokens, string(r))
		}
	}
	n := min(max((len(tokens)+2)/3, 3), 6, len(tokens))
	if n == 0 {
		return []string{text}
	}
	chunks := make([]string, 0, n)
	for i := range n {
		lo, hi := i*len(tokens)/n, (i+1)*len(tokens)/n
		chunks = append(chunks, strings.Join(tokens[lo:hi], ""))
	}
	return chunks
}

func countText(l lang, n int) string {
	if l == en {
		if n == 1 {
			return "You have said 1 sentence in this conversation."
		}
		return "You have said " + strconv.Itoa(n) + " sentences in this conversation."
	}
	return "你在这次对话中一共说了" + strconv.Itoa(n) + "句话。"
}

// numberRE finds unsigned integers and decimals; a minus sign is looked at separately.
var numberRE = regexp.MustCompile(`[0-9]+(?:\.[0-9]+)?`)

// Limits on what the add skill reads, so a 1 MiB message of digits stays cheap.
const (
	maxNumbers     = 100
	maxNumberBytes = 40
)

// extractNumbers returns the numbers in text in order. Full-width digits count; "-3" is
// negative unless the minus follows a digit ("5-3" is 5 and 3). Numbers written in words
// ("三", "three") are not understood: "数一下" must not become 1.
func extractNumbers(text string) []number {
	text = strings.Map(func(r rune) rune {
		switch {
		case '０' <= r && r <= '９':
			return '0' + (r - '０')
		case r == '．':
			return '.'
		case r == '－':
			return '-'
		}
		return r
	}, text)
	var out []number
	for _, loc := range numberRE.FindAllStringIndex(text, -1) {
		if len(out) == maxNumbers {
			break
		}
		s := text[loc[0]:loc[1]]
		if len(s) > maxNumberBytes {
			continue
		}
		if loc[0] > 0 && text[loc[0]-1] == '-' && (loc[0] < 2 || text[loc[0]-2] < '0' || text[loc[0]-2] > '9') {
			s = "-" + s
		}
		v, ok := new(big.Rat).SetString(s)
		if !ok {
			continue
		}
		out = append(out, number{text: s, value: v})
	}
	return out
}

// add sums the numbers of the text after those already gathered; with fewer than two it asks
// for them (input-required) and keeps what it has.
func add(in turnInput, have []number) reply {
	nums := append(append([]number(nil), have...), extractNumbers(in.text)...)
	if len(nums) < 2 {
		return reply{
			skill:   skillAdd,
			state:   a2av0.TaskStateInputRequired,
			message: pick(in.lang, "请告诉我要相加的两个数，例如：3和5", "Which two numbers should I add? For example: 3 and 5"),
			numbers: nums,
		}
	}
	sum := new(big.Rat)
	decimals := 0
	texts := make([]string, len(nums))
	for i, n := range nums {
		sum.Add(sum, n.value)
		texts[i] = n.text
		if j := strings.IndexByte(n.text, '.'); j >= 0 {
			decimals = max(decimals, len(n.text)-j-1)
		}
	}
	total := formatRat(sum, decimals)
	var text string
	if in.lang == en {
		text = strings.Join(texts, " plus ") + " equals " + total
	} else {
		text = strings.Join(texts[:len(texts)-1], "、") + "与" + texts[len(texts)-1] + "相加等于" + total
	}
	return reply{skill: skillAdd, state: a2av0.TaskStateCompleted, chunks: []string{text}}
}

// formatRat writes an exact sum of decimals with at most the inputs' decimals, trailing zeros
// dropped: 0.1+0.2 is "0.3", 1.5+1.5 is "3".
func formatRat(r *big.Rat, decimals int) string {
	if r.IsInt() {
		return r.Num().String()
	}
	s := r.FloatString(decimals)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// flashCommand is the device command of the flash skill, put in the metadata of its last
// artifact: {"commands":[{"name":"flash","params":{"times":3,"color":"white"}}]}. The text may
// set times (the first integer 1..20, "闪5次") and the colour.
func flashCommand(text string) map[string]any {
	times := 3
	for _, n := range extractNumbers(text) {
		if v, err := strconv.Atoi(n.text); err == nil && v >= 1 && v <= 20 {
			times = v
			break
		}
	}
	color := "white"
	words := " " + strings.Join(englishWords(text), " ") + " "
	for _, c := range []struct{ zh, en string }{
		{"红", "red"}, {"绿", "green"}, {"蓝", "blue"}, {"黄", "yellow"}, {"紫", "purple"}, {"白", "white"},
	} {
		if strings.Contains(text, c.zh) || strings.Contains(words, " "+c.en+" ") {
			color = c.en
			break
		}
	}
	return map[string]any{
		"commands": []any{
			map[string]any{"name": "flash", "params": map[string]any{"times": times, "color": color}},
		},
	}
}
