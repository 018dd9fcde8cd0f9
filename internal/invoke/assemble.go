package invoke

import (
	"bytes"
	"maps"
	"strings"

	"github.com/a2a-connector/a2a-connector/internal/a2a"
)

// assembler turns the agent's artifacts, messages and status messages into the reply text and
// the deltas to speak. It does no I/O and is used from one goroutine.
//
// The reply is the text of every artifact, in the order the artifacts first appeared, each
// artifact's text parts concatenated. A Message result is one more artifact at the end.
//
// Deltas: the caller has been told `sent` so far, and speech cannot be taken back, so a delta is
// only ever an extension of `sent`. When the agent replaces text that was already sent with
// something that does not extend it (a correction, a reordering), nothing more is emitted until
// the reply again starts with everything sent and grows past it; the final text still carries
// the agent's truth. While the reply is exactly `sent` (synced), the common cases — appending to
// the last artifact, starting a new one, a cumulative replace of the last one — cost only the
// new bytes; everything else rebuilds the reply once per event. While synced, sent is the reply
// itself and is not kept a second time: only a change that may not extend the reply saves it
// first (keepSent), so that the next rebuild can be compared with it.
type assembler struct {
	max int // reply cap in bytes

	pieces []*piece
	byID   map[string]*piece
	size   int // bytes of the reply (all pieces)

	// sent is the deltas emitted so far, concatenated. While synced they are the reply (size
	// bytes) and sent is not kept up to date: see keepSent.
	sent     []byte
	synced   bool // the reply is exactly what was sent
	tooLarge bool

	meta map[string]any // metadata of the latest artifact that carried some

	nonTextStream   int // non-text parts in streamed artifacts and messages
	nonTextSnapshot int // non-text parts in the latest task snapshot's artifacts
}

// piece is one artifact's text (or one Message result's).
type piece struct {
	id        string
	text      []byte
	lastChunk bool
	meta      map[string]any
}

func newAssembler(maxBytes int) *assembler {
	return &assembler{max: maxBytes, byID: make(map[string]*piece), synced: true}
}

// partsText returns the text of the text parts, concatenated, and the number of other parts.
// The text of a single text part (what streaming agents send per chunk) is not copied.
func partsText(ps a2a.Parts) (text string, nonText int) {
	var b []byte
	texts := 0
	for _, p := range ps {
		if p.Kind != a2a.PartText {
			nonText++
			continue
		}
		if texts++; texts == 1 {
			text = p.Text
			continue
		}
		if texts == 2 {
			b = append(b, text...)
		}
		b = append(b, p.Text...)
	}
	if texts > 1 {
		text = string(b)
	}
	return text, nonText
}

// artifact applies a streamed artifact-update: append=true adds the parts' text to the artifact
// with that id, false replaces it. It returns the new text to speak ("" when none).
func (a *assembler) artifact(ev *a2a.TaskArtifactUpdateEvent) string {
	if a.tooLarge {
		return ""
	}
	chunk, nt := partsText(ev.Artifact.Parts)
	a.nonTextStream += nt
	id := ev.Artifact.ArtifactID
	appendIt := ev.Append
	p := a.byID[id]
	if p == nil {
		p = &piece{id: id}
		a.pieces = append(a.pieces, p)
		a.byID[id] = p
		appendIt = true // setting an artifact never seen is appending to an empty one
	}
	p.lastChunk = ev.LastChunk
	if ev.Artifact.Metadata != nil {
		if appendIt && p.meta != nil {
			p.meta = maps.Clone(p.meta)
			maps.Copy(p.meta, ev.Artifact.Metadata)
		} else {
			p.meta = ev.Artifact.Metadata
		}
		a.meta = p.meta
	}
	last := p == a.pieces[len(a.pieces)-1]
	switch {
	case appendIt && a.synced && last:
		p.text = append(p.text, chunk...)
		return a.grow(chunk)
	case appendIt:
		a.keepSent()
		p.text = append(p.text, chunk...)
		return a.recompute()
	case a.synced && last && len(chunk) >= len(p.text) && chunk[:len(p.text)] == string(p.text):
		// Cumulative agents resend the whole artifact each time; speak only the extension.
		ext := chunk[len(p.text):]
		p.text = append(p.text, ext...)
		return a.grow(ext)
	default:
		a.keepSent()
		p.text = append(p.text[:0], chunk...)
		return a.recompute()
	}
}

