package invoke

import (
	connector "github.com/a2a-connector/a2a-connector"
	"github.com/a2a-connector/a2a-connector/internal/a2a"
)

// handle applies one event and reports whether it ends the turn: the first interrupted or
// terminal state (or one we do not understand) or a Message, whatever `final` says.
func (t *turn) handle(ev a2a.Event) bool {
	t.answered = true
	switch e := ev.(type) {
	case *a2a.Task:
		t.note(e.ID, e.ContextID)
		t.metadata(statusMetadata(e.Status), e.Metadata)
		t.text(t.asm.snapshot(e))
		return t.ends(t.status(e.Status), statusMetadata(e.Status), e.Metadata)
	case *a2a.TaskStatusUpdateEvent:
		t.note(e.TaskID, e.ContextID)
		t.metadata(statusMetadata(e.Status), e.Metadata)
		return t.ends(t.status(e.Status), statusMetadata(e.Status), e.Metadata)
	case *a2a.TaskArtifactUpdateEvent:
		t.note(e.TaskID, e.ContextID)
		t.metadata(e.Artifact.Metadata, e.Metadata)
		t.text(t.asm.artifact(e))
		return false
	case *a2a.Message:
		if e.ContextID != "" {
			t.contextID = e.ContextID
		}
		t.metadata(e.Metadata, nil)
		t.text(t.asm.message(e))
		t.messageResult = true
		return t.ends(true, e.Metadata, nil)
	}
	return false
}

// metadata hands an event's metadata to the request's OnMetadata, if any (one nil check per
// event for turns without it).
func (t *turn) metadata(inner, outer map[string]any) {
	if t.req.OnMetadata == nil {
		return
	}
	if inner != nil {
		t.req.OnMetadata(inner)
	}
	if outer != nil {
		t.req.OnMetadata(outer)
	}
}

// ends notes the metadata of the event that ends the turn (ended): its message's, or the event's
// own when the message has none.
func (t *turn) ends(ended bool, inner, outer map[string]any) bool {
	if ended {
		t.endMetadata = inner
		if inner == nil {
			t.endMetadata = outer
		}
	}
	return ended
}

func statusMetadata(st a2a.TaskStatus) map[string]any {
	if st.Message == nil {
		return nil
	}
	return st.Message.Metadata
}

func (t *turn) note(taskID, contextID string) {
	if taskID != "" {
		if taskID != t.taskID && t.req.OnTask != nil {
			t.req.OnTask(taskID)
		}
		t.taskID = taskID
		t.taskSeen = true
	}
	if contextID != "" {
		t.contextID = contextID
	}
}

func (t *turn) text(delta string) {
	if delta == "" {
		return
	}
	if !t.sawText {
		// The one telemetry cost inside the chunk loop: an event on the first text only.
		t.sawText = true
		t.span.AddEvent(eventFirstText)
	}
	t.emit(connector.TurnEvent{Kind: connector.TextEvent, Text: delta})
}

// status records a task status, emits it unless it repeats the last one, and reports whether it
// ends the turn.
func (t *turn) status(st a2a.TaskStatus) bool {
	t.state = st.State
	text := statusText(st)
	if state := apiState(st.State); !t.emittedAnyStatus || state != t.emittedState || text != t.emittedStatusText {
		t.emittedAnyStatus, t.emittedState, t.emittedStatusText = true, state, text
		t.emit(connector.TurnEvent{Kind: connector.StatusEvent, State: state, Text: text})
	}
	switch st.State {
	case a2a.TaskStateSubmitted, a2a.TaskStateWorking:
		return false
	}
	end := st
	t.end = &end
	return true
}

func statusText(st a2a.TaskStatus) string {
	if st.Message == nil {
		return ""
	}
	text, _ := partsText(st.Message.Parts)
	return text
}
