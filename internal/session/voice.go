package session

import connector "github.com/a2a-connector/a2a-connector"

// speechWatcher returns the OnMetadata of a voice-extension agent's turn: it sends the engine a
// SpeechEvent the first time the agent says whether its reply may be interrupted, and again only
// when the agent changes its mind. It runs on the turn's goroutine, before the text of the event
// that carried the metadata, so the engine learns it before or with the first words.
func (r *Router) speechWatcher(emit func(connector.TurnEvent)) func(map[string]any) {
	said, last := false, false
	return func(md map[string]any) {
		bargeIn, ok := r.voice.Speech(md)
		if !ok || (said && bargeIn == last) {
			return
		}
		said, last = true, bargeIn
		emit(connector.TurnEvent{Kind: connector.SpeechEvent, BargeIn: bargeIn})
	}
}

// voiceEnding reads, from the metadata of the message that ended a voice-extension agent's
// turn, how it finishes its part (a completed or declined turn) or how it wants its question
// answered (input-required). Other outcomes carry neither.
func (r *Router) voiceEnding(final *connector.TurnFinal, md map[string]any) {
	if md == nil {
		return
	}
	switch final.Outcome {
	case connector.OutcomeCompleted, connector.OutcomeHandback:
		final.Finish = r.voice.Finish(md)
	case connector.OutcomeInputRequired:
		final.Expect = r.voice.Expect(md)
	}
}
