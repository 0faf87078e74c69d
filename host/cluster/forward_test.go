package cluster

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth"
)

// report is one thing the engine reports to a Forward, and the step it
// expects back.
type report struct {
	do   func(f *Forward) Step
	want StepKind
	to   Target // the step's target, when it has one
}

func placed(host, session string) report {
	t := Target{host, session}
	return report{func(f *Forward) Step { return f.Placed(t) }, StepSend, t}
}

func sent(err error, want StepKind) report {
	return report{func(f *Forward) Step { return f.Sent(err) }, want, Target{}}
}

func asked(st TaskStatus, err error, want StepKind) report {
	return report{func(f *Forward) Step { return f.Asked(st, err) }, want, Target{}}
}

func waited(member bool, want StepKind) report {
	return report{func(f *Forward) Step { return f.Waited(member) }, want, Target{}}
}

// notCompleted and completed report the reading of the task's
// completion; unreadable, that etcd did not answer.
func notCompleted() report {
	return report{func(f *Forward) Step { return f.Checked(Completion{}, false, nil) }, StepPlace, Target{}}
}

func completed(host string, onHost bool, want StepKind) report {
	c := Completion{Key: "task-1", Host: host, Epoch: 7, OnHost: onHost}
	return report{func(f *Forward) Step { return f.Checked(c, true, nil) }, want, Target{Host: host}}
}

func unreadable(err error, want StepKind) report {
	return report{func(f *Forward) Step { return f.Checked(Completion{}, false, err) }, want, Target{}}
}

var (
	errRefused = fmt.Errorf("host b: session busy: %w", ErrRefused)
	errDial    = fmt.Errorf("dial b:7420: connection refused: %w", ErrUnreachable)
	errLost    = errors.New("rpc error: connection reset by peer")
	errIntr    = fmt.Errorf("host b: task task-1 was running when b stopped: %w", ErrInterrupted)
)

