package runs

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/guard"
)

// withStages gives p the rules of stages.
func withStages(p *hearth.Pipeline, stages ...*hearth.Stage) *hearth.Pipeline {
	p.Stages = stages
	return p
}

// notBefore is stage name, closed until by after t0.
func notBefore(name string, by time.Duration) *hearth.Stage {
	return &hearth.Stage{Name: name, NotBefore: t0.Add(by)}
}

// waitsSaid: the wait of task name for its stage has been said n times
// in the writes so far, each saying when the stage opens.
func waitsSaid(name string, n int, opens time.Duration) step {
	return step{"the wait of " + name + " said", func(d *driver) {
		d.t.Helper()
		var got []string
		for _, w := range d.writes {
			for _, e := range w.Events {
				if e.Kind == hearth.EventRunTask && e.Task == name && e.To == "" && strings.Contains(e.Message, "waits for stage") {
					got = append(got, e.Message)
				}
			}
		}
		if len(got) != n {
			d.t.Fatalf("the wait of %s said %d times (%q), want %d", name, len(got), got, n)
		}
		at := t0.Add(opens).Format(time.RFC3339)
		for _, m := range got {
			if !strings.Contains(m, "opens at "+at) || !strings.Contains(m, "not_before = ") {
				d.t.Errorf("wait %q, want it to say it opens at %s, and why", m, at)
			}
		}
		if rt := d.s.tasks[d.s.index[name]]; n > 0 && rt.Status == hearth.TaskPending && !strings.Contains(rt.Reason, "waits for stage") {
			d.t.Errorf("task %s's reason %q, want the wait (runs show's NOTE)", name, rt.Reason)
		}
	}}
}

// noNewWrite: Next, asked again with nothing changed, writes nothing.
func noNewWrite() step {
	return step{"next again writes nothing", func(d *driver) {
		d.t.Helper()
		n := len(d.writes)
		d.wake()
		if len(d.writes) != n {
			d.t.Fatalf("a pass that found the same wait wrote %+v", d.writes[n:])
		}
	}}
}

// transitions records the stage transitions the guards were asked about.
type transitions struct {
	mu    sync.Mutex
	asked []string
}

func (tr *transitions) guards() guards {
	return guards{transition: func(_ guard.Run, from, to string) *guard.Verdict {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		tr.asked = append(tr.asked, from+"->"+to)
		return nil
	}}
}

// were: the guards have been asked about exactly these transitions.
func (tr *transitions) were(want ...string) step {
	return step{"transition guards asked about " + strings.Join(want, ", "), func(d *driver) {
		d.t.Helper()
		tr.mu.Lock()
		defer tr.mu.Unlock()
		if !slices.Equal(tr.asked, want) {
			d.t.Fatalf("transition guards asked about %v, want %v", tr.asked, want)
		}
	}}
}

