package record

import "github.com/hearth-dev/hearth"

// Info describes the session as the vocabulary does. offline says no
// host runs on the store the record was read from: a session its record
// calls live belonged to a host that stopped without retiring it.
func (r Session) Info(offline bool) hearth.SessionInfo {
	info := hearth.SessionInfo{
		ID: r.ID, Agent: r.Agent, Status: r.Status.String(), Reason: r.Reason,
		Created: r.Created, LastActivity: r.LastActivity,
		Capacity: r.Capacity, PID: r.PID, AgentVersion: r.AgentVersion,
		Tasks: r.Tasks, TasksFailed: r.TasksFailed, ToolUses: r.ToolUses, Unchecked: r.Unchecked, HasState: r.HasState,
		Files: NewestFirst(r.Files), Directories: NewestFirst(r.Dirs), Technologies: NewestFirst(r.Techs),
		External: r.External, Workspace: r.Workspace, Resume: hearth.ResumeCommand(r.External, r.ID),
	}
	if offline && r.Status == SessionLive {
		info.Status, info.Reason, info.PID = "dormant", "the host stopped without retiring it", 0
	}
	return info
}

// NewestFirst reverses a fingerprint list, which records keep least
// recently used first.
func NewestFirst(lru []string) []string {
	out := make([]string, len(lru))
	for i, s := range lru {
		out[len(lru)-1-i] = s
	}
	return out
}

// Info describes the run as the vocabulary does. offline says no host
// runs on the store the record was read from: a run it calls running was
// interrupted.
func (r *Run) Info(offline bool) hearth.RunInfo {
	info := hearth.RunInfo{
		ID: r.ID, Pipeline: r.Pipeline, Status: r.Status, Reason: r.Reason, Stage: r.Stage,
		Created: r.Created, Started: r.Started, Updated: r.Updated, LastActivity: r.LastActivity, Finished: r.Finished,
		Budget: r.Budget, Cost: r.Cost, Tasks: r.TasksTotal, Succeeded: r.TasksSucceeded,
		Failed: r.TasksFailed, Skipped: r.TasksSkipped, Checkpoint: r.Checkpoint,
		ForkedFrom: r.ForkedFrom, ForkedAt: r.ForkedAt, Abandoned: r.Abandoned, TraceID: r.TraceID,
	}
	if info.Tasks > 0 {
		info.Progress = float64(info.Succeeded) / float64(info.Tasks)
	}
	if offline && info.Status == hearth.RunRunning {
		// No host runs it, so the reason it was started for is stale:
		// its host stopped without recording how it ended.
		info.Interrupted = true
		info.Reason = InterruptedReason(r.ID)
	}
	return info
}

// InterruptedReason is the reason given for run id when its record says
// running and no host runs it: its host was killed or crashed, or could
// not record the run's pause because the store refused that write too (a
// disk below even the status reserve, a store whose writes fail).
func InterruptedReason(id string) string {
	return "interrupted: its host stopped without recording how the run ended (it was killed or crashed, or could not write to the data directory); resume it with hearth runs resume " + id
}
