package session

import "unicode/utf8"

// withholder keeps the first bytes of a reply's text out of its deltas: those the engine says it
// already received from an earlier attempt of the same turn (Turn.ReceivedTextBytes), so that a
// turn retried on another replica does not make the user hear them twice. It counts UTF-8 bytes
// of the deltas as they come; a count that falls inside a character withholds that whole
// character (the engine cannot have spoken half of one). A reply shorter than the count is
// withheld whole.
type withholder struct {
	left     int // bytes still to withhold
	withheld int // bytes withheld so far (TurnFinal.withheld_text_bytes)
}

// cut returns the part of delta to send, "" when all of it is withheld.
func (w *withholder) cut(delta string) string {
	if w.left <= 0 {
		return delta
	}
	if len(delta) <= w.left {
		w.left -= len(delta)
		w.withheld += len(delta)
		return ""
	}
	i := w.left
	for i < len(delta) && !utf8.RuneStart(delta[i]) {
		i++
	}
	w.left = 0
	w.withheld += i
	return delta[i:]
}
