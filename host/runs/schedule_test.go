package runs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/sdk"
)

// step is one thing that happens to a run, and what the schedule must
// answer, as a line of a table.
type step struct {
	what string
	do   func(d *driver)
}

// starts: Next starts exactly these tasks, in this order.
func starts(names ...string) step {
	return step{"next starts " + strings.Join(names, ", "), func(d *driver) {
		d.t.Helper()
		if got := d.next(); !slices.Equal(got, names) {
			d.t.Fatalf("next started %v, want %v (%s)", got, names, d.statuses())
		}
	}}
}

// startsNothing: Next starts nothing, and wakes at nothing.
func startsNothing() step {
	return step{"next starts nothing", func(d *driver) {
		d.t.Helper()
		if at := d.wake(); !at.IsZero() {
			d.t.Fatalf("next: wake at %s, want no wake-up", at)
		}
	}}
}

// wakesAt: Next starts nothing now, and says to wake after by (from t0).
func wakesAt(by time.Duration) step {
	return step{fmt.Sprintf("next wakes at +%s", by), func(d *driver) {
		d.t.Helper()
		if at, want := d.wake(), t0.Add(by); !at.Equal(want) {
			d.t.Fatalf("next: wake at %s, want %s", at, want)
		}
	}}
}

func ok(name string) step {
	return step{name + " succeeds", func(d *driver) { d.succeed(name, nil) }}
}

func gated(name string, g hearth.Gate) step {
	return step{fmt.Sprintf("%s succeeds, gate %s (%s)", name, g.Guard, g.Action), func(d *driver) { d.succeed(name, &g) }}
}

func fails(name string, err error) step {
	return step{name + " fails: " + err.Error(), func(d *driver) { d.fail(name, err) }}
}

// interrupted: name's attempt comes back with the error a cancelled
// context gives, the run's attempts having been cancelled for cause.
func interrupted(name string, cause error) step {
	return step{name + " is interrupted", func(d *driver) { d.end(name, nil, context.Canceled, cause) }}
}

func advance(by time.Duration) step {
	return step{"the clock moves on " + by.String(), func(d *driver) { d.advance(by) }}
}

func stop(kind StopKind, to hearth.RunStatus, reason string) step {
	return step{"stop: " + reason, func(d *driver) { d.s.Stop(kind, to, reason) }}
}

// is: the tasks' statuses, "a=succeeded b=running".
func is(statuses string) step {
	return step{"statuses " + statuses, func(d *driver) {
		d.t.Helper()
		if got := d.statuses(); got != statuses {
			d.t.Fatalf("statuses %s, want %s", got, statuses)
		}
	}}
}

// ends: the run stops (nothing runs), and Finish records status, with a
// reason holding each of words.
func ends(status hearth.RunStatus, words ...string) step {
	return step{"the run ends " + string(status), func(d *driver) {
		d.t.Helper()
		info := d.finish()
		if info.Status != status {
			d.t.Fatalf("run %s (%s), want %s", info.Status, info.Reason, status)
		}
		for _, w := range words {
			if !strings.Contains(info.Reason, w) {
				d.t.Errorf("reason %q, want it to say %q", info.Reason, w)
			}
		}
	}}
}

// said: among the events written so far, these, in this order (others
// may come between).
func said(events ...string) step {
	return step{"said " + strings.Join(events, ", "), func(d *driver) {
		d.t.Helper()
		got := d.events()
		k := 0
		for _, e := range got {
			if k < len(events) && e == events[k] {
				k++
			}
		}
		if k < len(events) {
			d.t.Fatalf("events %v\nwant, in order: %v (missing %q)", got, events, events[k])
		}
	}}
}

// check runs f on the driver: a look at what no other step shows.
func check(what string, f func(d *driver)) step { return step{what, f} }

var (
	permanentErr = sdk.Permanent(errors.New("the prompt asks for a file that does not exist"))
	pauseCause   = errors.New("paused on request")
)

