package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/sdk"
)

// The methods below read sessions and runs as the vocabulary describes
// them: the store is a hearth.Reader. Read this way, the store is offline:
// no host runs on it (a store is open to one process at a time), so a
// session its record calls live belonged to a host that stopped without
// retiring it (kill -9) and is shown dormant, as the next host will find
// it; a run recorded as running is shown interrupted, and the next host
// pauses it. The engine reads through the same functions and puts what
// it knows of its live sessions and runs over them.

var _ hearth.Reader = (*Store)(nil)

// SortSessions orders sessions most recently active first.
func SortSessions(s []hearth.SessionInfo) {
	sort.SliceStable(s, func(i, j int) bool {
		if !s[i].LastActivity.Equal(s[j].LastActivity) {
			return s[i].LastActivity.After(s[j].LastActivity)
		}
		return s[i].ID < s[j].ID
	})
}

// Sessions lists every session, most recently active first.
func (s *Store) Sessions(context.Context) ([]hearth.SessionInfo, error) {
	recs, err := s.SessionRecords()
	if err != nil {
		return nil, err
	}
	out := make([]hearth.SessionInfo, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.Info(true))
	}
	SortSessions(out)
	return out, nil
}

// Session describes one session with its latest limit events and the
// decisions that involved it.
func (s *Store) Session(_ context.Context, id string, limit int) (*hearth.SessionDetail, error) {
	r, err := s.SessionRecord(id)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("%w %q in %s; list them with hearth sessions list", hearth.ErrUnknownSession, id, s.Dir())
	}
	if err != nil {
		return nil, err
	}
	d := &hearth.SessionDetail{SessionInfo: r.Info(true), Events: []hearth.Event{}, Decisions: []hearth.Decision{}}
	evs, err := s.RecentEvents(id, limit)
	if err != nil {
		return nil, err
	}
	d.Events = append(d.Events, evs...)
	decs, err := s.DecisionsFor(id, limit)
	if err != nil {
		return nil, err
	}
	for _, ev := range decs {
		d.Decisions = append(d.Decisions, *ev.Decision)
	}
	return d, nil
}

// SortRuns orders runs most recently active first.
func SortRuns(rs []hearth.RunInfo) {
	sort.SliceStable(rs, func(i, j int) bool {
		if !rs[i].LastActivity.Equal(rs[j].LastActivity) {
			return rs[i].LastActivity.After(rs[j].LastActivity)
		}
		return rs[i].ID < rs[j].ID
	})
}

// Runs lists the runs, most recently active first.
func (s *Store) Runs(context.Context) ([]hearth.RunInfo, error) {
	heads, err := s.RunRecords()
	if err != nil {
		return nil, err
	}
	out := make([]hearth.RunInfo, len(heads))
	for i, h := range heads {
		out[i] = h.Info(true)
	}
	SortRuns(out)
	return out, nil
}

// ResolveRunID finds the run an ID, or a prefix of one that no other run
// shares, names.
func (s *Store) ResolveRunID(id string) (string, error) {
	if strings.TrimSpace(id) == "" {
		return "", fmt.Errorf("%w: give a run ID (hearth runs list shows them)", hearth.ErrUnknownRun)
	}
	heads, err := s.RunRecords()
	if err != nil {
		return "", err
	}
	var matches []string
	for _, h := range heads {
		if h.ID == id {
			return id, nil
		}
		if strings.HasPrefix(h.ID, id) {
			matches = append(matches, h.ID)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return "", fmt.Errorf("%w %q (hearth runs list shows the runs)", hearth.ErrUnknownRun, id)
	}
	return "", fmt.Errorf("%q names %d runs: %s; give more of the ID", id, len(matches), strings.Join(matches, ", "))
}

// Run describes one run with its tasks, files, state and history.
func (s *Store) Run(_ context.Context, id string) (hearth.RunDetail, error) {
	return s.RunDetail(id, true)
}

// RunDetail is Run; offline says no host runs on the store.
func (s *Store) RunDetail(id string, offline bool) (hearth.RunDetail, error) {
	id, err := s.ResolveRunID(id)
	if err != nil {
		return hearth.RunDetail{}, err
	}
	head, err := s.RunRecord(id)
	if err != nil {
		return hearth.RunDetail{}, notFoundRun(id, err)
	}
	g, err := s.RunGraph(id)
	if err != nil {
		return hearth.RunDetail{}, err
	}
	recs, err := s.RunTasks(id)
	if err != nil {
		return hearth.RunDetail{}, err
	}
	d := hearth.RunDetail{
		RunInfo: head.Info(offline), Config: g.Config, Description: g.Pipeline.Description,
		Parallel: g.Pipeline.Parallel, State: head.State,
	}
	for _, t := range g.Pipeline.Tasks {
		rt := recs[t.Name]
		if rt == nil {
			rt = &record.Task{Name: t.Name, Status: hearth.TaskPending}
		}
		d.TaskList = append(d.TaskList, hearth.RunTaskInfo{
			Name: t.Name, Agent: t.Agent, Stage: t.Stage, DependsOn: t.DependsOn,
			Status: rt.Status, Round: rt.Round, Attempt: rt.Attempts, Failures: rt.Failures,
			Error: rt.Error, Errors: rt.Errors, Cost: rt.Cost, Session: rt.Session,
			Started: rt.Started, Finished: rt.Finished, RetryAt: rt.RetryAt,
			Version: rt.Version, NeedsReview: rt.NeedsReview, Feedback: rt.Feedback, Reason: rt.Reason, TraceID: rt.TraceID,
		})
	}
	d.Files = s.Files(head.Files)
	d.Revisions = head.Revisions
	if len(head.GateLoops) > 0 {
		d.GateLoops = head.GateLoops
	}
	if len(head.Chunks) > 0 {
		d.Chunks = head.Chunks
	}
	return d, nil
}

// Files describes a run's files as an agent sees them: where to read
// each.
func (s *Store) Files(files []record.File) []sdk.File {
	var out []sdk.File
	for _, f := range files {
		out = append(out, sdk.File{Name: f.Name, Path: s.BlobPath(f.SHA256), SHA256: f.SHA256, Size: f.Size})
	}
	return out
}

func notFoundRun(id string, err error) error {
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w %q", hearth.ErrUnknownRun, id)
	}
	return err
}

