package agent

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/a2a-connector/a2a-connector/internal/a2a"
	"github.com/a2a-connector/a2a-connector/internal/a2a/a2av0"
	"github.com/a2a-connector/a2a-connector/internal/a2aclient"
)

// rpcErr builds a JSON-RPC error; the one place the agent's error codes are chosen is the
// handlers below, each naming the a2a.Code* it answers.
func rpcErr(code int, format string, args ...any) *a2a.RPCError {
	return &a2a.RPCError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// serveRPC answers JSON-RPC on both RPCPath and StreamPath. The path does not pick the method:
// message/stream on RPCPath streams and message/send on StreamPath answers JSON, so clients that
// guess either way still work.
func (a *Agent) serveRPC(w http.ResponseWriter, r *http.Request) {
	if !a.authorized(r) {
		a.record(Request{Path: r.URL.Path, Header: redactedHeader(r.Header), Unauthorized: true})
		w.Header().Set("WWW-Authenticate", `APIKey header="X-API-KEY"`)
		writeJSON(w, http.StatusUnauthorized, nil, nil, rpcErr(a2a.CodeInvalidRequest, "unauthorized: missing or wrong X-API-KEY header"))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		a.record(Request{Path: r.URL.Path, Header: redactedHeader(r.Header)})
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSON(w, http.StatusRequestEntityTooLarge, nil, nil, rpcErr(a2a.CodeInvalidRequest, "request body larger than %d bytes", MaxBodyBytes))
			return
		}
		writeJSON(w, http.StatusBadRequest, nil, nil, rpcErr(a2a.CodeParseError, "read request body: %v", err))
		return
	}
	req, perr := parseRequest(body)
	rec := Request{Path: r.URL.Path, Method: req.Method, Header: redactedHeader(r.Header)}
	var params a2av0.MessageSendParams
	var text string
	if perr == nil && (req.Method == a2av0.MethodMessageSend || req.Method == a2av0.MethodMessageStream) {
		params, text, perr = decodeMessageParams(req.Params)
		m := params.Message
		rec.MessageID, rec.TaskID, rec.ContextID, rec.Text, rec.Metadata = m.MessageID, m.TaskID, m.ContextID, text, m.Metadata
	}
	a.record(rec)
	if perr != nil {
		a.replyError(w, req, perr)
		return
	}
	switch req.Method {
	case a2av0.MethodMessageSend:
		a.message(w, r, req, params, text, false)
	case a2av0.MethodMessageStream:
		a.message(w, r, req, params, text, true)
	case a2av0.MethodTasksGet:
		a.getTask(w, req)
	case a2av0.MethodTasksCancel:
		a.cancelTask(w, req)
	case a2av0.MethodTasksResubscribe:
		a.resubscribe(w, r, req)
	default:
		a.replyError(w, req, rpcErr(a2a.CodeMethodNotFound, "method %q not found", req.Method))
	}
}

// authorized checks X-API-KEY in constant time when a key is configured.
func (a *Agent) authorized(r *http.Request) bool {
	if a.opts.APIKey == "" {
		return true
	}
	got := r.Header.Get("X-API-KEY")
	return subtle.ConstantTimeCompare([]byte(got), []byte(a.opts.APIKey)) == 1
}

// parseRequest decodes and checks a JSON-RPC request envelope. On error the returned request
// carries whatever id and method could be read (an unreadable id is left out, answered as null).
func parseRequest(body []byte) (a2aclient.Request, *a2a.RPCError) {
	body = bytes.TrimSpace(body)
	if !json.Valid(body) {
		return a2aclient.Request{}, rpcErr(a2a.CodeParseError, "parse error: body is not valid JSON")
	}
	if body[0] == '[' {
		return a2aclient.Request{}, rpcErr(a2a.CodeInvalidRequest, "batch requests are not supported")
	}
	var req a2aclient.Request
	if err := json.Unmarshal(body, &req); err != nil {
		return a2aclient.Request{}, rpcErr(a2a.CodeInvalidRequest, "invalid request: %v", err)
	}
	if len(req.ID) > 0 {
		switch req.ID[0] {
		case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'n':
		default:
			req.ID = nil
			return req, rpcErr(a2a.CodeInvalidRequest, "invalid request: id must be a string, a number or null")
		}
	}
	if req.JSONRPC != a2aclient.JSONRPCVersion {
		return req, rpcErr(a2a.CodeInvalidRequest, `invalid request: jsonrpc must be "2.0"`)
	}
	if req.Method == "" {
		return req, rpcErr(a2a.CodeInvalidRequest, "invalid request: method is required")
	}
	return req, nil
}

