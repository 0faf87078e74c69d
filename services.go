package hearth

import (
	"context"
	"io"

	"github.com/hearth-dev/hearth/sdk"
)

// The services are what orchestrators, the CLI and the dashboard ask of
// hearth. Two implementations keep them all: the in-process engine
// (package host/engine) and the daemon's client (package
// host/api/client); the store (package host/store) keeps the readers for
// a data directory no host serves. Code written against these interfaces
// runs the same against any of them, and the daemon (package host/api)
// serves whatever implements them: it never sees the engine's type.

// Placer decides where tasks run, and runs them.
type Placer interface {
	// Place says where a task for agent with hints would run now, and
	// why, without running anything: the decision Submit would start
	// from, made by the same policy. Place knows only the agent and the
	// hints: a session_reuse guard whose condition reads the task's name,
	// prompt or metadata sees them empty here, so Submit of a real task
	// can veto a session Place proposed. Guards that read only the
	// session and the hints decide the same in both.
	Place(ctx context.Context, agent string, hints sdk.Hints) (Decision, error)
	// Submit places t on a session of its agent, runs it and returns
	// what it came to. It blocks until the task is done or ctx is.
	Submit(ctx context.Context, t Task) (*Outcome, error)
}

// SessionReader reads sessions, live and dormant.
type SessionReader interface {
	// Sessions lists the sessions, most recently active first.
	Sessions(ctx context.Context) ([]SessionInfo, error)
	// Session describes one session with its latest limit events and the
	// decisions that involved it.
	Session(ctx context.Context, id string, limit int) (*SessionDetail, error)
}

// RunReader reads runs. A run ID may be shortened to any prefix no other
// run shares.
type RunReader interface {
	// Runs lists the runs, most recently active first.
	Runs(ctx context.Context) ([]RunInfo, error)
	// Run describes one run with its tasks, files, state and history.
	Run(ctx context.Context, id string) (RunDetail, error)
	// RunOutputs lists every output version of a run's tasks, current
	// and archived, by task in graph order, then version.
	RunOutputs(ctx context.Context, id string) ([]TaskOutput, error)
	// RunCheckpoints lists a run's checkpoints, oldest first.
	RunCheckpoints(ctx context.Context, id string) ([]CheckpointInfo, error)
	// RunEvents returns the last limit events of a run (0: all), oldest
	// first. A deleted run still has its events, ending with its
	// deletion.
	RunEvents(ctx context.Context, id string, limit int) ([]Event, error)
}

// Reader reads sessions and runs.
type Reader interface {
	SessionReader
	RunReader
}

// RunSpec says what a new run executes.
type RunSpec struct {
	// Pipeline is the pipeline to run. When nil, the pipeline named
	// PipelineName (or the only one) is read from the config file
	// RunOptions.Config: the only form a daemon takes, since it reads
	// the file itself.
	Pipeline     *Pipeline
	PipelineName string
	RunOptions
}

// RunController starts and steers runs. Each method that starts a run
// returns a RunWatch subscribed to its events before it started.
type RunController interface {
	StartRun(ctx context.Context, spec RunSpec) (RunWatch, error)
	// ResumeRun continues a paused, failed or interrupted run from where
	// its records stand.
	ResumeRun(ctx context.Context, id string, opts ResumeOptions) (RunWatch, error)
	// ForkRun starts a new run from checkpoint at of run id.
	ForkRun(ctx context.Context, id string, at uint64, opts ForkOptions) (RunWatch, error)
	// RevisitRun runs a task of a stopped run again and treats what came
	// after it by impact.
	RevisitRun(ctx context.Context, id, task string, impact Impact, opts RevisitOptions) (RunWatch, error)
	// PauseRun pauses a run and returns it as it stopped.
	PauseRun(ctx context.Context, id string) (RunInfo, error)
	// CancelRun cancels a run for good and returns it as it stopped.
	CancelRun(ctx context.Context, id string) (RunInfo, error)
	// DeleteRun deletes a stopped run and returns its full ID.
	DeleteRun(ctx context.Context, id string) (string, error)
	// WatchRun follows a run that is running until it stops; for a run
	// that is not running, the watch is done at once, with the run as
	// it is.
	WatchRun(ctx context.Context, id string) (RunWatch, error)
}

// RunWatch follows one run: its events, subscribed to before it started,
// and how it stopped. Done is closed once it stopped and its last events
// are on Events. Close it when done.
type RunWatch interface {
	ID() string
	Events() <-chan Event
	Done() <-chan struct{}
	// Wait returns the run as it stopped. The error is nil when the run
	// completed, a *RunError when it failed, was paused or cancelled,
	// and ctx's error when ctx ended first (the run goes on).
	Wait(ctx context.Context) (RunInfo, error)
	Close()
}

// Service is placing, reading and running: what the CLI and
// orchestrators work with.
type Service interface {
	Placer
	Reader
	RunController
}

// EventSource streams a host's events as they happen.
type EventSource interface {
	// Subscribe returns a subscription to the events f matches, from now
	// until it is closed or ctx ends. Close it when done.
	Subscribe(ctx context.Context, f EventFilter) (Subscription, error)
}

// Subscription receives the events published after it was made. The
// host never waits for a subscriber: one that falls behind misses
// events, and Dropped says how many.
type Subscription interface {
	// Events delivers the events in the order they were published. It is
	// closed when the subscription ends: closed, its context ended, or
	// (through a daemon) the stream broke.
	Events() <-chan Event
	// Dropped is how many matching events the subscriber missed because
	// its buffer was full. Through a daemon it is 0: the daemon drops for
	// a slow client on its side, and logs how many.
	Dropped() uint64
	// Err says why the subscription ended, once Events is closed: nil when
	// it was closed or its context ended.
	Err() error
	// Close ends the subscription and closes Events.
	Close()
}

// StatusReader says what a host is and how it is doing.
type StatusReader interface {
	Status(ctx context.Context) (HostStatus, error)
}

// Admin is what an operator does to a host while it serves.
type Admin interface {
	// Backup writes a consistent backup of the host's data directory to
	// w (the tar `hearth restore` reads), taken while it serves.
	Backup(ctx context.Context, w io.Writer) (BackupStats, error)
}
