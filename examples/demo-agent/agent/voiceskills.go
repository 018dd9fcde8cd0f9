package agent

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/a2a-connector/a2a-connector/internal/a2a/a2av0"
)

// The skills an agent with the voice extension adds to the card. They also answer turns that do
// not activate the extension, as plain text (a PIN typed as text is read from the text), so the
// same card works from a chat window; only the voice metadata is left out.
const (
	skillBalance = "ai-balance"
	skillTerms   = "ai-terms"
	skillHandoff = "ai-handoff"
)

// pinLength is the number of digits of the balance skill's PIN.
const pinLength = 6

// pinExpect asks the platform to collect the PIN on the keypad: six digits ended by #, 8 s
// between keys, reprompt after 6 s of silence.
func pinExpect() *expectation {
	return &expectation{input: []string{inputDTMF}, maxDigits: pinLength, endKey: "#", timeoutMs: 8000, noInputTimeout: 6000}
}

// pinQuestion asks for the PIN; again says the previous entry was not six digits.
func pinQuestion(l lang, again bool) reply {
	msg := pick(l, "请用电话按键输入您的6位密码，以井号键结束。", "Please type your 6-digit PIN on the keypad, then press the pound key.")
	if again {
		msg = pick(l, "密码应为6位数字。请重新输入您的6位密码，以井号键结束。",
			"A PIN has exactly 6 digits. Please type your 6-digit PIN again, then press the pound key.")
	}
	return reply{skill: skillBalance, state: a2av0.TaskStateInputRequired, message: msg, expect: pinExpect()}
}

// balance answers the PIN: six digits complete the task with the balance, anything else asks
// again. The digits are never repeated back, logged or kept on the task beyond its history.
func balance(in turnInput) reply {
	pin := in.voice.digits
	if pin == "" {
		// A DTMF turn without its member, or a turn that did not activate the extension: the
		// digits are the text's.
		pin = digitsOf(in.text)
	}
	// Collection that ended on the end key may pass the key along with the digits.
	pin = strings.TrimSuffix(pin, "#")
	if len(pin) != pinLength || strings.Trim(pin, "0123456789") != "" {
		return pinQuestion(in.lang, true)
	}
	return reply{
		skill:  skillBalance,
		state:  a2av0.TaskStateCompleted,
		chunks: []string{pick(in.lang, "密码正确。您的账户余额为1,024.00元。", "Thank you. Your balance is 1,024.00 yuan.")},
	}
}

// digitsOf returns the ASCII and full-width digits of text, in order, as ASCII.
func digitsOf(text string) string {
	var b strings.Builder
	for _, r := range text {
		switch {
		case '0' <= r && r <= '9':
			b.WriteRune(r)
		case '０' <= r && r <= '９':
			b.WriteRune('0' + (r - '０'))
		}
	}
	return b.String()
}

// terms reads a disclosure that must not be interrupted: a working status first, whose message
// carries the no-barge-in request, so the platform knows before the first sentence arrives.
func terms(l lang) reply {
	chunks := []string{
		"This service is provided by Example Ltd. for demonstration only. ",
		"Calls may be recorded to improve the quality of service. ",
		"The information you give is used only to handle your request and is never sold to third parties. ",
		"Balances are as recorded by the bank's systems. ",
		"By continuing, you agree to these terms.",
	}
	if l == zh {
		chunks = []string{
			"本服务由示例公司提供，仅用于演示。",
			"通话可能被录音，用于提升服务质量。",
			"您提供的信息只用于处理本次请求，不会出售给第三方。",
			"余额信息以银行系统记录为准。",
			"继续使用即表示您同意以上条款。",
		}
	}
	return reply{
		skill:     skillTerms,
		state:     a2av0.TaskStateCompleted,
		notice:    pick(l, "以下是服务条款，请完整收听。", "Here are the terms of service; please listen to the end."),
		noBargeIn: true,
		chunks:    chunks,
		slow:      true,
	}
}

// handoff ends the agent's part of the call: to a human when the caller asks for one, or the
// whole conversation on a goodbye. The farewell is the status message, the platform's reply of
// a completed task that sent no artifact.
func handoff(in turnInput) reply {
	sum := summary(in.lang, in.sentences, in.topics)
	if hasKeyword(in.text, []string{"再见", "拜拜"}, []string{"goodbye", "bye"}) {
		return reply{
			skill:   skillHandoff,
			state:   a2av0.TaskStateCompleted,
			message: pick(in.lang, "感谢来电，再见！", "Thanks for calling. Goodbye!"),
			finish:  &finishing{typ: finishEndConversation, reason: "caller said goodbye", summary: sum},
		}
	}
	return reply{
		skill:   skillHandoff,
		state:   a2av0.TaskStateCompleted,
		message: pick(in.lang, "好的，正在为您转接人工客服，请稍候。", "Sure, I'm passing you to a colleague now. Please hold."),
		finish:  &finishing{typ: finishEscalate, reason: "caller asked for a human", summary: sum},
	}
}