// decodeParams decodes required params into v.
func decodeParams(raw json.RawMessage, v any) *a2a.RPCError {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return rpcErr(a2a.CodeInvalidParams, "invalid params: params are required")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return rpcErr(a2a.CodeInvalidParams, "invalid params: %v", err)
	}
	return nil
}

// decodeMessageParams decodes and checks the params of message/send and message/stream and
// returns the message's text (its text parts joined by newlines).
func decodeMessageParams(raw json.RawMessage) (a2av0.MessageSendParams, string, *a2a.RPCError) {
	var p a2av0.MessageSendParams
	if err := decodeParams(raw, &p); err != nil {
		return p, "", err
	}
	m := p.Message
	switch {
	case m.Kind != "" && m.Kind != a2av0.KindMessage:
		return p, "", rpcErr(a2a.CodeInvalidParams, `invalid params: message.kind must be "message"`)
	case m.MessageID == "":
		return p, "", rpcErr(a2a.CodeInvalidParams, "invalid params: message.messageId is required")
	case m.Role != a2av0.RoleUser:
		return p, "", rpcErr(a2a.CodeInvalidParams, `invalid params: message.role must be "user"`)
	case len(m.Parts) == 0:
		return p, "", rpcErr(a2a.CodeInvalidParams, "invalid params: message.parts needs at least one part")
	}
	var texts []string
	for _, part := range m.Parts {
		if part.Kind == a2av0.PartKindText {
			texts = append(texts, part.Text)
		}
	}
	if len(texts) == 0 {
		return p, "", rpcErr(a2a.CodeContentTypeNotSupported, "only text parts (text/plain) are supported")
	}
	return p, strings.Join(texts, "\n"), nil
}

// message runs one turn of message/send or message/stream.
func (a *Agent) message(w http.ResponseWriter, r *http.Request, req a2aclient.Request, p a2av0.MessageSendParams, text string, stream bool) {
	ctx, stop := context.WithCancel(r.Context())
	defer stop()
	// uri is the voice extension's URI when this turn activated it, else "": then no voice key
	// is read or written, as by an agent without the extension.
	var uri string
	var vin voiceInput
	if a.voiceActive(r.Header) {
		uri = a.opts.VoiceExtension
		var bad []string
		if vin, bad = a.readVoice(p.Message.Metadata); len(bad) > 0 {
			a.log.Info("a2a voice metadata ignored", "members", bad)
		}
	}
	t, in, cursor, perr := a.startTurn(p.Message, text, vin, stop)
	if perr != nil {
		a.replyError(w, req, perr)
		return
	}
	rep := decide(in)
	out := func() error { return nil }
	if stream {
		sw := startSSE(w, req.ID)
		out = func() error {
			_, _, err := a.writeEvents(sw, t, &cursor)
			return err
		}
	}
	state := a.perform(ctx, t, in.lang, rep, uri, out)
	a.log.Info("a2a turn", "method", req.Method, "task", t.id, "context", t.contextID, "skill", rep.skill, "state", state,
		"voice", uri != "", "input", vin.kind)
	if stream {
		return
	}
	historyLength := 0
	if p.Configuration != nil && p.Configuration.HistoryLength != nil {
		historyLength = *p.Configuration.HistoryLength
	}
	a.mu.Lock()
	snap := t.snapshot(historyLength)
	a.mu.Unlock()
	writeJSON(w, http.StatusOK, req.ID, snap, nil)
}