// RunOutputs reads every output version of a run's tasks, current and
// archived, by task in graph order, then version.
func (s *Store) RunOutputs(_ context.Context, id string) ([]hearth.TaskOutput, error) {
	id, err := s.ResolveRunID(id)
	if err != nil {
		return nil, err
	}
	g, err := s.RunGraph(id)
	if err != nil {
		return nil, notFoundRun(id, err)
	}
	recs, err := s.RunTasks(id)
	if err != nil {
		return nil, err
	}
	outs, err := s.TaskOutputs(id)
	if err != nil {
		return nil, err
	}
	order := make(map[string]int, len(g.Pipeline.Tasks))
	for i, t := range g.Pipeline.Tasks {
		order[t.Name] = i
	}
	sort.SliceStable(outs, func(i, j int) bool {
		if a, b := order[outs[i].Task], order[outs[j].Task]; a != b {
			return a < b
		}
		return outs[i].Version < outs[j].Version
	})
	res := make([]hearth.TaskOutput, len(outs))
	for i, o := range outs {
		cur := recs[o.Task] != nil && recs[o.Task].Version == o.Version
		res[i] = hearth.TaskOutput{
			Task: o.Task, Version: o.Version, Current: cur, Output: o.Output, Metrics: o.Metrics,
			Cost: o.Cost, Session: o.Session, Round: o.Round, Attempt: o.Attempt,
			Time: o.Time, Duration: o.Duration, Action: o.Action, Score: o.Score, Artifact: o.Artifact,
		}
	}
	return res, nil
}

// RunCheckpoints reads a run's checkpoints, oldest first.
func (s *Store) RunCheckpoints(_ context.Context, id string) ([]hearth.CheckpointInfo, error) {
	id, err := s.ResolveRunID(id)
	if err != nil {
		return nil, err
	}
	cps, err := s.Checkpoints(id)
	if err != nil {
		return nil, err
	}
	out := make([]hearth.CheckpointInfo, len(cps))
	for i, c := range cps {
		out[i] = hearth.CheckpointInfo{Seq: c.Seq, Parent: c.Parent, Label: c.Label, Task: c.Task, Time: c.Time}
		if r := c.Run; r != nil {
			out[i].Status, out[i].Stage, out[i].Cost, out[i].Succeeded = r.Status, r.Stage, r.Cost, r.TasksSucceeded
		}
	}
	return out, nil
}

// RunEvents reads the last limit events of a run (0: all), oldest first.
// A deleted run still has its events, ending with its deletion.
func (s *Store) RunEvents(_ context.Context, id string, limit int) ([]hearth.Event, error) {
	if rid, err := s.ResolveRunID(id); err == nil {
		id = rid
	}
	evs, err := s.RecentEvents(id, limit)
	if err != nil {
		return nil, err
	}
	if len(evs) == 0 {
		return nil, fmt.Errorf("%w %q (hearth runs list shows the runs)", hearth.ErrUnknownRun, id)
	}
	return evs, nil
}