// TestScheduleStageRules: a stage's rules (hearth.Stage) hold a run at
// the stage's door: the ready task waits, the run wakes when the stage
// may open, is not escalated meanwhile, and its guards are asked only
// then; the wait is said once; retention's idle time counts from the
// opening.
func TestScheduleStageRules(t *testing.T) {
	waiting := &transitions{}
	for _, tc := range []struct {
		name   string
		p      *hearth.Pipeline
		guards guards
		steps  []step
	}{
		{
			name:   "a stage not open yet: its task waits, the run wakes when it opens, and goes on",
			p:      withStages(pipeline(1, staged("build", "compile"), staged("deploy", "ship", "compile")), notBefore("deploy", time.Hour)),
			guards: waiting.guards(),
			steps: []step{
				starts("compile"), ok("compile"),
				wakesAt(time.Hour), waitsSaid("ship", 1, time.Hour), is("compile=succeeded ship=pending"),
				check("the run waits: not stopping, not idle until the stage opens", func(d *driver) {
					if d.s.Stopping() {
						d.t.Fatalf("the run stops while it waits: %+v", d.s.stop)
					}
					if got := d.s.IdleSince(); !got.Equal(t0.Add(time.Hour)) {
						d.t.Errorf("IdleSince %s, want the stage's opening %s", got, t0.Add(time.Hour))
					}
				}),
				waiting.were("created->build"),
				noNewWrite(), waitsSaid("ship", 1, time.Hour),
				advance(30 * time.Minute), wakesAt(time.Hour), waitsSaid("ship", 1, time.Hour),
				advance(30 * time.Minute), starts("ship"),
				waiting.were("created->build", "build->deploy"),
				check("the wait is over: idle counts from the run's activity again", func(d *driver) {
					if rt := d.s.tasks[1]; rt.Reason != "" {
						d.t.Errorf("ship's reason %q once it started", rt.Reason)
					}
				}),
				ok("ship"), startsNothing(), ends(hearth.RunCompleted),
				said("run.stage created->build", "run.task ship ->", "run.stage build->deploy", "run.task ship pending->running"),
			},
		},
		{
			name: "a stage whose time has passed opens at once, saying nothing of a wait",
			p:    withStages(pipeline(1, staged("deploy", "ship")), notBefore("deploy", -24*time.Hour)),
			steps: []step{
				starts("ship"), waitsSaid("ship", 0, 0), ok("ship"), startsNothing(), ends(hearth.RunCompleted),
			},
		},
		{
			name: "the wake-up is the earlier of a retry and a stage: the retry",
			p:    withStages(pipeline(2, task("lint"), staged("deploy", "ship")), notBefore("deploy", time.Hour)),
			steps: []step{
				starts("lint"), fails("lint", transient), wakesAt(time.Second), waitsSaid("ship", 1, time.Hour),
				advance(time.Second), starts("lint"), ok("lint"), wakesAt(time.Hour),
			},
		},
		{
			name: "the wake-up is the earlier of a retry and a stage: the stage",
			p:    withStages(pipeline(2, task("lint"), staged("deploy", "ship")), notBefore("deploy", 500*time.Millisecond)),
			steps: []step{
				starts("lint"), fails("lint", transient), wakesAt(500 * time.Millisecond),
				advance(500 * time.Millisecond), starts("ship"), is("lint=retrying ship=running"),
				advance(500 * time.Millisecond), starts("lint"),
			},
		},
		{
			name: "a waiting stage does not stop a task of no stage, nor of the stage the run is in",
			p: withStages(pipeline(1, staged("build", "compile"), staged("deploy", "ship", "compile"), staged("build", "test", "compile"), task("notify", "compile")),
				notBefore("deploy", time.Hour)),
			steps: []step{
				starts("compile"), ok("compile"), starts("test"), ok("test"), starts("notify"), ok("notify"),
				wakesAt(time.Hour), advance(time.Hour), starts("ship"),
			},
		},
		{
			name: "several stages: each is waited for in turn; one already open is not",
			p: withStages(pipeline(2, staged("research", "notes"), staged("writing", "draft", "notes"), staged("review", "edit", "draft")),
				notBefore("research", time.Hour), notBefore("writing", 3*time.Hour), notBefore("review", 2*time.Hour)),
			steps: []step{
				wakesAt(time.Hour), waitsSaid("notes", 1, time.Hour),
				advance(time.Hour), starts("notes"), ok("notes"),
				wakesAt(3 * time.Hour), waitsSaid("draft", 1, 3*time.Hour),
				advance(2 * time.Hour), starts("draft"), ok("draft"),
				starts("edit"), waitsSaid("edit", 0, 0), ok("edit"), startsNothing(), ends(hearth.RunCompleted),
				said("run.stage created->research", "run.stage research->writing", "run.stage writing->review", "run.stage review->completed"),
			},
		},
		{
			name: "a guard that blocks a stage is asked when it opens, not before",
			p:    withStages(pipeline(1, staged("deploy", "ship")), notBefore("deploy", time.Hour)),
			guards: guards{transition: func(_ guard.Run, _, to string) *guard.Verdict {
				if to == "deploy" {
					return &guard.Verdict{Guard: "freeze", Action: guard.Deny, Message: "change freeze"}
				}
				return nil
			}},
			steps: []step{
				wakesAt(time.Hour), advance(time.Hour), startsNothing(),
				ends(hearth.RunPaused, "stage created -> deploy blocked by guard freeze: change freeze"),
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			play(t, tc.p, tc.guards, tc.steps)
		})
	}
}