// startTurn resolves the message's context and task and logs the turn's first event (the task).
// It returns the turn's input for decide and the cursor of that first event in the task's log.
func (a *Agent) startTurn(m a2av0.Message, text string, vin voiceInput, stop func()) (*task, turnInput, int, *a2a.RPCError) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, perr := a.heldTaskLocked(m)
	if perr != nil {
		return nil, turnInput{}, 0, perr
	}
	contextID := m.ContextID
	switch {
	case t != nil:
		contextID = t.contextID
	case contextID == "":
		contextID = a.newID()
	}
	conv, ok := a.contexts.get(contextID)
	if !ok {
		conv = &conversation{}
		a.contexts.add(contextID, conv)
	}
	if vin.kind != inputNoInput {
		conv.sentences++
	}

	in := turnInput{
		text: text, sentences: conv.sentences,
		voiceSkills: a.opts.VoiceExtension != "", voice: vin, topics: slices.Clone(conv.topics),
		said: a.saidBeforeLocked(vin.interruption, conv),
	}
	fallback := zh
	if t == nil {
		t = &task{id: a.newID(), contextID: contextID, changed: make(chan struct{})}
		t.status = a2av0.TaskStatus{State: a2av0.TaskStateSubmitted, Timestamp: a.timestamp()}
		a.tasks.add(t.id, t)
	} else {
		t.status = a2av0.TaskStatus{State: a2av0.TaskStateWorking, Timestamp: a.timestamp()}
		fallback = t.lang
		in.skill, in.numbers, in.question, in.expect = t.skill, t.numbers, t.question, t.expect
	}
	in.lang = detectLang(text, vin.fallbackLang(fallback))
	m.TaskID, m.ContextID = t.id, contextID
	t.history = append(t.history, m)
	t.stop = stop
	t.messageID = m.MessageID
	cursor := len(t.events)
	t.appendEvent(t.snapshot(0), false)
	return t, in, cursor, nil
}

// heldTaskLocked returns the input-required task the message continues, nil for a new task.
func (a *Agent) heldTaskLocked(m a2av0.Message) (*task, *a2a.RPCError) {
	if m.TaskID == "" {
		return nil, nil
	}
	t, ok := a.tasks.get(m.TaskID)
	if !ok {
		return nil, rpcErr(a2a.CodeTaskNotFound, "task %q not found", m.TaskID)
	}
	if m.ContextID != "" && m.ContextID != t.contextID {
		return nil, rpcErr(a2a.CodeInvalidParams, "invalid params: task %q belongs to context %q, not %q", t.id, t.contextID, m.ContextID)
	}
	if t.status.State != a2av0.TaskStateInputRequired {
		return nil, rpcErr(a2a.CodeInvalidParams, "invalid params: task %q is %s; only an input-required task can be continued, send the message without taskId to start a new task", t.id, t.status.State)
	}
	return t, nil
}

// saidBeforeLocked finds the reply an interruption cut: by the messageId it names, which is
// exact, else the context's last reply (the platform names the turn; an older connector or a
// forgotten id falls back to the conversation).
func (a *Agent) saidBeforeLocked(it *interruption, conv *conversation) *spokenReply {
	if it == nil {
		return nil
	}
	if it.messageID != "" {
		if s, ok := a.said.peek(it.messageID); ok {
			return s
		}
	}
	return conv.lastSaid
}

// perform produces the reply: its working notice, if any, then its artifact chunks (pausing
// between them when slow), and ends the task in the reply's state, calling out after each event
// so that a stream writes it at once. A client gone (ctx done, or out failing) ends the task
// canceled; a tasks/cancel meanwhile has already ended it. uri is the voice extension's URI when
// the turn activated it. It returns the task's final state.
func (a *Agent) perform(ctx context.Context, t *task, l lang, rep reply, uri string, out func() error) a2av0.TaskState {
	a.mu.Lock()
	t.skill, t.numbers, t.lang = rep.skill, rep.numbers, l
	t.question, t.expect = rep.question, rep.expect
	if t.question == "" {
		t.question = rep.message
	}
	a.mu.Unlock()

	gone := out() != nil // the task event
	if !gone && rep.notice != "" && a.emitWorking(t, rep.notice, speechMetadata(uri, rep.noBargeIn)) == nil {
		gone = out() != nil
	}
	var spoken strings.Builder
	artifactID := a.newID()
	last := len(rep.chunks) - 1
	for i, chunk := range rep.chunks {
		if gone {
			break
		}
		if i > 0 && rep.slow && !sleep(ctx, a.opts.ChunkDelay) {
			break
		}
		if ctx.Err() != nil {
			break
		}
		var md map[string]any
		if i == last {
			md = rep.metadata
		}
		if a.emitArtifact(t, artifactID, chunk, i == last, md) != nil {
			break // canceled by tasks/cancel
		}
		spoken.WriteString(chunk)
		gone = out() != nil
	}
	state, text, md := rep.state, rep.message, statusMetadata(uri, rep.state, rep)
	if gone || ctx.Err() != nil {
		state, text, md = a2av0.TaskStateCanceled, pick(l, "连接已断开，任务已取消。", "The client went away; the task is canceled."), nil
	}
	// Ending and remembering in one critical section: the final event lets the client continue
	// the task at once, and its next turn must find this one's reply and its task untouched.
	a.mu.Lock()
	if !a.finishLocked(t, state, text, md) {
		state = t.status.State // a tasks/cancel won; a terminal state never changes again
	}
	said := spoken.String()
	if said == "" && state == rep.state {
		said = rep.message // a reply without chunks is its status message
	}
	a.rememberLocked(t, rep.skill, said, uri != "")
	a.mu.Unlock()
	_ = out()
	return state
}

