package agent

import (
	"container/list"
	"encoding/json"
	"errors"
	"maps"
	"math/big"
	"slices"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/a2a/a2av0"
)

// lru is a map bounded to max entries that forgets the least recently used one. Not safe for
// concurrent use: Agent.mu guards it.
type lru[V any] struct {
	max int
	ll  *list.List // front = most recently used; elements hold *lruEntry[V]
	m   map[string]*list.Element
}

type lruEntry[V any] struct {
	key string
	val V
}

func newLRU[V any](max int) *lru[V] {
	return &lru[V]{max: max, ll: list.New(), m: make(map[string]*list.Element)}
}

// get returns the value and marks it used.
func (c *lru[V]) get(key string) (V, bool) {
	el, ok := c.m[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.ll.MoveToFront(el)
	return el.Value.(*lruEntry[V]).val, true
}

// peek returns the value without marking it used.
func (c *lru[V]) peek(key string) (V, bool) {
	el, ok := c.m[key]
	if !ok {
		var zero V
		return zero, false
	}
	return el.Value.(*lruEntry[V]).val, true
}

// add inserts or replaces key and evicts beyond max.
func (c *lru[V]) add(key string, val V) {
	if el, ok := c.m[key]; ok {
		el.Value.(*lruEntry[V]).val = val
		c.ll.MoveToFront(el)
		return
	}
	c.m[key] = c.ll.PushFront(&lruEntry[V]{key: key, val: val})
	for c.ll.Len() > c.max {
		old := c.ll.Back()
		c.ll.Remove(old)
		delete(c.m, old.Value.(*lruEntry[V]).key)
	}
}

func (c *lru[V]) len() int { return c.ll.Len() }

// conversation is what the agent remembers of one contextId.
type conversation struct {
	// sentences counts the user messages received in this context (the count skill's answer);
	// a silence is no message.
	sentences int
	// topics are the skills used in the context, for a hand-off summary (voice skills only).
	topics []string
	// lastSaid is the reply to the context's last activated turn: what an interruption that
	// names no known messageId refers to.
	lastSaid *spokenReply
}

// event is one result of a task's stream, marshalled once when it happened.
type event struct {
	result json.RawMessage
	// final marks the status-update that ends a stream (final: true).
	final bool
}

// task is one A2A task. Every field is guarded by Agent.mu.
type task struct {
	id, contextID string
	// skill is the skill that owns the task; a continuation goes back to it.
	skill string
	// numbers are the addends gathered so far while the add skill waits for more.
	numbers []number
	// lang is the language of the task's last turn: the fallback for a continuation whose
	// text has no letters ("3 5").
	lang lang
	// question and expect are what an input-required task waits on and how it asked for it,
	// repeated by a reprompt on silence.
	question string
	expect   *expectation
	// messageID is the messageId of the user message of the running (or last) turn: the key
	// its reply is remembered under.
	messageID string

	status    a2av0.TaskStatus
	artifacts []a2av0.Artifact
	history   []a2av0.Message

	// events is every stream result of the task so far, across turns; streams and
	// resubscriptions write them out from their own cursor.
	events []event
	// changed is closed and replaced whenever events grows.
	changed chan struct{}
	// stop cancels the turn now running for the task; nil when no turn runs.
	stop func()
	// canceledByRequest is set by tasks/cancel.
	canceledByRequest bool
}

// number is an addend as the user wrote it and its exact value.
type number struct {
	text  string
	value *big.Rat
}

// snapshot returns a copy of the task safe to marshal outside the lock. historyLength < 0 keeps
// the whole history, 0 none, n the last n messages.
func (t *task) snapshot(historyLength int) a2av0.Task {
	s := a2av0.Task{ID: t.id, ContextID: t.contextID, Kind: a2av0.KindTask, Status: t.status}
	if len(t.artifacts) > 0 {
		s.Artifacts = make([]a2av0.Artifact, len(t.artifacts))
		for i, art := range t.artifacts {
			art.Parts = slices.Clone(art.Parts)
			s.Artifacts[i] = art
		}
	}
	h := t.history
	if historyLength >= 0 && len(h) > historyLength {
		h = h[len(h)-historyLength:]
	}
	if len(h) > 0 {
		s.History = slices.Clone(h)
	}
	return s
}

// errTaskOver says the task reached a final state (it was canceled) while a turn worked on it.
var errTaskOver = errors.New("task is over")

// appendEvent logs a stream result and wakes its followers.
func (t *task) appendEvent(result any, final bool) {
	t.events = append(t.events, event{result: mustMarshal(result), final: final})
	close(t.changed)
	t.changed = make(chan struct{})
}

// timestamp is a status timestamp in the form of the guide's examples.
func (a *Agent) timestamp() string {
	return a.now().UTC().Format(time.RFC3339Nano)
}

// agentMessage is a message from the agent about t, with optional metadata. An empty text is
// still one (empty) text part: a message that exists only for its metadata needs a part, and a
// single empty text part is what every A2A SDK accepts.
func (a *Agent) agentMessage(t *task, text string, metadata map[string]any) *a2av0.Message {
	return &a2av0.Message{
		Kind:      a2av0.KindMessage,
		Role:      a2av0.RoleAgent,
		Parts:     a2av0.Parts{a2av0.TextPart(text)},
		MessageID: a.newID(),
		TaskID:    t.id,
		ContextID: t.contextID,
		Metadata:  metadata,
	}
}

// emitWorking logs a working status-update whose message is text with metadata: a notice sent
// before the reply's first chunk. It fails with errTaskOver once the task is final.
func (a *Agent) emitWorking(t *task, text string, metadata map[string]any) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t.status.State.IsTerminal() {
		return errTaskOver
	}
	t.status = a2av0.TaskStatus{State: a2av0.TaskStateWorking, Message: a.agentMessage(t, text, metadata), Timestamp: a.timestamp()}
	t.appendEvent(a2av0.TaskStatusUpdateEvent{
		Kind:      a2av0.KindStatusUpdate,
		TaskID:    t.id,
		ContextID: t.contextID,
		Status:    t.status,
	}, false)
	return nil
}