func TestForward(t *testing.T) {
	for _, tc := range []struct {
		name         string
		max          int
		reports      []report
		wantHosts    []string
		wantSessions []string
		wantErr      error
	}{
		{
			name:    "runs where placed",
			reports: []report{placed("b", "s1"), sent(nil, StepDone)},
		},
		{
			name:         "refused: the session is left out, the host stays",
			reports:      []report{placed("b", "s1"), sent(errRefused, StepPlace), placed("b", "s2"), sent(nil, StepDone)},
			wantSessions: []string{"b/s1"},
		},
		{
			name:         "refused twice: the host is left out",
			reports:      []report{placed("b", "s1"), sent(errRefused, StepPlace), placed("b", "s2"), sent(errRefused, StepPlace), placed("c", ""), sent(nil, StepDone)},
			wantHosts:    []string{"b"},
			wantSessions: []string{"b/s1"},
		},
		{
			name:      "a refused spawn leaves the host out",
			reports:   []report{placed("b", ""), sent(errRefused, StepPlace)},
			wantHosts: []string{"b"},
		},
		{
			name:      "unreachable: placed elsewhere at once",
			reports:   []report{placed("b", "s1"), sent(errDial, StepPlace), placed("c", "s9"), sent(nil, StepDone)},
			wantHosts: []string{"b"},
		},
		{
			name:    "lost mid-forward, done there: its result, never a second run",
			reports: []report{placed("b", "s1"), sent(errLost, StepAsk), asked(TaskDone, nil, StepDone)},
		},
		{
			name:      "lost mid-forward, never arrived: placed again",
			reports:   []report{placed("b", "s1"), sent(errLost, StepAsk), asked(TaskUnknown, nil, StepPlace)},
			wantHosts: []string{"b"},
		},
		{
			name: "lost mid-forward, still running: wait and ask until done",
			reports: []report{placed("b", "s1"), sent(errLost, StepAsk), asked(TaskRunning, nil, StepWait), waited(true, StepAsk),
				asked(TaskRunning, nil, StepWait), waited(true, StepAsk), asked(TaskDone, nil, StepDone)},
		},
		{
			name: "lost, unanswered while a member: keep waiting, never place elsewhere",
			reports: []report{placed("b", "s1"), sent(errLost, StepAsk), asked(0, errDial, StepWait), waited(true, StepAsk),
				asked(0, errDial, StepWait), waited(true, StepAsk), asked(TaskDone, nil, StepDone)},
		},
		{
			name:      "lost, and the host left the cluster: placed elsewhere",
			reports:   []report{placed("b", "s1"), sent(errLost, StepAsk), asked(0, errDial, StepWait), waited(false, StepCheck), notCompleted(), placed("c", ""), sent(nil, StepDone)},
			wantHosts: []string{"b"},
		},
		{
			name:      "the host left after it completed the task: its completion's result, never a second run",
			reports:   []report{placed("b", "s1"), sent(errLost, StepAsk), asked(0, errDial, StepWait), waited(false, StepCheck), completed("b", false, StepDone)},
			wantHosts: []string{"b"},
		},
		{
			name: "completed, its result too large for etcd: wait for the host's answer however long, never place again",
			reports: []report{placed("b", "s1"), sent(errLost, StepAsk), asked(0, errDial, StepWait), waited(false, StepCheck), completed("b", true, StepAsk),
				asked(0, errDial, StepWait), waited(false, StepAsk), asked(TaskRunning, nil, StepWait), waited(false, StepAsk), asked(TaskDone, nil, StepDone)},
			wantHosts: []string{"b"},
		},
		{
			name:      "completed, and the host lost the result: fail, never run again",
			reports:   []report{placed("b", "s1"), sent(errIntr, StepCheck), completed("b", true, StepAsk), asked(TaskInterrupted, nil, StepFail)},
			wantHosts: []string{"b"},
		},
		{
			name:      "the host to ask left: no wait, the completion is read",
			reports:   []report{placed("b", "s1"), sent(errLost, StepAsk), {func(f *Forward) Step { return f.Left() }, StepCheck, Target{}}, notCompleted(), placed("c", ""), sent(nil, StepDone)},
			wantHosts: []string{"b"},
		},
		{
			name: "the completion cannot be read: wait and read again, never place while unsure",
			reports: []report{placed("b", "s1"), sent(errIntr, StepCheck), unreadable(errLost, StepWait), waited(false, StepCheck),
				unreadable(errLost, StepWait), waited(true, StepCheck), notCompleted(), placed("c", ""), sent(nil, StepDone)},
			wantHosts: []string{"b"},
		},
		{
			name:      "the caller gave up while reading the completion",
			reports:   []report{placed("b", "s1"), sent(errIntr, StepCheck), unreadable(context.Canceled, StepFail)},
			wantHosts: []string{"b"},
			wantErr:   context.Canceled,
		},
		{
			name:      "sent again to a host that restarted mid-task: placed elsewhere, as for a host that left",
			reports:   []report{placed("b", "s1"), sent(errIntr, StepCheck), notCompleted(), placed("c", ""), sent(nil, StepDone)},
			wantHosts: []string{"b"},
		},
		{
			name:      "lost, and the host restarted mid-task: placed elsewhere",
			reports:   []report{placed("b", "s1"), sent(errLost, StepAsk), asked(0, errDial, StepWait), waited(true, StepAsk), asked(TaskInterrupted, nil, StepCheck), notCompleted(), placed("c", ""), sent(nil, StepDone)},
			wantHosts: []string{"b"},
		},
		{
			name:    "the caller gave up: fail, no retry elsewhere",
			reports: []report{placed("b", "s1"), sent(context.DeadlineExceeded, StepFail)},
			wantErr: context.DeadlineExceeded,
		},
		{
			name:    "the caller gave up while asking",
			reports: []report{placed("b", "s1"), sent(errLost, StepAsk), asked(0, context.Canceled, StepFail)},
			wantErr: context.Canceled,
		},
		{
			name:      "placements are bounded",
			max:       2,
			reports:   []report{placed("b", "s1"), sent(errDial, StepPlace), placed("c", "s1"), sent(errDial, StepFail)},
			wantHosts: []string{"b", "c"},
			wantErr:   ErrExhausted,
		},
		{
			name:    "a report out of turn is a loop bug, not a retry",
			reports: []report{{func(f *Forward) Step { return f.Sent(nil) }, StepFail, Target{}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewForward("task-1", tc.max)
			if s := f.Start(); s.Kind != StepPlace {
				t.Fatalf("Start = %v, want place", s.Kind)
			}
			var last Step
			for i, r := range tc.reports {
				last = r.do(f)
				if last.Kind != r.want {
					t.Fatalf("report %d: got step %v (%v), want %v", i, last.Kind, last.Err, r.want)
				}
				if r.to != (Target{}) && last.Target != r.to {
					t.Fatalf("report %d: got target %v, want %v", i, last.Target, r.to)
				}
			}
			if !reflect.DeepEqual(f.ExcludedHosts(), tc.wantHosts) && len(f.ExcludedHosts())+len(tc.wantHosts) > 0 {
				t.Errorf("excluded hosts %q, want %q", f.ExcludedHosts(), tc.wantHosts)
			}
			if !reflect.DeepEqual(f.Excluded(), tc.wantSessions) && len(f.Excluded())+len(tc.wantSessions) > 0 {
				t.Errorf("excluded sessions %q, want %q", f.Excluded(), tc.wantSessions)
			}
			if tc.wantErr != nil && !errors.Is(last.Err, tc.wantErr) {
				t.Errorf("got error %v, want %v", last.Err, tc.wantErr)
			}
			if last.Kind == StepFail && !strings.Contains(last.Err.Error(), "task-1") {
				t.Errorf("error %q does not name the task", last.Err)
			}
		})
	}
}

func TestForwardUnplaceable(t *testing.T) {
	f := NewForward("task-2", 0)
	f.Start()
	f.Placed(Target{"b", "s1"})
	f.Sent(errDial)
	s := f.Unplaceable(ErrNoHost)
	if s.Kind != StepFail || !errors.Is(s.Err, ErrNoHost) || !strings.Contains(s.Err.Error(), "s1 on b: unreachable") {
		t.Fatalf("got %v %v, want a failure wrapping ErrNoHost that says what the attempts met", s.Kind, s.Err)
	}
	if h := f.History(); len(h) != 1 {
		t.Fatalf("history %q", h)
	}
}

// TestForwardAttempts: one attempt per placement, saying what it came to
// last, ending where the task completed; a host whose completion was
// read after it left is the one attempt, completed.
func TestForwardAttempts(t *testing.T) {
	f := NewForward("task-3", 0)
	f.Start()
	f.Placed(Target{"b", "s1"})
	f.Sent(errLost)
	f.Left()
	f.Checked(Completion{}, false, nil)
	f.Placed(Target{"c", ""})
	f.Sent(errDial)
	f.Placed(Target{"d", "s4"})
	got := f.Attempts("d", "s4")
	want := []hearth.Attempt{{Host: "b", Session: "s1", Result: "left the cluster"}, {Host: "c", Result: "unreachable (" + errDial.Error() + ")"}, {Host: "d", Session: "s4", Result: "completed"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("attempts %+v, want %+v", got, want)
	}

	f = NewForward("task-4", 0)
	f.Start()
	f.Placed(Target{"b", "s1"})
	f.Sent(errLost)
	f.Left()
	if s := f.Checked(Completion{Key: "task-4", Host: "b", Epoch: 9}, true, nil); s.Kind != StepDone {
		t.Fatalf("a completion read: %v", s.Kind)
	}
	got = f.Attempts("b", "s1")
	want = []hearth.Attempt{{Host: "b", Session: "s1", Result: "completed"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("attempts %+v, want %+v", got, want)
	}
}