// snapshot applies a Task's artifacts (a message/send or tasks/get result, or a Task event in a
// stream): they replace everything known, in order, and two artifacts sharing an id are both
// kept (the platform guide's non-streaming example). A Task without artifacts says nothing about
// the text and changes nothing.
func (a *assembler) snapshot(t *a2a.Task) string {
	if a.tooLarge || len(t.Artifacts) == 0 {
		return ""
	}
	a.keepSent()
	a.pieces = a.pieces[:0]
	clear(a.byID)
	a.nonTextSnapshot = 0
	for _, art := range t.Artifacts {
		text, nt := partsText(art.Parts)
		a.nonTextSnapshot += nt
		p := &piece{id: art.ArtifactID, text: []byte(text), meta: art.Metadata}
		a.pieces = append(a.pieces, p)
		a.byID[art.ArtifactID] = p // later appends go to the last artifact with the id
		if art.Metadata != nil {
			a.meta = art.Metadata
		}
	}
	return a.recompute()
}

// message applies a Message result: its text is reply text, after any artifact text.
func (a *assembler) message(m *a2a.Message) string {
	if a.tooLarge {
		return ""
	}
	text, nt := partsText(m.Parts)
	a.nonTextStream += nt
	// The NUL keeps the id apart from any artifact id an agent could send.
	p := &piece{id: "\x00message", text: []byte(text), meta: m.Metadata}
	a.pieces = append(a.pieces, p)
	if m.Metadata != nil {
		a.meta = m.Metadata
	}
	if a.synced {
		return a.grow(text) // extends the reply
	}
	return a.recompute()
}

// finalStatus uses the text of the status that ended the turn as the reply when no other text
// came (agents put the question of input-required there). It returns the text to speak.
func (a *assembler) finalStatus(text []byte) string {
	if a.tooLarge || a.size > 0 || len(text) == 0 {
		return ""
	}
	a.pieces = append(a.pieces, &piece{id: "\x00status", text: text})
	if a.synced {
		return a.grow(string(text)) // extends the reply
	}
	return a.recompute()
}

// grow records delta, already appended to the end of the reply while synced, and returns it as
// text to speak.
func (a *assembler) grow(delta string) string {
	if a.size+len(delta) > a.max {
		// What was sent is the reply before delta, which only extended it.
		a.sent = a.appendFull(a.sent[:0])[:a.size]
		a.size += len(delta)
		a.tooLarge = true
		a.synced = false
		return ""
	}
	a.size += len(delta)
	return delta
}

// keepSent saves what was sent before a change that may not just extend the reply (while
// synced, the reply is all there is of it). recompute compares the rebuilt reply with it.
func (a *assembler) keepSent() {
	if a.synced {
		a.sent = a.appendFull(a.sent[:0])
	}
}

// recompute rebuilds the reply and returns what it adds to sent, if it extends it. sent must be
// up to date: keepSent ran before the reply changed.
func (a *assembler) recompute() string {
	full := a.full()
	a.size = len(full)
	if a.size > a.max {
		a.tooLarge = true
		a.synced = false
		return ""
	}
	if !bytes.HasPrefix(full, a.sent) {
		a.synced = false
		return ""
	}
	delta := full[len(a.sent):]
	a.synced = true // from here sent is the reply; its buffer is kept for the next keepSent
	return string(delta)
}

// full returns the reply, in a new slice.
func (a *assembler) full() []byte {
	n := 0
	for _, p := range a.pieces {
		n += len(p.text)
	}
	return a.appendFull(make([]byte, 0, n))
}

// appendFull appends the reply to b.
func (a *assembler) appendFull(b []byte) []byte {
	for _, p := range a.pieces {
		b = append(b, p.text...)
	}
	return b
}

// text is the resolved reply: the agent's whole text, or, once the cap was crossed, only what
// was sent (the rest was never spoken and is dropped).
func (a *assembler) text() string {
	if a.tooLarge {
		return string(a.sent)
	}
	var sb strings.Builder // the reply, copied once
	sb.Grow(a.size)
	for _, p := range a.pieces {
		sb.Write(p.text)
	}
	return sb.String()
}

// nonText is the number of skipped non-text parts.
func (a *assembler) nonText() int { return a.nonTextStream + a.nonTextSnapshot }
