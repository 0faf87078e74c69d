package host

import (
	"errors"
	"fmt"

	"github.com/hearth-dev/hearth/host/store/storepb"
)

// RunStatus is where a run stands.
type RunStatus string

// Run statuses. The allowed transitions are in runTransitions.
const (
	RunCreated   RunStatus = "created"
	RunRunning   RunStatus = "running"
	RunPaused    RunStatus = "paused"
	RunCompleted RunStatus = "completed"
	RunFailed    RunStatus = "failed"
	RunCancelled RunStatus = "cancelled"
)

// TaskStatus is where one task of a run stands.
type TaskStatus string

// Task statuses. The allowed transitions are in taskTransitions.
const (
	TaskPending   TaskStatus = "pending"
	TaskRunning   TaskStatus = "running"
	TaskSucceeded TaskStatus = "succeeded"
	TaskFailed    TaskStatus = "failed"
	TaskRetrying  TaskStatus = "retrying"
	TaskSkipped   TaskStatus = "skipped"
)

// runTransitions lists, for each run status, the statuses it may become.
//
//	created   -> running (started), cancelled
//	running   -> paused (asked, escalated, host stopped, idle), completed,
//	             failed (escalated), cancelled
//	paused    -> running (resumed), cancelled
//	failed    -> running (resumed once the cause is fixed), cancelled
//	completed -> running (a task revisited)
//	cancelled -> nothing: cancelling is final
var runTransitions = map[RunStatus][]RunStatus{
	RunCreated:   {RunRunning, RunCancelled, RunPaused},
	RunRunning:   {RunPaused, RunCompleted, RunFailed, RunCancelled},
	RunPaused:    {RunRunning, RunCancelled},
	RunFailed:    {RunRunning, RunCancelled},
	RunCompleted: {RunRunning},
	RunCancelled: nil,
}

// taskTransitions lists, for each task status, the statuses it may become.
//
//	pending   -> running, skipped (its run was cancelled)
//	running   -> succeeded, failed (for good), retrying (will try again),
//	             pending (interrupted: paused, cancelled, host stopped)
//	retrying  -> running, pending (its run was paused or resumed),
//	             skipped
//	failed    -> pending (its run was resumed)
//	succeeded -> pending (sent back by a quality gate, or revisited)
//	skipped   -> pending (its run was resumed)
var taskTransitions = map[TaskStatus][]TaskStatus{
	TaskPending:   {TaskRunning, TaskSkipped},
	TaskRunning:   {TaskSucceeded, TaskFailed, TaskRetrying, TaskPending},
	TaskRetrying:  {TaskRunning, TaskPending, TaskSkipped},
	TaskFailed:    {TaskPending},
	TaskSucceeded: {TaskPending},
	TaskSkipped:   {TaskPending},
}

// ErrIllegalTransition is wrapped by the error of a status change the
// lifecycle does not allow.
var ErrIllegalTransition = errors.New("illegal transition")

// TransitionError is a status change the lifecycle does not allow, such
// as resuming a cancelled run.
type TransitionError struct {
	Run  string
	Task string // empty for the run's own status
	From string
	To   string
}

func (e *TransitionError) Error() string {
	if e.Task != "" {
		return fmt.Sprintf("run %s: task %s cannot go from %s to %s", e.Run, e.Task, e.From, e.To)
	}
	return fmt.Sprintf("run %s is %s; it cannot become %s", e.Run, e.From, e.To)
}

func (e *TransitionError) Unwrap() error { return ErrIllegalTransition }

func canRun(from, to RunStatus) bool {
	for _, s := range runTransitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

func canTask(from, to TaskStatus) bool {
	for _, s := range taskTransitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

var runStatusNames = map[storepb.RunStatus]RunStatus{
	storepb.RunStatus_RUN_CREATED:   RunCreated,
	storepb.RunStatus_RUN_RUNNING:   RunRunning,
	storepb.RunStatus_RUN_PAUSED:    RunPaused,
	storepb.RunStatus_RUN_COMPLETED: RunCompleted,
	storepb.RunStatus_RUN_FAILED:    RunFailed,
	storepb.RunStatus_RUN_CANCELLED: RunCancelled,
}

var taskStatusNames = map[storepb.TaskStatus]TaskStatus{
	storepb.TaskStatus_TASK_PENDING:   TaskPending,
	storepb.TaskStatus_TASK_RUNNING:   TaskRunning,
	storepb.TaskStatus_TASK_SUCCEEDED: TaskSucceeded,
	storepb.TaskStatus_TASK_FAILED:    TaskFailed,
	storepb.TaskStatus_TASK_RETRYING:  TaskRetrying,
	storepb.TaskStatus_TASK_SKIPPED:   TaskSkipped,
}

func runStatusOf(s storepb.RunStatus) RunStatus { return runStatusNames[s] }

func taskStatusOf(s storepb.TaskStatus) TaskStatus { return taskStatusNames[s] }

func runStatusRecord(s RunStatus) storepb.RunStatus {
	for k, v := range runStatusNames {
		if v == s {
			return k
		}
	}
	return storepb.RunStatus_RUN_STATUS_UNSPECIFIED
}

func taskStatusRecord(s TaskStatus) storepb.TaskStatus {
	for k, v := range taskStatusNames {
		if v == s {
			return k
		}
	}
	return storepb.TaskStatus_TASK_STATUS_UNSPECIFIED
}

// terminal reports whether a task status ends the task's part in its
// run, as things stand.
func (s TaskStatus) terminal() bool {
	return s == TaskSucceeded || s == TaskFailed || s == TaskSkipped
}

// Finished reports whether a run status is one the run stays in until a
// person acts: completed, failed or cancelled.
func (s RunStatus) Finished() bool {
	return s == RunCompleted || s == RunFailed || s == RunCancelled
}
