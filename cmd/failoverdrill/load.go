package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc/status"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
)

// turnTimeout is each turn's gRPC deadline: the connector's own turn timeout (10 s) plus room.
const turnTimeout = 15 * time.Second

// failurePause is how long a worker waits after a failed turn before its next: the engine
// would back off too, and a worker spinning on instant UNAVAILABLE answers would only load the
// machine. It bounds the resolution of the measured outage.
const failurePause = 20 * time.Millisecond

// turn is one HandleTurn as the engine saw it.
type turn struct {
	start, end time.Time
	// failure is "" for a turn that ended as expected, else what went wrong: a gRPC code, or
	// an unexpected outcome and its error code.
	failure string
}

// hold is a hold confirmed to the engine: INPUT_REQUIRED with a hold in the Final.
type hold struct {
	session, taskID, contextID string
	at                         time.Time
}

// result is what one HandleTurn stream said.
type result struct {
	held                    bool
	outcome                 pb.Outcome
	taskID, contextID, text string
	errCode                 string
	hasHold                 bool
}

// load keeps turns going on the connector until stopped, and records every one.
type load struct {
	client          pb.ConnectorClient
	tenant, agentID string

	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	turns []turn
	holds []hold
	// unsaved are the tasks of turns that ended FAILED "internal" (the hold could not be
	// saved): the connector must have canceled them at the agent.
	unsaved []string
}

func newLoad(client pb.ConnectorClient, tenant, agentID string) *load {
	return &load{client: client, tenant: tenant, agentID: agentID}
}

// start runs workers sessions of completing turns and holdWorkers sessions opening holds.
func (l *load) start(ctx context.Context, workers, holdWorkers int) {
	ctx, l.cancel = context.WithCancel(ctx)
	for w := range workers {
		l.wg.Go(func() { l.completing(ctx, w) })
	}
	for w := range holdWorkers {
		l.wg.Go(func() { l.holding(ctx, w) })
	}
}

// stop ends the workers and waits for them.
func (l *load) stop() {
	if l.cancel != nil {
		l.cancel()
	}
	l.wg.Wait()
}

// completing sends turns that complete (the demo agent repeats the text), on one session.
func (l *load) completing(ctx context.Context, w int) {
	session := fmt.Sprintf("steady-%d-%s", w, uuid.NewString())
	for i := 0; ctx.Err() == nil; i++ {
		start := time.Now()
		r, err := l.send(ctx, session, l.agentID, fmt.Sprintf("重复我说的话：第%d句", i))
		if ctx.Err() != nil {
			return
		}
		failure := describe(r, err, pb.Outcome_OUTCOME_COMPLETED)
		l.record(turn{start: start, end: time.Now(), failure: failure}, nil)
		if failure != "" {
			sleep(ctx, failurePause)
		}
	}
}

// holding opens holds, each on a new session, and records those confirmed to the engine.
func (l *load) holding(ctx context.Context, w int) {
	for i := 0; ctx.Err() == nil; i++ {
		session := fmt.Sprintf("hold-%d-%d-%s", w, i, uuid.NewString())
		start := time.Now()
		r, err := l.send(ctx, session, l.agentID, "帮我算加法")
		if ctx.Err() != nil {
			return
		}
		failure := describe(r, err, pb.Outcome_OUTCOME_INPUT_REQUIRED)
		var h *hold
		if failure == "" && r.hasHold {
			h = &hold{session: session, taskID: r.taskID, contextID: r.contextID, at: time.Now()}
		}
		if err == nil && r.outcome == pb.Outcome_OUTCOME_FAILED && r.errCode == "internal" && r.taskID != "" {
			l.mu.Lock()
			l.unsaved = append(l.unsaved, r.taskID)
			l.mu.Unlock()
		}
		l.record(turn{start: start, end: time.Now(), failure: failure}, h)
		if failure != "" {
			sleep(ctx, failurePause)
		}
	}
}

func (l *load) record(t turn, h *hold) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.turns = append(l.turns, t)
	if h != nil {
		l.holds = append(l.holds, *h)
	}
}

// snapshot returns the turns, holds and unsaved holds' tasks recorded so far.
func (l *load) snapshot() ([]turn, []hold, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]turn(nil), l.turns...), append([]hold(nil), l.holds...), append([]string(nil), l.unsaved...)
}

// send runs one turn and reads its stream to the end.
func (l *load) send(ctx context.Context, session, agentID, text string) (result, error) {
	ctx, cancel := context.WithTimeout(ctx, turnTimeout)
	defer cancel()
	stream, err := l.client.HandleTurn(ctx, &pb.HandleTurnRequest{TenantId: l.tenant, SessionId: session,
		TurnId: uuid.NewString(), AgentId: agentID, Text: text})
	if err != nil {
		return result{}, err
	}
	var r result
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return r, nil
		}
		if err != nil {
			return r, err
		}
		switch e := ev.GetEvent().(type) {
		case *pb.TurnEvent_Started:
			r.held = e.Started.GetHeld()
		case *pb.TurnEvent_Final:
			f := e.Final
			r.outcome, r.taskID, r.contextID, r.text = f.GetOutcome(), f.GetTaskId(), f.GetContextId(), f.GetText()
			r.errCode, r.hasHold = f.GetError().GetCode(), f.GetHold() != nil
		}
	}
}

// describe says what went wrong with a turn that should have ended with want; "" when nothing.
func describe(r result, err error, want pb.Outcome) string {
	switch {
	case err != nil:
		return "grpc " + status.Code(err).String()
	case r.outcome != want:
		return fmt.Sprintf("%s %s", r.outcome, r.errCode)
	}
	return ""
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