// rememberLocked keeps what a turn leaves for later turns of its context: its skill as a topic
// of the hand-off summary and, for an activated turn, what it said, which a later interruption
// may name. A turn canceled midway (a platform may cancel on barge-in) said the chunks it sent.
func (a *Agent) rememberLocked(t *task, skill, said string, activated bool) {
	conv, ok := a.contexts.peek(t.contextID)
	if !ok || a.opts.VoiceExtension == "" {
		return
	}
	conv.topics = addTopic(conv.topics, skill)
	if !activated {
		return
	}
	s := newSpokenReply(said)
	a.said.add(t.messageID, s)
	conv.lastSaid = s
}

// sleep waits d or until ctx is done, reporting whether the whole wait passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// getTask answers tasks/get. Without historyLength the whole history is returned.
func (a *Agent) getTask(w http.ResponseWriter, req a2aclient.Request) {
	var p a2av0.TaskQueryParams
	if perr := decodeTaskID(req.Params, &p, &p.ID); perr != nil {
		a.replyError(w, req, perr)
		return
	}
	historyLength := -1
	if p.HistoryLength != nil {
		historyLength = max(*p.HistoryLength, 0)
	}
	a.mu.Lock()
	t, ok := a.tasks.get(p.ID)
	var snap a2av0.Task
	if ok {
		snap = t.snapshot(historyLength)
	}
	a.mu.Unlock()
	if !ok {
		a.replyError(w, req, rpcErr(a2a.CodeTaskNotFound, "task %q not found", p.ID))
		return
	}
	writeJSON(w, http.StatusOK, req.ID, snap, nil)
}

// cancelTask answers tasks/cancel: a task not yet final ends canceled and its running turn, if
// any, stops; its stream ends with the canceled status-update.
func (a *Agent) cancelTask(w http.ResponseWriter, req a2aclient.Request) {
	var p a2av0.TaskIDParams
	if perr := decodeTaskID(req.Params, &p, &p.ID); perr != nil {
		a.replyError(w, req, perr)
		return
	}
	snap, perr := func() (a2av0.Task, *a2a.RPCError) {
		a.mu.Lock()
		defer a.mu.Unlock()
		t, ok := a.tasks.get(p.ID)
		if !ok {
			return a2av0.Task{}, rpcErr(a2a.CodeTaskNotFound, "task %q not found", p.ID)
		}
		if t.status.State.IsTerminal() {
			return a2av0.Task{}, rpcErr(a2a.CodeTaskNotCancelable, "task %q is %s and cannot be canceled", p.ID, t.status.State)
		}
		t.canceledByRequest = true
		a.cancels++
		a.finishLocked(t, a2av0.TaskStateCanceled, pick(t.lang, "任务已取消。", "The task is canceled."), nil)
		return t.snapshot(0), nil
	}()
	if perr != nil {
		a.replyError(w, req, perr)
		return
	}
	a.log.Info("a2a cancel", "task", p.ID)
	writeJSON(w, http.StatusOK, req.ID, snap, nil)
}

