package runs

import (
	"github.com/hearth-dev/hearth/host"
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
var runTransitions = map[host.RunStatus][]host.RunStatus{
	host.RunCreated:   {host.RunRunning, host.RunCancelled, host.RunPaused},
	host.RunRunning:   {host.RunPaused, host.RunCompleted, host.RunFailed, host.RunCancelled},
	host.RunPaused:    {host.RunRunning, host.RunCancelled},
	host.RunFailed:    {host.RunRunning, host.RunCancelled},
	host.RunCompleted: {host.RunRunning},
	host.RunCancelled: nil,
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
var taskTransitions = map[host.TaskStatus][]host.TaskStatus{
	host.TaskPending:   {host.TaskRunning, host.TaskSkipped},
	host.TaskRunning:   {host.TaskSucceeded, host.TaskFailed, host.TaskRetrying, host.TaskPending},
	host.TaskRetrying:  {host.TaskRunning, host.TaskPending, host.TaskSkipped},
	host.TaskFailed:    {host.TaskPending},
	host.TaskSucceeded: {host.TaskPending},
	host.TaskSkipped:   {host.TaskPending},
}

func canRun(from, to host.RunStatus) bool {
	for _, s := range runTransitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

func canTask(from, to host.TaskStatus) bool {
	for _, s := range taskTransitions[from] {
		if s == to {
			return true
		}
	}
	return false
}