func TestSchedule(t *testing.T) {
	diamond := pipeline(2, task("outline"), task("draft", "outline"), task("sources", "outline"), task("edit", "draft", "sources"))
	for _, tc := range []struct {
		name   string
		p      *hearth.Pipeline
		guards guards
		steps  []step
	}{
		{
			name: "dependencies: a task starts once every task it depends on has succeeded",
			p:    diamond,
			steps: []step{
				starts("outline"), startsNothing(),
				ok("outline"), starts("draft", "sources"),
				ok("draft"), startsNothing(), is("outline=succeeded draft=succeeded sources=running edit=pending"),
				ok("sources"), starts("edit"),
				ok("edit"), startsNothing(), ends(hearth.RunCompleted),
				said("run.status created->running", "run.task outline pending->running", "run.task outline running->succeeded",
					"run.task edit running->succeeded", "run.status running->completed"),
			},
		},
		{
			name: "parallelism: no more tasks run than the pipeline's parallel, in graph order",
			p:    pipeline(2, task("a"), task("b"), task("c"), task("d")),
			steps: []step{
				starts("a", "b"), startsNothing(),
				ok("b"), starts("c"),
				ok("a"), starts("d"),
				ok("c"), ok("d"), startsNothing(), ends(hearth.RunCompleted),
			},
		},
		{
			name: "parallel 0 means one at a time",
			p:    pipeline(0, task("a"), task("b")),
			steps: []step{
				starts("a"), ok("a"), starts("b"), ok("b"), startsNothing(), ends(hearth.RunCompleted),
			},
		},
		{
			name: "stages do not interleave: the next stage is entered once nothing of the last runs",
			p:    pipeline(3, staged("research", "notes"), staged("research", "sources"), staged("writing", "draft"), staged("writing", "edit", "draft")),
			steps: []step{
				starts("notes", "sources"), startsNothing(),
				ok("notes"), startsNothing(),
				ok("sources"), starts("draft"),
				ok("draft"), starts("edit"),
				ok("edit"), startsNothing(), ends(hearth.RunCompleted),
				said("run.stage created->research", "run.stage research->writing", "run.stage writing->completed", "run.status running->completed"),
			},
		},
		{
			name: "a transition guard blocks a stage: the run pauses, saying which guard and why",
			p:    pipeline(1, staged("research", "notes"), staged("writing", "draft", "notes")),
			guards: guards{transition: func(run guard.Run, from, to string) *guard.Verdict {
				if to == "writing" {
					return &guard.Verdict{Guard: "enough-notes", Action: guard.Deny, Message: "three sources at least"}
				}
				return nil
			}},
			steps: []step{
				starts("notes"), ok("notes"), startsNothing(),
				ends(hearth.RunPaused, "stage research -> writing blocked by guard enough-notes: three sources at least", "resume"),
				is("notes=succeeded draft=pending"),
				said("guard.fired", "run.status running->paused"),
			},
		},
		{
			name: "a transition guard blocks completion: the run pauses instead of completing",
			p:    pipeline(1, staged("writing", "draft")),
			guards: guards{transition: func(run guard.Run, from, to string) *guard.Verdict {
				if to == stageCompleted {
					return &guard.Verdict{Guard: "reviewed", Action: guard.Deny, Message: "a person signs it off"}
				}
				return nil
			}},
			steps: []step{
				starts("draft"), ok("draft"), startsNothing(),
				ends(hearth.RunPaused, "stage writing -> completed blocked by guard reviewed"),
			},
		},
		{
			name: "retries: a failure is retried after the backoff, doubling, until its attempts are spent",
			p:    pipeline(1, task("draft")),
			steps: []step{
				starts("draft"), fails("draft", transient), is("draft=retrying"),
				wakesAt(time.Second), advance(time.Second), starts("draft"),
				fails("draft", transient), wakesAt(time.Second + 2*time.Second),
				advance(2 * time.Second), starts("draft"),
				fails("draft", transient), is("draft=failed"), startsNothing(),
				ends(hearth.RunFailed, "task draft failed after 3 attempts", transient.Error()),
			},
		},
		{
			name: "a retry that succeeds: the run goes on",
			p:    pipeline(1, task("draft"), task("edit", "draft")),
			steps: []step{
				starts("draft"), fails("draft", transient), advance(time.Second), starts("draft"), ok("draft"),
				starts("edit"), ok("edit"), startsNothing(), ends(hearth.RunCompleted),
				check("the failure is kept with the task", func(d *driver) {
					if rt := d.s.tasks[0]; rt.Failures != 1 || len(rt.Errors) != 1 || rt.Error != "" {
						d.t.Errorf("draft: failures %d, errors %v, error %q", rt.Failures, rt.Errors, rt.Error)
					}
				}),
			},
		},
		{
			name: "the earliest retry is when to wake",
			p:    pipeline(2, task("a"), task("b")),
			steps: []step{
				starts("a", "b"), fails("a", transient), advance(500 * time.Millisecond), fails("b", transient),
				wakesAt(time.Second), advance(500 * time.Millisecond), starts("a"),
			},
		},
		{
			name: "a task's own attempts override the pipeline's",
			p: func() *hearth.Pipeline {
				p := pipeline(1, task("draft"))
				p.Tasks[0].Attempts = 1
				return p
			}(),
			steps: []step{starts("draft"), fails("draft", transient), ends(hearth.RunFailed, "failed after 1 attempts")},
		},
		{
			name:  "a permanent failure is not retried",
			p:     pipeline(1, task("draft")),
			steps: []step{starts("draft"), fails("draft", permanentErr), is("draft=failed"), ends(hearth.RunFailed, "will not be retried (the failure is permanent)")},
		},
		{
			name: "on_failure pause: the run pauses for a person",
			p: func() *hearth.Pipeline {
				p := pipeline(1, task("draft"))
				p.OnFailure = hearth.OnFailurePause
				return p
			}(),
			steps: []step{starts("draft"), fails("draft", permanentErr), ends(hearth.RunPaused, "task draft failed")},
		},
		{
			name: "a failure for good lets the attempts already running finish, and starts nothing",
			p:    pipeline(2, task("a"), task("b"), task("c")),
			steps: []step{
				starts("a", "b"), fails("a", permanentErr), startsNothing(), ok("b"), startsNothing(),
				is("a=failed b=succeeded c=pending"), ends(hearth.RunFailed, "task a failed"),
			},
		},
		{
			name: "an interrupted attempt is pending again, its failure not counted; it runs with the next attempt number",
			p:    pipeline(1, task("draft")),
			steps: []step{
				starts("draft"),
				check("first attempt", func(d *driver) {
					if a := d.attemptOf("draft"); a.task.Attempt != 1 || a.task.ID != "essay-1/draft/1/1" {
						d.t.Fatalf("attempt %d, ID %s", a.task.Attempt, a.task.ID)
					}
				}),
				stop(StopPause, hearth.RunPaused, "paused on request"),
				interrupted("draft", pauseCause), is("draft=pending"), startsNothing(),
				ends(hearth.RunPaused, "paused on request"),
				check("the interruption is the task's reason, and no failure", func(d *driver) {
					if rt := d.s.tasks[0]; rt.Failures != 0 || rt.Reason != "interrupted: paused on request" || rt.Attempts != 1 {
						d.t.Fatalf("draft: %+v", rt)
					}
				}),
			},
		},
		{
			name: "a failure while the host closes is an interruption too",
			p:    pipeline(1, task("draft")),
			steps: []step{
				starts("draft"), fails("draft", fmt.Errorf("agent writer: %w", hearth.ErrClosed)), is("draft=pending"),
			},
		},
		{
			name: "cancel: the tasks that had not finished are skipped",
			p:    pipeline(1, task("a"), task("b", "a"), task("c", "b")),
			steps: []step{
				starts("a"), ok("a"), starts("b"), stop(StopCancel, hearth.RunCancelled, "cancelled on request"),
				interrupted("b", errors.New("cancelled on request")), ends(hearth.RunCancelled),
				is("a=succeeded b=skipped c=skipped"),
			},
		},
		{
			name: "a cancel overrides a pause asked before it",
			p:    pipeline(1, task("a")),
			steps: []step{
				starts("a"), stop(StopPause, hearth.RunPaused, "paused"), stop(StopCancel, hearth.RunCancelled, "cancelled"),
				interrupted("a", errors.New("cancelled")), ends(hearth.RunCancelled),
			},
		},
		{
			name: "the budget: a run at or over it starts nothing, and says what to do",
			p: func() *hearth.Pipeline {
				p := pipeline(1, task("a"), task("b", "a"))
				p.Budget = 0.5 // each task costs 0.5
				return p
			}(),
			steps: []step{
				starts("a"), ok("a"), startsNothing(), is("a=succeeded b=pending"),
				ends(hearth.RunFailed, "task b was not started: the run has spent 0.50 of its budget of 0.50", "--budget N"),
				said("guard.fired", "run.status running->failed"),
			},
		},
		{
			name: "a task_admission guard refuses a task: the tasks started before it in the pass still run",
			p:    pipeline(3, task("a"), task("b"), task("c")),
			guards: guards{admit: func(t hearth.Task, run guard.Run) *guard.Verdict {
				if t.Name == "b" {
					return &guard.Verdict{Guard: "no-b", Action: guard.Deny, Message: "b is not for today"}
				}
				return nil
			}},
			steps: []step{
				starts("a"), startsNothing(), ok("a"),
				ends(hearth.RunFailed, `task b was not started: task essay-1/b/1/1 was denied by guard "no-b": b is not for today`),
				said("guard.fired"),
			},
		},
		{
			name: "no task can start: nothing runs, nothing is due, and tasks wait on what cannot succeed",
			p:    pipeline(1, task("a"), task("b", "a")),
			steps: []step{
				check("a is recorded running with no attempt (records a resume did not reset)", func(d *driver) {
					d.s.tasks[0].Status = "running"
				}),
				startsNothing(), ends(hearth.RunFailed, "no task can start"),
			},
		},
		{
			name: "a task found failed in the records stops the run",
			p:    pipeline(1, task("a"), task("b")),
			steps: []step{
				check("b is failed in the records", func(d *driver) { d.s.tasks[1].Status = hearth.TaskFailed }),
				startsNothing(), ends(hearth.RunFailed, "task b is failed; resume the run to try it again"),
			},
		},
		{
			name: "a quality gate retries a task with its feedback",
			p:    pipeline(1, task("draft"), task("edit", "draft")),
			steps: []step{
				starts("draft"), gated("draft", hearth.Gate{Guard: "length", Action: hearth.GateRetry, Feedback: "too short", MaxLoops: 2}),
				is("draft=pending edit=pending"), starts("draft"),
				check("the attempt carries the gate's feedback, in round 2", func(d *driver) {
					a := d.attemptOf("draft")
					if !strings.Contains(a.task.Feedback, `quality gate "length" sent this work back (loop 1 of 2): too short`) ||
						!strings.Contains(a.task.Feedback, "Its report:\nthe draft") || a.round != 2 || a.task.Metadata["feedback"] != a.task.Feedback {
						d.t.Fatalf("feedback %q, round %d", a.task.Feedback, a.round)
					}
				}),
				ok("draft"), starts("edit"), ok("edit"), startsNothing(), ends(hearth.RunCompleted),
				said("run.gate", "run.task draft running->succeeded", "run.task draft succeeded->pending"),
			},
		},
		{
			name: "a quality gate sends the work back to an earlier task: it and everything after it run again",
			p:    pipeline(1, task("outline"), task("draft", "outline"), task("edit", "draft")),
			steps: []step{
				starts("outline"), ok("outline"), starts("draft"), ok("draft"), starts("edit"),
				gated("edit", hearth.Gate{Guard: "coherent", Action: hearth.GateSendBack, To: "outline", Feedback: "the argument wanders", MaxLoops: 3}),
				is("outline=pending draft=pending edit=pending"),
				starts("outline"), ok("outline"), starts("draft"), ok("draft"), starts("edit"), ok("edit"),
				startsNothing(), ends(hearth.RunCompleted),
				check("versions count on: each task's output is v2, the first archived", func(d *driver) {
					for _, rt := range d.s.tasks {
						if rt.Version != 2 || rt.Round != 2 {
							d.t.Errorf("%s: v%d round %d, want v2 round 2", rt.Name, rt.Version, rt.Round)
						}
					}
				}),
			},
		},
		{
			name: "a gate past its max_loops keeps the output for review and escalates",
			p:    pipeline(1, task("draft")),
			steps: []step{
				starts("draft"), gated("draft", hearth.Gate{Guard: "length", Action: hearth.GateRetry, Feedback: "too short", MaxLoops: 1}),
				starts("draft"), gated("draft", hearth.Gate{Guard: "length", Action: hearth.GateRetry, Feedback: "still short", MaxLoops: 1}),
				is("draft=succeeded"),
				ends(hearth.RunFailed, "quality gate length still fails after 1 loops", "kept for review", "hearth runs revisit essay-1 draft"),
			},
		},
		{
			name: "a gate sending work back to a task it does not depend on: kept for review, the guard is to fix",
			p:    pipeline(1, task("a"), task("b")),
			steps: []step{
				starts("a"), gated("a", hearth.Gate{Guard: "g", Action: hearth.GateSendBack, To: "b", MaxLoops: 3}),
				ends(hearth.RunFailed, `sends work back to "b", which task a does not depend on`, "fix the guard's back_to"),
			},
		},
		{
			name: "an attempt ending after its round was reset: its cost counts, its result does not",
			p:    pipeline(2, task("outline"), task("notes", "outline"), task("draft", "outline")),
			steps: []step{
				starts("outline"), ok("outline"), starts("notes", "draft"),
				gated("draft", hearth.Gate{Guard: "g", Action: hearth.GateSendBack, To: "outline", MaxLoops: 3}),
				is("outline=pending notes=pending draft=pending"),
				ok("notes"),
				check("notes' result is discarded, its cost kept", func(d *driver) {
					if rt := d.s.tasks[1]; rt.Version != 0 || rt.Status != hearth.TaskPending || rt.Cost != 0.5 {
						d.t.Fatalf("notes: %+v", rt)
					}
				}),
				starts("outline"),
			},
		},
		{
			name: "an output larger than a task may return fails its task for good",
			p:    pipeline(1, task("draft")),
			steps: []step{
				starts("draft"),
				check("draft returns MaxOutput+1 bytes", func(d *driver) {
					d.end("draft", &hearth.Outcome{Session: "writer-1", Result: sdk.Result{Output: strings.Repeat("x", hearth.MaxOutput+1)}}, nil, nil)
				}),
				is("draft=failed"), ends(hearth.RunFailed, "more than the 16 MiB a task's output may be"),
			},
		},
		{
			name: "context: a task's prompt gets what its ancestors learned, nearest first",
			p:    pipeline(1, task("outline"), task("draft", "outline"), task("edit", "draft")),
			steps: []step{
				starts("outline"), ok("outline"), starts("draft"), ok("draft"), starts("edit"),
				check("edit's attempt", func(d *driver) {
					a := d.attemptOf("edit")
					var up []string
					for _, u := range a.task.Upstream {
						up = append(up, u.Task)
					}
					if !slices.Equal(up, []string{"draft", "outline"}) || !strings.Contains(a.task.Context, "draft decided") || a.task.Prompt != "do edit" {
						d.t.Fatalf("upstream %v, context %q, prompt %q", up, a.task.Context, a.task.Prompt)
					}
				}),
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			play(t, tc.p, tc.guards, tc.steps)
		})
	}
}
