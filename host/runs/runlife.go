package runs

import (
	"github.com/hearth-dev/hearth"
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
var runTransitions = map[hearth.RunStatus][]hearth.RunStatus{
	hearth.RunCreated:   {hearth.RunRunning, hearth.RunCancelled, hearth.RunPaused},
	hearth.RunRunning:   {hearth.RunPaused, hearth.RunCompleted, hearth.RunFailed, hearth.RunCancelled},
	hearth.RunPaused:    {hearth.RunRunning, hearth.RunCancelled},
	hearth.RunFailed:    {hearth.RunRunning, hearth.RunCancelled},
	hearth.RunCompleted: {hearth.RunRunning},
	hearth.RunCancelled: nil,
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
var taskTransitions = map[hearth.TaskStatus][]hearth.TaskStatus{
	hearth.TaskPending:   {hearth.TaskRunning, hearth.TaskSkipped},
	hearth.TaskRunning:   {hearth.TaskSucceeded, hearth.TaskFailed, hearth.TaskRetrying, hearth.TaskPending},
	hearth.TaskRetrying:  {hearth.TaskRunning, hearth.TaskPending, hearth.TaskSkipped},
	hearth.TaskFailed:    {hearth.TaskPending},
	hearth.TaskSucceeded: {hearth.TaskPending},
	hearth.TaskSkipped:   {hearth.TaskPending},
}

func canRun(from, to hearth.RunStatus) bool {
	for _, s := range runTransitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

func canTask(from, to hearth.TaskStatus) bool {
	for _, s := range taskTransitions[from] {
		if s == to {
			return true
		}
	}
	return false
}
