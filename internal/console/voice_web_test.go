package console

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/a2a-connector/a2a-connector/internal/voiceagent"
)

// TestTryItVoiceInBrowser drives "Try it" as a call in headless Chromium against a real console
// (real Postgres, the connector's session router) and real agents on the A2A Go SDK v2: the
// keypad (# sends with the end key, "Send digits" with a timeout), "say nothing" and "interrupt
// after N characters" reach an agent that declares the voice extension, and its finish, expect
// and barge-in come back in words; an agent without the extension gets the keypad only, its
// digits as text, and the page says why there is no "say nothing".
func TestTryItVoiceInBrowser(t *testing.T) {
	t.Parallel()
	b := newBrowser(t) // first: skips (or fails in CI) before anything else starts

	e, _, _ := newDemoEnv(t)
	_, token := e.newTenant("voice in browser")
	voice := voiceagent.New(t, voiceagent.Options{})
	plain := voiceagent.New(t, voiceagent.Options{Undeclared: true})
	register := func(cardURL string) string {
		r := e.do(http.MethodPost, "/v1/agents", token, map[string]string{"cardUrl": cardURL})
		e.expect(r, http.StatusCreated)
		return fmt.Sprintf(`article.agent[data-agent-id=%q]`, r.json(t)["id"].(string))
	}
	voiceSel, plainSel := register(voice.CardURL), register(plain.CardURL)
	lastTurn := voiceSel + " .try-log > li.turn:last-child"

	b.do("open the console", chromedp.Navigate(e.api.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#token-input")))
	b.typeInto("#token-input", token)
	b.click("#token-save")
	b.waitText(voiceSel+" .badges", "voice extension")
	if strings.Contains(b.text(plainSel+" .badges"), "voice extension") {
		t.Fatal("an agent without the voice extension has its badge")
	}

	// The keypad: digits, then # sends them with the end key.
	for _, k := range []string{"1", "2", "3", "4"} {
		b.click(fmt.Sprintf(`%s .key[data-key=%q]`, voiceSel, k))
	}
	b.waitText(voiceSel+" .keypad-digits", "1234")
	b.click(voiceSel + ` .key[data-key="#"]`)
	b.waitText(lastTurn+" .you", "pressed 1234 #")
	b.waitText(lastTurn+" .reply", voiceagent.Pressed("1234", "endKey"))
	b.waitText(lastTurn+" .voice-finish", "finish: complete", "done with its part")
	b.waitText(voiceSel+" .keypad-digits", "—")

	// A question that wants keypad digits says so in words.
	b.typeInto(voiceSel+" .try-input", "my pin")
	b.click(voiceSel + " .try-send")
	b.waitText(lastTurn+" .asks", voiceagent.AskPIN)
	b.waitText(lastTurn+" .voice-expect", "Answer with keypad digits (at most 4, end with #, within 8 s).", "After 6 s of silence")

	// Say nothing: the agent is told about 5 s of silence and asks whether the caller is there.
	b.click(voiceSel + " .try-silence")
	b.waitText(lastTurn+" .you", "said nothing for 5 s")
	b.waitText(lastTurn+" .asks", voiceagent.StillThere)
	if in := voice.Received(); len(in) != 3 || in[2].Input["kind"] != "noInput" || in[2].Input["silenceMs"] != 5000.0 {
		t.Fatalf("after say nothing the agent received %+v", in)
	}

	// Interrupt after 5 characters: the next turn says the caller heard "Are y" of that question.
	b.typeInto(voiceSel+" .interrupt-chars", "5")
	b.typeInto(voiceSel+" .try-input", "what")
	b.click(voiceSel + " .try-send")
	b.waitText(lastTurn+" .interrupted", "after 5 characters", "“Are y”")
	b.waitText(lastTurn+" .reply", voiceagent.Heard("Are y"))
	in := voice.Received()
	if cut := in[len(in)-1].Interruption; cut["heardText"] != "Are y" || cut["messageId"] != in[2].MessageID {
		t.Fatalf("interruption = %v, want the heard text of the silence turn's reply (message %s)", cut, in[2].MessageID)
	}
	if v := evalJS[string](b, fmt.Sprintf(`document.querySelector(%s).value`, jsString(voiceSel+" .interrupt-chars"))); v != "" {
		t.Errorf("interrupt after = %q after use, want it cleared (one turn only)", v)
	}

	// A reply that must not be interrupted, and a hand-over to a human, in words.
	b.typeInto(voiceSel+" .try-input", "read the disclosure")
	b.click(voiceSel + " .try-send")
	b.waitText(lastTurn+" .voice-bargein", "no barge-in", "asked not to be interrupted")
	b.typeInto(voiceSel+" .try-input", "a human please")
	b.click(voiceSel + " .try-send")
	b.waitText(lastTurn+" .voice-finish", "finish: escalate", "hands the caller to a human", voiceagent.EscalateReason, voiceagent.EscalateSummary)
	b.snapElement("try-it-voice", voiceSel)

	// Without the extension: the keypad (digits as text, "Send digits" ends with a timeout), no
	// say nothing, and why.
	b.waitText(plainSel+" .try-no-voice", "does not declare the voice extension")
	if evalJS[bool](b, fmt.Sprintf(`!!document.querySelector(%s) || !!document.querySelector(%s)`,
		jsString(plainSel+" .try-silence"), jsString(plainSel+" .interrupt-chars"))) {
		t.Fatal("say nothing or interrupt is offered for an agent without the voice extension")
	}
	b.click(plainSel + ` .key[data-key="4"]`)
	b.click(plainSel + ` .key[data-key="2"]`)
	b.click(plainSel + " .keypad-send")
	b.waitText(plainSel+" .try-log > li.turn:last-child .reply", voiceagent.Echo("42"))
	if got := plain.Received(); len(got) != 1 || got[0].Text != "42" || got[0].Activated || got[0].Input != nil {
		t.Fatalf("the agent without the extension received %+v", got)
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.dialogs) > 0 {
		t.Errorf("the page opened dialogs: %q", b.dialogs)
	}
	if len(b.exceptions) > 0 {
		t.Errorf("the page threw: %q", b.exceptions)
	}
	if len(b.security) > 0 {
		t.Errorf("Content-Security-Policy violations: %q", b.security)
	}
}
