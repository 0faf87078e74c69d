package runs

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
)

// disk is what a store holds of one run after the writes that landed:
// each write is applied whole, as one transaction, or not at all.
type disk struct {
	head    *record.Run
	graph   *record.Graph
	tasks   map[string]*record.Task
	outputs []*record.Output
	// said counts, by task, the successes the landed writes' events say:
	// what subscribers were shown and the event log holds.
	said map[string]int
	// saidOK counts the pool's task.succeeded events the same way.
	saidOK map[string]int
}

func (k *disk) apply(w record.RunWrite) {
	if w.Graph != nil {
		k.graph = w.Graph
	}
	for _, t := range w.Tasks {
		k.tasks[t.Name] = t.Clone()
	}
	if c := w.Checkpoint; c != nil {
		for _, t := range c.Tasks {
			k.tasks[t.Name] = t.Clone()
		}
	}
	k.outputs = append(k.outputs, w.Outputs...)
	if w.Run != nil {
		k.head = w.Run.Clone()
	}
	for _, e := range w.Events {
		switch {
		case e.Kind == hearth.EventRunTask && e.To == string(hearth.TaskSucceeded):
			k.said[e.Task]++
		case e.Kind == hearth.EventTaskSucceeded:
			k.saidOK[taskOf(e.Task)]++
		}
	}
}

// randomPipeline is a graph of 3 to 8 tasks, each depending on up to two
// earlier ones, some in stages (in graph order, so that stages follow
// one another), run 1 to 3 at a time.
func randomPipeline(rng *rand.Rand) *hearth.Pipeline {
	n := 3 + rng.IntN(6)
	var tasks []*hearth.PipelineTask
	stages := rng.IntN(3) == 0
	for i := range n {
		var deps []string
		for range rng.IntN(3) {
			if i > 0 {
				if d := fmt.Sprintf("t%d", rng.IntN(i)); !slices.Contains(deps, d) {
					deps = append(deps, d)
				}
			}
		}
		t := task(fmt.Sprintf("t%d", i), deps...)
		if stages {
			t.Stage = fmt.Sprintf("s%d", i*2/n)
		}
		tasks = append(tasks, t)
	}
	return pipeline(1+rng.IntN(3), tasks...)
}

// closeStages gives some of p's stages a rule: closed until up to 10 s
// after t0, so that runs wait for them, between and across the sweep's
// events. Its own rng leaves the pipelines of the seeds as they were.
func closeStages(p *hearth.Pipeline, rng *rand.Rand) {
	for _, name := range p.TaskStages() {
		if rng.IntN(2) == 0 {
			p.Stages = append(p.Stages, &hearth.Stage{Name: name, NotBefore: t0.Add(time.Duration(rng.IntN(10_000)) * time.Millisecond)})
		}
	}
}

// TestScheduleSweep drives runs of random pipelines through random
// events (successes, retryable and permanent failures, quality gates that
// retry or send work back, pauses that interrupt what runs, and a write
// that fails), resuming each from what landed on "disk" until it
// completes. After every answer the rules of checkEffects hold; and
// whatever happened:
//
//   - every success said (a task's move to succeeded, the pool's
//     task.succeeded) is one the disk records with an output, and every
//     output on disk was said once: nothing is shown done that is not
//     written, and nothing written is left unsaid;
//   - a run resumed from the disk never runs again a task the disk has
//     as succeeded (until a gate of the resumed run sends work back);
//   - no task starts in a stage its rules keep closed (closeStages): the
//     run waits, and wakes when the stage opens;
//   - the records on disk are always ones a resume accepts (no problem
//     for Problems to find), and the run completes with every task
//     succeeded on disk.
func TestScheduleSweep(t *testing.T) {
	seeds := 400
	if testing.Short() {
		seeds = 50
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			sweep(t, uint64(seed))
		})
	}
}

