package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	pb "github.com/a2a-connector/a2a-connector/api/proto/connector/v1"
)

// syncBuffer is a log sink the connector writes to while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// At the default level an operator sees one line per turn — who, which agent, how it ended, how
// long it took — and never what the user or the agent said.
func TestEveryTurnLogsOneLineWithoutText(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	s := startStack(t, map[string]string{"A2AC_LOG_LEVEL": "info"}, func(c *stackConfig) { c.stderr = logs })
	const words = "重复我说的话：秘密的句子"
	wantOutcome(t, s.turn(t, "s-log", s.agent, words), pb.Outcome_OUTCOME_COMPLETED)
	wantOutcome(t, s.turn(t, "s-log-2", "", "无人"), pb.Outcome_OUTCOME_NO_AGENT)

	var turns []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == "turn" {
			turns = append(turns, line)
		}
	}
	if len(turns) != 2 {
		t.Fatalf("%d turn lines, want 2:\n%s", len(turns), logs.String())
	}
	first := turns[0]
	if first["level"] != "INFO" || first["tenant_id"] != s.tenant || first["agent_id"] != s.agent ||
		first["outcome"] != "COMPLETED" || first["duration_ms"] == nil || first["first_text_ms"] == nil {
		t.Errorf("turn line = %v", first)
	}
	if turns[1]["outcome"] != "NO_AGENT" {
		t.Errorf("second turn line = %v", turns[1])
	}
	if strings.Contains(logs.String(), "秘密") {
		t.Errorf("the user's words reached the log:\n%s", logs.String())
	}
}