// summary is the hand-off summary for whoever takes the call over: how much the caller said and
// what the conversation was about.
func summary(l lang, sentences int, topics []string) string {
	names := make([]string, len(topics))
	for i, s := range topics {
		names[i] = topicName(l, s)
	}
	n := strconv.Itoa(sentences)
	switch {
	case l == zh && len(names) == 0:
		return "来电者共说了" + n + "句话，没有其他话题。"
	case l == zh:
		return "来电者共说了" + n + "句话。话题：" + strings.Join(names, "、") + "。"
	case len(names) == 0:
		return "Messages from the caller: " + n + ". No other topics."
	}
	return "Messages from the caller: " + n + ". Topics: " + strings.Join(names, ", ") + "."
}

func topicName(l lang, skill string) string {
	names := map[string][2]string{
		skillRepeat:  {"复读", "repeating"},
		skillAdd:     {"加法", "addition"},
		skillCount:   {"数句子", "counting sentences"},
		skillFlash:   {"闪光", "flashing"},
		skillCoach:   {"球类教学", "sports coaching"},
		skillBalance: {"查余额", "balance check"},
		skillTerms:   {"服务条款", "terms of service"},
	}
	n, ok := names[skill]
	if !ok {
		return skill
	}
	return pick(l, n[0], n[1])
}

// maxTopics bounds what a conversation remembers for the hand-off summary.
const maxTopics = 10

// addTopic appends skill to topics unless it repeats the last one or says nothing about the
// conversation, dropping the oldest beyond maxTopics.
func addTopic(topics []string, skill string) []string {
	if skill == "" || skill == skillHandoff || len(topics) > 0 && topics[len(topics)-1] == skill {
		return topics
	}
	topics = append(topics, skill)
	if len(topics) > maxTopics {
		topics = topics[len(topics)-maxTopics:]
	}
	return topics
}

// reprompt answers silence: the question the task is waiting on, in the agent's own words,
// collected as before (same expectation). Without a held question it asks what the caller
// wants, keeping the new task open for the answer.
func reprompt(in turnInput) reply {
	q := in.question
	if q == "" {
		q = pick(in.lang, "请问有什么可以帮您？", "What can I do for you?")
	}
	l := detectLang(q, in.lang)
	return reply{
		skill:    in.skill,
		state:    a2av0.TaskStateInputRequired,
		message:  pick(l, "您还在吗？", "Are you still there? ") + q,
		question: q,
		numbers:  in.numbers,
		expect:   in.expect,
	}
}

// resume answers "go on" after an interruption with the rest of the reply the caller cut, when
// what they heard is the start of it. It reports false when there is nothing to resume.
func resume(in turnInput) (reply, bool) {
	it := in.voice.interruption
	if it == nil || in.said == nil || in.said.truncated ||
		!hasKeyword(in.text, []string{"继续", "接着说"}, []string{"continue", "go on", "carry on"}) {
		return reply{}, false
	}
	rest, ok := strings.CutPrefix(in.said.text, strings.TrimSpace(it.heard))
	rest = strings.TrimSpace(rest)
	if !ok || rest == "" {
		return reply{}, false
	}
	intro := pick(in.lang, "好的，接着刚才说：", "Sure, picking up where you stopped me: ")
	return reply{state: a2av0.TaskStateCompleted, chunks: splitChunks(intro + rest)}, true
}

// acknowledge starts the reply by saying where the caller cut the previous one, so the agent
// never assumes it was heard in full. Nothing is said when the caller heard it all (heardText as
// long as the reply). An unknown reply (forgotten, or said by another instance) is acknowledged
// too: the platform only reports an interruption when there was one.
func acknowledge(in turnInput, rep reply) reply {
	it := in.voice.interruption
	if it == nil {
		return rep
	}
	heard := strings.TrimSpace(it.heard)
	if in.said != nil && utf8.RuneCountInString(heard) >= in.said.runes {
		return rep
	}
	ack := pick(in.lang, "您在我开口前就打断了我。", "You stopped me before I said anything.")
	// The quote is the end of what was heard, without its closing punctuation: the sentence
	// around it has its own.
	if tail := lastRunes(strings.TrimRight(heard, " .,;:!?。，、；：！？"), 24); tail != "" {
		ack = pick(in.lang, "您在我说到“"+tail+"”时打断了我。", "You stopped me after “"+tail+"”.")
	}
	if in.lang == en {
		ack += " "
	}
	if rep.state == a2av0.TaskStateInputRequired && rep.question == "" {
		rep.question = rep.message // a later reprompt repeats the question, not the acknowledgement
	}
	switch {
	case len(rep.chunks) > 0:
		rep.chunks = append([]string{ack + rep.chunks[0]}, rep.chunks[1:]...)
	default:
		rep.message = strings.TrimSpace(ack + rep.message)
	}
	return rep
}

// lastRunes is the last n runes of s, led by "…" when s is longer. A word cut in two at the
// start is dropped when a whole word follows it.
func lastRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := len(s)
	for range n {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	if s[i-1] != ' ' && s[i] != ' ' {
		if j := strings.IndexByte(s[i:], ' '); j >= 0 {
			i += j + 1
		}
	}
	return "…" + s[i:]
}

// hasKeyword reports whether text has one of the Chinese words anywhere or one of the English
// words (or phrases) as whole words.
func hasKeyword(text string, zhWords, enWords []string) bool {
	for _, w := range zhWords {
		if strings.Contains(text, w) {
			return true
		}
	}
	words := " " + strings.Join(englishWords(text), " ") + " "
	for _, w := range enWords {
		if strings.Contains(words, " "+w+" ") {
			return true
		}
	}
	return false
}
