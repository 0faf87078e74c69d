package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/sdk"
)

// op is one thing that happens to an Accepted table.
type op struct {
	do    string // accept, forget, finish, interrupt
	key   string
	after time.Duration // since t0
	// forgot is what accept must report forgotten.
	forgot []string
}

// TestAccepted runs the table through what a host sees, and checks after
// each step what it answers for every key: a key is run at most once
// (accept of a known key changes nothing), only a running key's
// acceptance is forgotten, and finished keys are forgotten oldest first
// when older than the window or beyond the limit, never a running one.
func TestAccepted(t *testing.T) {
	done := Result{Outcome: &hearth.Outcome{Result: sdk.Result{Output: "ok"}}}
	stopped := Stopped("b", "k", "a", true, false, context.Canceled)
	for _, tc := range []struct {
		name  string
		limit int
		age   time.Duration
		ops   []op
		want  map[string]TaskStatus
	}{
		{"lifecycle", 10, time.Hour, []op{
			{do: "accept", key: "k1"}, {do: "accept", key: "k2"}, {do: "accept", key: "k3"},
			{do: "finish", key: "k1"}, {do: "interrupt", key: "k2"}, {do: "forget", key: "k3"},
		}, map[string]TaskStatus{"k1": TaskDone, "k2": TaskInterrupted, "k3": TaskUnknown, "never": TaskUnknown}},
		{"known keys are not accepted again", 10, time.Hour, []op{
			{do: "accept", key: "k1"}, {do: "finish", key: "k1"}, {do: "accept", key: "k1"},
			{do: "accept", key: "k2"}, {do: "interrupt", key: "k2"}, {do: "accept", key: "k2"},
		}, map[string]TaskStatus{"k1": TaskDone, "k2": TaskInterrupted}},
		{"only a running key is forgotten, and ends once", 10, time.Hour, []op{
			{do: "accept", key: "k1"}, {do: "finish", key: "k1"}, {do: "forget", key: "k1"},
			{do: "interrupt", key: "k1"}, {do: "finish", key: "never"},
		}, map[string]TaskStatus{"k1": TaskDone, "never": TaskUnknown}},
		{"the window", 10, time.Hour, []op{
			{do: "accept", key: "old"}, {do: "finish", key: "old"},
			{do: "accept", key: "new", after: 40 * time.Minute}, {do: "finish", key: "new", after: 40 * time.Minute},
			{do: "accept", key: "running", after: 50 * time.Minute},
			// An hour after old finished it is still kept; past it, the
			// next acceptance forgets it, and later new.
			{do: "accept", key: "k4", after: time.Hour},
			{do: "accept", key: "k5", after: time.Hour + time.Second, forgot: []string{"old"}},
			{do: "accept", key: "k6", after: 3 * time.Hour, forgot: []string{"new"}},
		}, map[string]TaskStatus{"old": TaskUnknown, "new": TaskUnknown, "running": TaskRunning, "k4": TaskRunning, "k6": TaskRunning}},
		{"the limit counts running keys and forgets finished ones, oldest first", 3, time.Hour, []op{
			{do: "accept", key: "k1"}, {do: "accept", key: "k2"},
			{do: "finish", key: "k1", after: time.Second}, {do: "interrupt", key: "k2", after: 2 * time.Second},
			{do: "accept", key: "k3", after: 3 * time.Second},
			{do: "accept", key: "k4", after: 4 * time.Second, forgot: []string{"k1"}}, // finished first
			{do: "accept", key: "k5", after: 5 * time.Second, forgot: []string{"k2"}},
			{do: "accept", key: "k6", after: 6 * time.Second}, // nothing finished to forget: running keys stay
		}, map[string]TaskStatus{"k1": TaskUnknown, "k2": TaskUnknown, "k3": TaskRunning, "k4": TaskRunning, "k5": TaskRunning, "k6": TaskRunning}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAccepted(tc.limit, tc.age)
			for i, o := range tc.ops {
				now := t0.Add(o.after)
				switch o.do {
				case "accept":
					if got := a.Accept(o.key, now); !slices.Equal(got, o.forgot) {
						t.Fatalf("op %d: accept %s forgot %q, want %q", i, o.key, got, o.forgot)
					}
				case "forget":
					a.Forget(o.key)
				case "finish":
					a.Finish(o.key, done, now)
				case "interrupt":
					a.Interrupt(o.key, stopped, now)
				}
			}
			for key, want := range tc.want {
				st, r := a.Status(key)
				if st != want {
					t.Errorf("%s: %v, want %v", key, st, want)
				}
				switch st {
				case TaskDone:
					if r.Outcome == nil || r.Outcome.Result.Output != "ok" || r.Err != nil {
						t.Errorf("%s: done with %+v, want the task's result", key, r)
					}
				case TaskInterrupted:
					if !errors.Is(r.Err, ErrInterrupted) {
						t.Errorf("%s: interrupted with %v, want ErrInterrupted", key, r.Err)
					}
				default:
					if r != (Result{}) {
						t.Errorf("%s: %v with a result %+v", key, st, r)
					}
				}
			}
		})
	}
}

