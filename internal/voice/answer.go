package voice

import (
	"encoding/json"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	connector "github.com/a2a-connector/a2a-connector"
)

// What an agent answers is read leniently: a member of the wrong type or out of range is left
// out, as if the agent had not said it, rather than failing a turn whose words arrived fine.
// Strings are clipped so that an agent cannot inflate what the engine receives.
const (
	maxReasonBytes  = 1024
	maxSummaryBytes = 8 * 1024
	maxDigits       = 64
	maxWait         = 10 * time.Minute
)

// Finish reads how the agent finishes its part from the metadata of the message that ended the
// turn; nil when it did not say or said a type the extension does not define.
func (x *Extension) Finish(md map[string]any) *connector.Finish {
	obj, ok := md[x.finish].(map[string]any)
	if !ok {
		return nil
	}
	typ, _ := obj["type"].(string)
	switch connector.FinishType(typ) {
	case connector.FinishComplete, connector.FinishEscalate, connector.FinishEndConversation:
	default:
		return nil
	}
	return &connector.Finish{Type: connector.FinishType(typ),
		Reason: clip(stringMember(obj, "reason"), maxReasonBytes), Summary: clip(stringMember(obj, "summary"), maxSummaryBytes)}
}

// Expect reads how the agent wants its question answered from the metadata of the message that
// ended the turn; nil when it said nothing usable.
func (x *Extension) Expect(md map[string]any) *connector.Expect {
	obj, ok := md[x.expect].(map[string]any)
	if !ok {
		return nil
	}
	e := &connector.Expect{NoInputTimeout: millis(obj["noInputTimeoutMs"])}
	if list, ok := obj["input"].([]any); ok {
		for _, v := range list {
			switch s, _ := v.(string); connector.InputMode(s) {
			case connector.InputModeSpeech, connector.InputModeDTMF:
				e.Input = append(e.Input, connector.InputMode(s))
			}
		}
	}
	if d, ok := obj["dtmf"].(map[string]any); ok {
		dt := &connector.ExpectDTMF{Timeout: millis(d["timeoutMs"])}
		if n, ok := count(d["maxDigits"]); ok && n >= 1 && n <= maxDigits {
			dt.MaxDigits = n
		}
		if k, _ := d["endKey"].(string); len(k) == 1 && strings.Contains(dtmfKeys, k) {
			dt.EndKey = k
		}
		if *dt != (connector.ExpectDTMF{}) {
			e.DTMF = dt
		}
	}
	if e.Input == nil && e.DTMF == nil && e.NoInputTimeout == 0 {
		return nil
	}
	return e
}

// Speech reads whether the reply may be interrupted from one event's metadata; ok is false when
// the metadata does not say.
func (x *Extension) Speech(md map[string]any) (bargeIn, ok bool) {
	obj, isObj := md[x.speech].(map[string]any)
	if !isObj {
		return false, false
	}
	bargeIn, ok = obj["bargeIn"].(bool)
	return bargeIn, ok
}

func stringMember(obj map[string]any, name string) string {
	s, _ := obj[name].(string)
	return s
}

// count is a JSON number that is a whole number within int range.
func count(v any) (int, bool) {
	f, ok := v.(float64)
	if n, isNumber := v.(json.Number); isNumber {
		var err error
		f, err = n.Float64()
		ok = err == nil
	}
	if !ok || f != math.Trunc(f) || f < 0 || f > math.MaxInt32 {
		return 0, false
	}
	return int(f), true
}

// millis is a JSON number of milliseconds, 0 when absent, not a whole number or over maxWait.
func millis(v any) time.Duration {
	n, ok := count(v)
	if !ok {
		return 0
	}
	d := time.Duration(n) * time.Millisecond
	if d > maxWait {
		return 0
	}
	return d
}

// clip cuts s to at most n bytes at a character boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
