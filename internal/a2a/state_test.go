package a2a

import "testing"

func TestCanonicalState(t *testing.T) {
	t.Parallel()
	for in, want := range map[TaskState]TaskState{
		"TASK_STATE_INPUT_REQUIRED": TaskStateInputRequired,
		"TASK_STATE_CANCELLED":      TaskStateCanceled, // the 0.3 proto's spelling
		"TASK_STATE_UNSPECIFIED":    TaskStateUnspecified,
		"TASK_STATE_FOO":            "TASK_STATE_FOO", // reported as a state A2A does not define
		"working":                   TaskStateWorking, // 0.x's spelling on a 1.0 wire
		"unknown":                   TaskStateUnspecified,
		"paused":                    "paused",
		"":                          "",
	} {
		if got := canonicalState(in); got != want {
			t.Errorf("canonicalState(%q) = %q, want %q", in, got, want)
		}
	}
}