// emitArtifact adds one chunk of artifact artifactID to the task and logs it. It fails with
// errTaskOver once the task is final, so a canceled turn stops producing.
func (a *Agent) emitArtifact(t *task, artifactID, text string, lastChunk bool, metadata map[string]any) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t.status.State.IsTerminal() {
		return errTaskOver
	}
	if t.status.State != a2av0.TaskStateWorking {
		t.status = a2av0.TaskStatus{State: a2av0.TaskStateWorking, Timestamp: a.timestamp()}
	}
	chunk := a2av0.Artifact{ArtifactID: artifactID, Parts: a2av0.Parts{a2av0.TextPart(text)}, Metadata: metadata}
	t.mergeArtifact(chunk)
	t.appendEvent(a2av0.TaskArtifactUpdateEvent{
		Kind:      a2av0.KindArtifactUpdate,
		TaskID:    t.id,
		ContextID: t.contextID,
		Artifact:  chunk,
		Append:    true,
		LastChunk: lastChunk,
	}, false)
	return nil
}

// mergeArtifact folds an appended chunk into the task's artifact of the same id: one text part
// with the concatenated text, so a client reading the final Task of message/send or tasks/get
// gets whole sentences. Metadata maps are replaced, never mutated, since snapshots share them.
func (t *task) mergeArtifact(chunk a2av0.Artifact) {
	for i := range t.artifacts {
		art := &t.artifacts[i]
		if art.ArtifactID != chunk.ArtifactID {
			continue
		}
		art.Parts = a2av0.Parts{a2av0.TextPart(art.Parts[0].Text + chunk.Parts[0].Text)}
		if len(chunk.Metadata) > 0 {
			md := maps.Clone(art.Metadata)
			if md == nil {
				md = make(map[string]any, len(chunk.Metadata))
			}
			maps.Copy(md, chunk.Metadata)
			art.Metadata = md
		}
		return
	}
	t.artifacts = append(t.artifacts, chunk)
}

// finishLocked moves the task to state with an optional agent message (text, metadata or both),
// logs the final status-update and ends the running turn. It does nothing when the task is
// already terminal (a cancel won the race), and reports whether it changed the task.
func (a *Agent) finishLocked(t *task, state a2av0.TaskState, text string, metadata map[string]any) bool {
	if t.status.State.IsTerminal() {
		return false
	}
	t.status = a2av0.TaskStatus{State: state, Timestamp: a.timestamp()}
	if text != "" || len(metadata) > 0 {
		t.status.Message = a.agentMessage(t, text, metadata)
		t.history = append(t.history, *t.status.Message)
	}
	if t.stop != nil {
		t.stop()
		t.stop = nil
	}
	t.appendEvent(a2av0.TaskStatusUpdateEvent{
		Kind:      a2av0.KindStatusUpdate,
		TaskID:    t.id,
		ContextID: t.contextID,
		Status:    t.status,
		Final:     true,
	}, true)
	return true
}