// resubscribe answers tasks/resubscribe with a stream: the task as it is now, then, while a turn
// runs, its further events up to the final one. A task with no running turn gets its current
// status as the final status-update at once.
func (a *Agent) resubscribe(w http.ResponseWriter, r *http.Request, req a2aclient.Request) {
	var p a2av0.TaskIDParams
	if perr := decodeTaskID(req.Params, &p, &p.ID); perr != nil {
		a.replyError(w, req, perr)
		return
	}
	a.mu.Lock()
	t, ok := a.tasks.get(p.ID)
	var snap a2av0.Task
	var running bool
	var cursor int
	if ok {
		snap, running, cursor = t.snapshot(0), t.stop != nil, len(t.events)
	}
	a.mu.Unlock()
	if !ok {
		a.replyError(w, req, rpcErr(a2a.CodeTaskNotFound, "task %q not found", p.ID))
		return
	}
	sw := startSSE(w, req.ID)
	if sw.write(mustMarshal(snap)) != nil {
		return
	}
	if !running {
		_ = sw.write(mustMarshal(a2av0.TaskStatusUpdateEvent{
			Kind: a2av0.KindStatusUpdate, TaskID: snap.ID, ContextID: snap.ContextID, Status: snap.Status, Final: true,
		}))
		return
	}
	for {
		final, changed, err := a.writeEvents(sw, t, &cursor)
		if final || err != nil {
			return
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		}
	}
}

// decodeTaskID decodes params with a required task id.
func decodeTaskID(raw json.RawMessage, v any, id *string) *a2a.RPCError {
	if perr := decodeParams(raw, v); perr != nil {
		return perr
	}
	if *id == "" {
		return rpcErr(a2a.CodeInvalidParams, "invalid params: id is required")
	}
	return nil
}

// writeEvents writes the task's events from *cursor on, stopping after a final one. It returns
// whether it wrote a final event and the channel that closes when more events arrive.
func (a *Agent) writeEvents(sw *sseWriter, t *task, cursor *int) (bool, <-chan struct{}, error) {
	a.mu.Lock()
	// Logged events are never modified, so the slice can be read after unlocking.
	evs := t.events[*cursor:]
	changed := t.changed
	a.mu.Unlock()
	for _, ev := range evs {
		*cursor++
		if err := sw.write(ev.result); err != nil {
			return false, changed, err
		}
		if ev.final {
			return true, changed, nil
		}
	}
	return false, changed, nil
}

// replyError answers a JSON-RPC error with HTTP 200, as JSON-RPC over HTTP does.
func (a *Agent) replyError(w http.ResponseWriter, req a2aclient.Request, e *a2a.RPCError) {
	a.log.Info("a2a error", "method", req.Method, "code", e.Code, "error", e.Message)
	writeJSON(w, http.StatusOK, req.ID, nil, e)
}

// writeJSON writes one JSON-RPC response: result when e is nil, else the error.
func writeJSON(w http.ResponseWriter, status int, id json.RawMessage, result any, e *a2a.RPCError) {
	resp := a2aclient.Response{JSONRPC: a2aclient.JSONRPCVersion, ID: id, Error: e}
	if e == nil {
		resp.Result = mustMarshal(result)
	}
	body, err := json.Marshal(resp)
	if err != nil {
		http.Error(w, "marshal response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

func mustMarshal(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		// Unreachable: results are a2a types holding JSON-safe values.
		panic(fmt.Sprintf("agent: marshal %T: %v", v, err))
	}
	return raw
}

// sseWriter writes JSON-RPC responses as Server-Sent Events, each flushed at once.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	id json.RawMessage
}

func startSSE(w http.ResponseWriter, id json.RawMessage) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	sw := &sseWriter{w: w, rc: http.NewResponseController(w), id: id}
	_ = sw.rc.Flush()
	return sw
}

// write sends one event whose data is the response carrying result.
func (sw *sseWriter) write(result json.RawMessage) error {
	body, err := json.Marshal(a2aclient.Response{JSONRPC: a2aclient.JSONRPCVersion, ID: sw.id, Result: result})
	if err != nil {
		return fmt.Errorf("marshal event: %w", err)
	}
	var buf bytes.Buffer
	buf.Grow(len(body) + 8)
	buf.WriteString("data: ")
	buf.Write(body)
	buf.WriteString("\n\n")
	if _, err := sw.w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write event: %w", err)
	}
	if err := sw.rc.Flush(); err != nil {
		return fmt.Errorf("flush event: %w", err)
	}
	return nil
}
