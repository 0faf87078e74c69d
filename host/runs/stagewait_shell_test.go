package runs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/host/store"
)

// badgerRuns is the store (Badger on disk) as the run engine's Store, as
// the engine hands it over (host/engine's runStore).
type badgerRuns struct{ *store.Store }

func (s badgerRuns) SaveRun(id string, w record.RunWrite) Pending { return s.Store.SaveRun(id, w) }

func (s badgerRuns) SaveRunStatus(id string, head *record.Run) Pending {
	return s.Store.SaveRunStatus(id, head)
}

func (s badgerRuns) RunRecord(id string) (*record.Run, error) {
	head, err := s.Store.RunRecord(id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w %q", hearth.ErrUnknownRun, id)
	}
	return head, err
}

var _ Store = badgerRuns{}

// TestStageWaitsInTheStore: through the shell, on a real store, a task
// whose stage opens two seconds ahead does not start before then; the
// run says why it waits, once, before it enters the stage; and the
// stage's rule is what the store reads back of the run's graph. The test
// waits on the run's end, not on the clock.
func TestStageWaitsInTheStore(t *testing.T) {
	t.Parallel()
	st, err := store.Open(t.TempDir(), store.Write, store.Options{GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() }) // after the engine has stopped: cleanups run last first
	f := newFixture(t)
	d := f.deps()
	d.Store = badgerRuns{st}
	d.Emit = func(e hearth.Event) Pending { _, p := st.Append(e); return p }
	m := f.engine(d)

	p := pipe("release", []string{"compile", "echo:built"}, []string{"ship", "echo:shipped", "compile"})
	p.Tasks[0].Stage, p.Tasks[1].Stage = "build", "deploy"
	opens := time.Now().Add(2 * time.Second)
	p.Stages = []*hearth.Stage{{Name: "deploy", NotBefore: opens}}
	info, err := f.wait(m.Start(context.Background(), p, hearth.RunOptions{}))
	if err != nil || info.Status != hearth.RunCompleted {
		t.Fatalf("run %s (%s), %v; want completed", info.Status, info.Reason, err)
	}

	tasks, err := st.RunTasks(info.ID)
	if err != nil {
		t.Fatal(err)
	}
	ship, compile := tasks["ship"], tasks["compile"]
	if ship.Started.Before(opens) {
		t.Errorf("ship started at %s, before its stage opened at %s", ship.Started.Format(time.StampMicro), opens.Format(time.StampMicro))
	}
	evs, err := st.RunEvents(context.Background(), info.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	wait, entered := -1, -1
	waits := 0
	for i, e := range evs {
		switch {
		case e.Kind == hearth.EventRunTask && e.Task == "ship" && e.To == "" && strings.Contains(e.Message, "waits for stage deploy"):
			wait = i
			waits++
		case e.Kind == hearth.EventRunStage && e.To == "deploy":
			entered = i
		}
	}
	if entered < 0 || evs[entered].Time.Before(opens) {
		var said []string
		for _, e := range evs {
			said = append(said, e.Time.Format(time.StampMicro)+" "+e.Message)
		}
		t.Fatalf("stage deploy entered at event %d; want it entered, not before %s; the run's events:\n%s", entered, opens.Format(time.StampMicro), strings.Join(said, "\n"))
	}
	if !compile.Finished.Before(opens) {
		// The machine was too slow for the wait to happen at all: what
		// is left to hold is the order above.
		t.Logf("compile finished at %s, after deploy opened: no wait to see", compile.Finished.Format(time.StampMicro))
		return
	}
	if waits != 1 || wait > entered || !evs[wait].Time.Before(opens) {
		t.Errorf("the wait said %d times, at event %d (stage entered at %d); want once, before the stage opens", waits, wait, entered)
	}
	g, err := st.RunGraph(info.ID)
	if err != nil {
		t.Fatal(err)
	}
	if s := g.Pipeline.Stage("deploy"); s == nil || !s.NotBefore.Equal(opens) {
		t.Errorf("the graph read back has stage %+v, want not_before %s", s, opens)
	}
}

// TestRetentionLeavesAStageWaitAlone: a run that waits for its stage to
// open is not idle: a week of waiting does not get it paused by a
// pause_after of a day; once the stage may open, its idle time counts
// from then.
func TestRetentionLeavesAStageWaitAlone(t *testing.T) {
	f := newFixture(t)
	clock := &clock{now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	f.now = clock.Now
	p := pipe("release", []string{"ship", "echo:shipped"})
	p.Tasks[0].Stage = "deploy"
	opens := clock.Now().Add(7 * 24 * time.Hour)
	p.Stages = []*hearth.Stage{{Name: "deploy", NotBefore: opens}}
	p.Retention = hearth.Retention{PauseAfter: 24 * time.Hour, AbandonAfter: 48 * time.Hour}
	h, err := f.runs.Start(context.Background(), p, hearth.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.store.await(t, "the wait of ship", func() bool { return strings.Contains(f.store.task(h.ID, "ship").Reason, "waits for stage deploy") })

	clock.Advance(6 * 24 * time.Hour)
	f.runs.Sweep()
	if head := f.store.head(t, h.ID); head.Status != hearth.RunRunning {
		t.Fatalf("after six days of waiting for its stage: %s (%s), want running", head.Status, head.Reason)
	}
	// The test's clock passes the opening and a day more without the
	// run's timer (on the machine's clock) firing: idle from the opening.
	clock.Advance(2*24*time.Hour + time.Minute)
	f.runs.Sweep()
	info, err := f.wait(h, nil)
	if info.Status != hearth.RunPaused || !strings.Contains(info.Reason, "idle for 24h1m0s: paused by retention") {
		t.Fatalf("a day past the opening: %s (%s), %v; want paused by retention, idle from the opening", info.Status, info.Reason, err)
	}
}

// TestStageOpensWhenTheWallClockPassesIt: a run waiting for its stage
// opens it once the wall clock passes not_before, however the clock got
// there: a machine that slept through the opening, or a clock stepped
// forward, leaves the run's timer (on the monotonic clock) with most of
// its wait to go. Here the opening is an hour ahead and the test's clock
// jumps past it; the run must not wait for the hour on the machine's
// clock. Each form of the jump: just past the opening, to the instant
// of it, and far beyond.
func TestStageOpensWhenTheWallClockPassesIt(t *testing.T) {
	for _, jump := range []time.Duration{time.Hour, time.Hour + time.Nanosecond, 365 * 24 * time.Hour} {
		t.Run(jump.String(), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			clock := &clock{now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
			f.now = clock.Now
			d := f.deps()
			d.Recheck = 20 * time.Millisecond
			m := f.engine(d)
			p := pipe("release", []string{"ship", "echo:shipped"})
			p.Tasks[0].Stage = "deploy"
			opens := clock.Now().Add(time.Hour)
			p.Stages = []*hearth.Stage{{Name: "deploy", NotBefore: opens}}
			h, err := m.Start(context.Background(), p, hearth.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			f.store.await(t, "the wait of ship", func() bool { return strings.Contains(f.store.task(h.ID, "ship").Reason, "waits for stage deploy") })
			clock.Advance(jump)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			info, err := h.Wait(ctx)
			if ctx.Err() != nil {
				t.Fatalf("the clock is %s past the opening of deploy, and the run still waits for it (its timer is set an hour ahead on the machine's clock)", jump-time.Hour)
			}
			if err != nil || info.Status != hearth.RunCompleted {
				t.Fatalf("run %s (%s), %v; want completed", info.Status, info.Reason, err)
			}
			if ship := f.store.task(h.ID, "ship"); ship.Started.Before(opens) {
				t.Errorf("ship started at %s, before deploy opened at %s", ship.Started, opens)
			}
		})
	}
}