// TestAcceptedRestore: what a restart reads back is ordered by when it
// finished, whatever order the store lists it in, and pruned: keys that
// expired while the host was down and the oldest beyond the limit are
// forgotten, the rest answered as before.
func TestAcceptedRestore(t *testing.T) {
	a := NewAccepted(2, time.Hour)
	now := t0.Add(2 * time.Hour)
	done := Result{Outcome: &hearth.Outcome{}}
	a.Restore("newest", TaskDone, done, now.Add(-time.Minute))
	a.Restore("expired", TaskDone, done, t0)
	a.Restore("older", TaskInterrupted, Result{Err: InterruptedByRestart("b", "older", "a", now)}, now.Add(-time.Hour+time.Minute))
	a.Restore("middle", TaskDone, done, now.Add(-30*time.Minute))
	if got, want := a.Restored(now), []string{"expired", "older"}; !slices.Equal(got, want) {
		t.Fatalf("Restored forgot %q, want %q: the expired one, then the oldest beyond the limit", got, want)
	}
	for key, want := range map[string]TaskStatus{"newest": TaskDone, "middle": TaskDone, "older": TaskUnknown, "expired": TaskUnknown} {
		if st, _ := a.Status(key); st != want {
			t.Errorf("%s: %v, want %v", key, st, want)
		}
	}
	// A status a restore cannot hold is taken for interrupted: the key
	// was accepted, so it is never unknown.
	a.Restore("odd", TaskRunning, Result{}, now)
	if st, r := a.Status("odd"); st != TaskInterrupted || !errors.Is(r.Err, ErrInterrupted) {
		t.Errorf("a key restored as running: %v %v, want interrupted", st, r.Err)
	}
}

// TestStopped: a task that failed while its host was shutting down or
// had lost its lease was stopped by the host: interrupted, saying why;
// one that failed on its own is its result.
func TestStopped(t *testing.T) {
	failed := errors.New("plugin cancelled")
	unvouched := fmt.Errorf("run task: %w", &hearth.PluginError{Agent: "coder", Op: "run task", Err: hearth.ErrUnvouched})
	for _, tc := range []struct {
		shutting, lost bool
		cause          error
		want           string
	}{
		{false, false, failed, ""},
		{true, false, failed, "because it is shutting down"},
		{false, true, failed, "because its cluster lease was lost"},
		{true, true, failed, "because its cluster lease was lost"},
		{false, false, unvouched, "because it did not answer its plugin in time"},
		{true, false, unvouched, "because it did not answer its plugin in time"},
		{false, true, unvouched, "because its cluster lease was lost"},
	} {
		cause := tc.cause
		err := Stopped("b", "key-1", "a", tc.shutting, tc.lost, cause)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v, want nil: the task failed on its own", tc, err)
		case tc.want != "" && (!errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), tc.want) ||
			!strings.Contains(err.Error(), "task key-1 from a") || !strings.Contains(err.Error(), "host b") || !strings.Contains(err.Error(), cause.Error())):
			t.Errorf("%+v: %v, want ErrInterrupted naming host, task, sender, cause and %q", tc, err, tc.want)
		}
	}
	for _, err := range []error{InterruptedByRestart("b", "key-1", "a", t0), Damaged("b", "key-1", errors.New("record version 2"))} {
		if !errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), "task key-1") || !strings.Contains(err.Error(), "will not run here again") {
			t.Errorf("%v: want ErrInterrupted naming the task and promising it will not run again", err)
		}
	}
}

// TestKeptErrorsKeepTheirSentinel: a kept error read back from the store
// wraps the sentinel the task's error wrapped, so the forwarding host and
// the daemon's clients tell a denial from a crash after a restart as
// before; a name this hearth does not know keeps the message.
func TestKeptErrorsKeepTheirSentinel(t *testing.T) {
	for _, err := range []error{
		&hearth.DeniedError{Guard: "budget", Message: "over budget"},
		&hearth.PluginError{Agent: "scripted", Op: "start", Err: hearth.ErrPluginStart},
		&hearth.PluginError{Agent: "scripted", Op: "run task k", Err: hearth.ErrPluginExited},
		context.Canceled,
	} {
		kind := ErrorKind(err)
		if kind == "" {
			t.Fatalf("%v: no kind", err)
		}
		kept := KeptError(err.Error(), kind)
		if kept.Error() != err.Error() {
			t.Errorf("%v: kept as %q", err, kept)
		}
		for _, k := range errorKinds {
			if errors.Is(err, k.err) != errors.Is(kept, k.err) {
				t.Errorf("%v: errors.Is(%v) is %v, kept %v", err, k.err, errors.Is(err, k.err), errors.Is(kept, k.err))
			}
		}
	}
	if kind := ErrorKind(errors.New("the agent said no")); kind != "" {
		t.Errorf("a plain error has kind %q", kind)
	}
	kept := KeptError("from a newer hearth", "a_new_kind")
	if kept.Error() != "from a newer hearth" || errors.Unwrap(kept) != nil {
		t.Errorf("an unknown kind: %v (%v)", kept, errors.Unwrap(kept))
	}
}
