package mcp

import (
	"fmt"
	"strings"
	"time"

	"github.com/hearth-dev/hearth"
)

// The renderings are the text a model reads in a tool's result; the same
// data comes as structured content beside it. Each leads with what the
// answer means.

func renderOutcome(o *hearth.Outcome) string {
	var b strings.Builder
	d := o.Decision
	fmt.Fprintf(&b, "task %s ran on session %s of agent %s in %s: %s (%s, score %.2f; threshold %.2f).\n",
		o.TaskID, o.Session, o.Agent, o.Duration.Round(time.Millisecond), d.Reason, d.Action, d.Score, d.Threshold)
	if d.Host != "" {
		fmt.Fprintf(&b, "It ran on host %s.\n", d.Host)
	}
	if o.Gate != nil {
		fmt.Fprintf(&b, "Quality gate %s asks: %s\n", o.Gate.Guard, o.Gate.Feedback)
	}
	b.WriteString("\n")
	b.WriteString(o.Result.Output)
	a := o.Artifact
	if a.Empty() {
		return b.String()
	}
	b.WriteString("\n\nlearned:\n")
	for _, g := range []struct {
		label string
		items []string
	}{{"decision", a.KeyDecisions}, {"modified", a.ModifiedFiles}, {"pattern", a.NewPatterns}, {"gotcha", a.PotentialGotchas}} {
		for _, it := range g.items {
			fmt.Fprintf(&b, "- %s: %s\n", g.label, strings.TrimSpace(it))
		}
	}
	return b.String()
}

func renderDecision(d hearth.Decision) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s (threshold %.2f)\n", d.Action, d.Reason, d.Threshold)
	if d.Resume != "" {
		fmt.Fprintf(&b, "resume it with: %s", d.Resume)
		if d.Workspace != "" {
			fmt.Fprintf(&b, " in %s", d.Workspace)
		}
		b.WriteString("\n")
	}
	for _, c := range d.Candidates {
		fmt.Fprintf(&b, "- %s: total %.2f (", c.Session, c.Total)
		for _, f := range c.Factors {
			fmt.Fprintf(&b, "%s %.2f, ", f.Name, f.Score)
		}
		fmt.Fprintf(&b, "%d/%d busy)", c.Load, c.Capacity)
		if c.Dormant {
			b.WriteString(" dormant")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func renderSessions(all []hearth.SessionInfo) string {
	if len(all) == 0 {
		return "no sessions yet: submit_task starts one"
	}
	var b strings.Builder
	for _, s := range all {
		fmt.Fprintf(&b, "%s agent %s, %s, %d/%d busy, %d tasks; knows %s\n", s.ID, s.Agent, s.Status, s.Load, s.Capacity, s.Tasks, knows(s))
	}
	return b.String()
}

// knows lists what a session's fingerprint holds, directories first.
func knows(s hearth.SessionInfo) string {
	var parts []string
	if len(s.Directories) > 0 {
		parts = append(parts, "directories "+list(s.Directories, 8))
	}
	if len(s.Files) > 0 {
		parts = append(parts, "files "+list(s.Files, 8))
	}
	if len(s.Technologies) > 0 {
		parts = append(parts, "technologies "+list(s.Technologies, 8))
	}
	if len(parts) == 0 {
		return "nothing yet"
	}
	return strings.Join(parts, "; ")
}

// list joins the first n of items, and says how many more there are.
func list(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}

func renderSession(d *hearth.SessionDetail) string {
	var b strings.Builder
	b.WriteString(renderSessions([]hearth.SessionInfo{d.SessionInfo}))
	if d.Reason != "" {
		fmt.Fprintf(&b, "status: %s\n", d.Reason)
	}
	if len(d.Events) > 0 {
		b.WriteString("latest events:\n")
		for _, e := range d.Events {
			fmt.Fprintf(&b, "- %s %s %s\n", e.Time.Format(time.RFC3339), e.Kind, eventText(e))
		}
	}
	return b.String()
}

// eventText is the rest of an event's line.
func eventText(e hearth.Event) string {
	if l := taskEventLine(e); l != "" && e.Kind == hearth.EventToolUsed {
		return l
	}
	s := e.Message
	if e.Task != "" {
		s = strings.TrimSpace("task " + e.Task + " " + s)
	}
	if e.Err != "" {
		s += ": " + e.Err
	}
	return s
}

func renderRuns(all []hearth.RunInfo) string {
	if len(all) == 0 {
		return "no runs yet: start_run starts one"
	}
	var b strings.Builder
	for _, r := range all {
		b.WriteString(renderRunInfo(r))
	}
	return b.String()
}

func renderRunInfo(r hearth.RunInfo) string {
	s := fmt.Sprintf("run %s of pipeline %s: %s, %d/%d tasks done", r.ID, r.Pipeline, r.Status, r.Succeeded, r.Tasks)
	if r.Failed > 0 {
		s += fmt.Sprintf(", %d failed", r.Failed)
	}
	if r.Cost > 0 {
		s += fmt.Sprintf(", cost %.4g", r.Cost)
	}
	if r.Reason != "" {
		s += " (" + r.Reason + ")"
	}
	return s + "\n"
}

func renderRun(d hearth.RunDetail) string {
	var b strings.Builder
	b.WriteString(renderRunInfo(d.RunInfo))
	if d.Description != "" {
		b.WriteString(d.Description + "\n")
	}
	for _, t := range d.TaskList {
		fmt.Fprintf(&b, "- task %s (agent %s): %s", t.Name, t.Agent, t.Status)
		if t.Error != "" {
			b.WriteString(": " + t.Error)
		}
		b.WriteString("\n")
	}
	if len(d.State) > 0 {
		fmt.Fprintf(&b, "state: %s\n", d.State)
	}
	return b.String()
}
