package runs

import (
	"fmt"
	"time"

	"github.com/hearth-dev/hearth"
)

// A stage's rules (hearth.Stage, a pipeline's stage blocks) may keep it
// closed: "not before 9:00 on the 1st". The run then waits to enter it,
// and the schedule says so where an operator looks, once per wait: the
// waiting task's reason (the NOTE of `hearth runs show`) and a run.task
// event without a transition. A run that waits for a stage is not idle:
// retention counts its idle time from when the stage may open
// (IdleSince), so that a stage set for next week does not get its run
// paused by pause_after tonight.

// stageClosed reports whether task i, ready to start, waits because its
// stage, which the run would enter anew, is closed at the call's time;
// at is when to ask again. A stage that will never open escalates the
// run instead (at is zero).
func (s *Schedule) stageClosed(i int, stage string) (at time.Time, wait bool) {
	st := s.pipe.Stage(stage)
	open, at := st.Opens(s.now)
	if open {
		return time.Time{}, false
	}
	rt := s.tasks[i]
	if at.IsZero() {
		s.escalate(i, fmt.Sprintf("task %s cannot start: stage %s will not open (%s)", rt.Name, stage, st))
		return time.Time{}, true
	}
	s.stageWait = earliest(s.stageWait, at)
	why := fmt.Sprintf("waits for stage %s, which opens at %s (%s)", stage, at.Format(time.RFC3339Nano), st)
	if rt.Reason != why {
		// Once per wait: the reason is kept with the task, so a pass
		// that finds the same wait says nothing new.
		rt.Reason = why
		s.dirty[i] = true
		s.emit(hearth.Event{Kind: hearth.EventRunTask, Task: rt.Name, Agent: s.pipe.Tasks[i].Agent, Message: rt.Name + ": " + why})
	}
	return at, true
}

// IdleSince is when the run became idle, for retention: its last
// activity, or, while it waits for a stage to open, when the stage may
// open (in the future until it does).
func (s *Schedule) IdleSince() time.Time {
	if s.stageWait.After(s.head.LastActivity) {
		return s.stageWait
	}
	return s.head.LastActivity
}

// earliest is the earlier of a and b, a zero time being none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}