func sweep(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	p := randomPipeline(rng)
	closeStages(p, rand.New(rand.NewPCG(seed, 11)))
	k := &disk{tasks: map[string]*record.Task{}, said: map[string]int{}, saidOK: map[string]int{}}
	d := start(t, p, guards{})
	// failAt is the write that fails, counting from the first: none for
	// two seeds in three.
	failAt := -1
	if rng.IntN(3) == 0 {
		failAt = 2 + rng.IntN(12)
	}
	landed := 0
	var failed error
	// land applies the writes the driver took since last time, up to a
	// failure: from then on the shell writes nothing (Run.writeLocked).
	land := func() {
		for ; landed < len(d.writes); landed++ {
			if failed == nil && landed == failAt {
				failed = errors.New("injected: the disk is gone")
				d.s.Stop(StopEscalate, hearth.RunPaused, "the store refused a write")
			}
			if failed == nil {
				k.apply(d.writes[landed])
			}
		}
	}
	land()
	resumes := 0
	// doneOnDisk are the tasks the disk had succeeded at the last resume:
	// they may not start again unless a gate resets them.
	var doneOnDisk map[string]bool
	for steps := 0; ; steps++ {
		if steps > 5000 {
			t.Fatalf("seed %d: no end after %d steps (%s)", seed, steps, d.statuses())
		}
		if !d.s.Stopping() {
			for _, name := range d.next() {
				if doneOnDisk[name] {
					t.Fatalf("seed %d: %s ran again after resume, though the disk had it succeeded", seed, name)
				}
				stage := p.Task(name).Stage
				if open, at := p.Stage(stage).Opens(d.now); !open {
					t.Fatalf("seed %d: %s started at %s in stage %s, which opens at %s", seed, name, d.now, stage, at)
				}
			}
			land()
		}
		if len(d.running) == 0 {
			if !d.s.Stopping() {
				at := d.wake()
				if at.IsZero() {
					t.Fatalf("seed %d: nothing runs, nothing is due, and the run does not stop (%s)", seed, d.statuses())
				}
				d.now = at
				continue
			}
			// The run stops: its end recorded (or, after the failed write,
			// its pause as a status record), then resumed from the disk.
			if failed == nil {
				d.finish()
				land()
			} else {
				d.s.WriteFailed(d.now, "the store refused a write")
				head, write := d.s.PauseRecord(d.now, k.head.Clone(), k.tasks, k.head.Checkpoint, "the store refused a write")
				if write {
					k.head = head
				}
			}
			if k.head.Status == hearth.RunCompleted {
				break
			}
			if resumes++; resumes > 50 {
				t.Fatalf("seed %d: not completed after %d resumes (%s)", seed, resumes, d.statuses())
			}
			d, doneOnDisk = resume(t, k, d.now, "resumed")
			failed, failAt, landed = nil, -1, len(d.writes)-1
			land()
			continue
		}
		// Something happens to one running attempt.
		ids := slices.Sorted(maps.Keys(d.running))
		id := ids[rng.IntN(len(ids))]
		name := d.running[id].task.Name
		d.advance(time.Duration(rng.IntN(2000)) * time.Millisecond)
		switch r := rng.IntN(100); {
		case r < 62:
			d.succeed(id, nil)
		case r < 77:
			d.fail(id, transient)
		case r < 80:
			d.fail(id, permanentErr)
		case r < 86:
			d.succeed(id, &hearth.Gate{Guard: "again", Action: hearth.GateRetry, Feedback: "once more", MaxLoops: 2})
		case r < 92:
			// Back to an ancestor, or to the task itself.
			i := d.s.index[name]
			to := name
			if deps := d.s.deps[i]; len(deps) > 0 {
				to = d.s.tasks[deps[rng.IntN(len(deps))]].Name
			}
			d.succeed(id, &hearth.Gate{Guard: "back", Action: hearth.GateSendBack, To: to, Feedback: "rethink", MaxLoops: 2})
		default:
			// A pause: every running attempt is interrupted.
			d.s.Stop(StopPause, hearth.RunPaused, "paused on request")
			for _, other := range ids {
				d.end(other, nil, errors.New("context canceled"), errors.New("paused on request"))
			}
		}
		if gateReset(d) {
			doneOnDisk = nil
		}
		land()
	}
	for _, rt := range k.tasks {
		if rt.Status != hearth.TaskSucceeded {
			t.Errorf("seed %d: completed with %s %s on disk", seed, rt.Name, rt.Status)
		}
	}
	outputs := map[string]int{}
	for _, o := range k.outputs {
		outputs[o.Task]++
	}
	for _, pt := range p.Tasks {
		name := pt.Name
		if k.said[name] != outputs[name] || k.saidOK[name] != outputs[name] {
			t.Errorf("seed %d: task %s: %d successes and %d task.succeeded said, %d outputs on disk", seed, name, k.said[name], k.saidOK[name], outputs[name])
		}
	}
}

// gateReset reports whether the last write sent work back (a task moved
// from succeeded to pending): tasks done before may run again.
func gateReset(d *driver) bool {
	if len(d.writes) == 0 {
		return false
	}
	for _, e := range d.writes[len(d.writes)-1].Events {
		if e.Kind == hearth.EventRunTask && e.From == string(hearth.TaskSucceeded) && e.To == string(hearth.TaskPending) {
			return true
		}
	}
	return false
}

// resume builds the run's schedule again from what the disk holds, the
// way Runs.Resume does, and launches it, for why ("resumed", or a
// revisit). It returns the driver and the tasks the disk has succeeded.
func resume(t *testing.T, k *disk, now time.Time, why string) (*driver, map[string]bool) {
	t.Helper()
	recs := make(map[string]*record.Task, len(k.tasks))
	done := make(map[string]bool)
	for name, rt := range k.tasks {
		recs[name] = rt.Clone()
		if rt.Status == hearth.TaskSucceeded {
			done[name] = true
		}
	}
	s, err := NewSchedule(k.head.Clone(), k.graph, recs, slices.Clone(k.outputs), guards{})
	if err != nil {
		t.Fatal(err)
	}
	d := &driver{t: t, s: s, now: now, running: map[string]attempt{}, successes: map[string]int{}}
	if err := s.Resumable(why); err != nil {
		t.Fatalf("resume: %v (disk: %s)", err, k.head.Status)
	}
	if problems := s.Problems(); len(problems) > 0 {
		t.Fatalf("the disk holds records a resume refuses: %+v", problems)
	}
	if err := s.Resume(now, hearth.ResumeOptions{}, why); err != nil {
		t.Fatal(err)
	}
	eff, err := s.Launch(now, why)
	if err != nil {
		t.Fatal(err)
	}
	d.take(eff)
	return d, done
}
