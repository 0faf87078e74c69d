package guard

import "github.com/hearth-dev/hearth"

// TaskOf is a task as guards see it.
func TaskOf(t hearth.Task) Task {
	return Task{
		ID: t.ID, Name: t.Name, Agent: t.Agent, Prompt: t.Prompt,
		Files: t.Hints.Files, Directories: t.Hints.Directories, Technologies: t.Hints.Technologies,
		Attempt: max(t.Attempt, 1), Metadata: t.Metadata,
	}
}

// Event is the event of a guard that fired at hook, on a task of agent
// (and session, when there is one).
func Event(hook Hook, v *Verdict, agent, session, task string) hearth.Event {
	e := hearth.Event{Kind: hearth.EventGuardFired, Hook: string(hook), Guard: v.Guard, Action: string(v.Action),
		Agent: agent, Session: session, Task: task, Message: v.Message}
	if v.Err != nil {
		e.Err = v.Err.Error()
	}
	return e
}
