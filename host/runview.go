package host

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/host/store/storepb"
	"github.com/hearth-dev/hearth/sdk"
)

// The functions below read runs from a store directly, for a process that
// runs no host on it (the CLI without a daemon). The store is open to one
// process at a time, so a run recorded as running belongs to a host that
// stopped without pausing it: it is shown as interrupted, and the next
// host to open the store pauses it.

func unixTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// runInfoOf describes a run's head. offline says no host executes it.
func runInfoOf(r *storepb.Run, offline bool) RunInfo {
	info := RunInfo{
		ID: r.GetId(), Pipeline: r.GetPipeline(), Status: runStatusOf(r.GetStatus()), Reason: r.GetReason(), Stage: r.GetStage(),
		Created: unixTime(r.GetCreatedUnixNano()), Started: unixTime(r.GetStartedUnixNano()), Updated: unixTime(r.GetUpdatedUnixNano()),
		LastActivity: unixTime(r.GetLastActivityUnixNano()), Finished: unixTime(r.GetFinishedUnixNano()),
		Budget: r.GetBudget(), Cost: r.GetCost(), Tasks: int(r.GetTasksTotal()), Succeeded: int(r.GetTasksSucceeded()),
		Failed: int(r.GetTasksFailed()), Skipped: int(r.GetTasksSkipped()), Checkpoint: r.GetCheckpoint(),
		ForkedFrom: r.GetForkedFrom(), ForkedAt: r.GetForkedAt(), Abandoned: r.GetAbandoned(),
	}
	if info.Tasks > 0 {
		info.Progress = float64(info.Succeeded) / float64(info.Tasks)
	}
	if offline && info.Status == RunRunning {
		info.Interrupted = true
	}
	return info
}

// ListRuns lists the runs in a store, most recently active first.
func ListRuns(st *store.Store) ([]RunInfo, error) {
	heads, err := st.Runs()
	if err != nil {
		return nil, err
	}
	out := make([]RunInfo, len(heads))
	for i, h := range heads {
		out[i] = runInfoOf(h, true)
	}
	sortRuns(out)
	return out, nil
}

func sortRuns(rs []RunInfo) {
	sort.SliceStable(rs, func(i, j int) bool {
		if !rs[i].LastActivity.Equal(rs[j].LastActivity) {
			return rs[i].LastActivity.After(rs[j].LastActivity)
		}
		return rs[i].ID < rs[j].ID
	})
}

// Runs lists the runs of the host's store, most recently active first.
func (h *Host) Runs() ([]RunInfo, error) {
	heads, err := h.store.Runs()
	if err != nil {
		return nil, err
	}
	out := make([]RunInfo, len(heads))
	for i, head := range heads {
		out[i] = runInfoOf(head, false)
	}
	sortRuns(out)
	return out, nil
}

// ResolveRunID finds the run an ID, or a prefix of one that no other run
// shares, names.
func ResolveRunID(st *store.Store, id string) (string, error) {
	if strings.TrimSpace(id) == "" {
		return "", fmt.Errorf("%w: give a run ID (hearth runs list shows them)", ErrUnknownRun)
	}
	heads, err := st.Runs()
	if err != nil {
		return "", err
	}
	var matches []string
	for _, h := range heads {
		if h.GetId() == id {
			return id, nil
		}
		if strings.HasPrefix(h.GetId(), id) {
			matches = append(matches, h.GetId())
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return "", fmt.Errorf("%w %q (hearth runs list shows the runs)", ErrUnknownRun, id)
	}
	return "", fmt.Errorf("%q names %d runs: %s; give more of the ID", id, len(matches), strings.Join(matches, ", "))
}

// ShowRun reads one run, with its tasks, files and state, from a store.
func ShowRun(st *store.Store, id string) (RunDetail, error) {
	return showRun(st, id, true)
}

// Run describes one run of the host's store.
func (h *Host) Run(id string) (RunDetail, error) {
	return showRun(h.store, id, false)
}

func showRun(st *store.Store, id string, offline bool) (RunDetail, error) {
	id, err := ResolveRunID(st, id)
	if err != nil {
		return RunDetail{}, err
	}
	head, err := st.Run(id)
	if err != nil {
		return RunDetail{}, notFoundRun(id, err)
	}
	g, err := st.RunGraph(id)
	if err != nil {
		return RunDetail{}, err
	}
	recs, err := st.RunTasks(id)
	if err != nil {
		return RunDetail{}, err
	}
	d := RunDetail{
		RunInfo: runInfoOf(head, offline), Config: g.GetConfig(), Description: g.GetDescription(),
		Parallel: int(g.GetParallel()), State: head.GetStateJson(),
	}
	for _, t := range g.GetTasks() {
		rt := recs[t.GetName()]
		if rt == nil {
			rt = &storepb.RunTask{Name: t.GetName(), Status: storepb.TaskStatus_TASK_PENDING}
		}
		d.TaskList = append(d.TaskList, RunTaskInfo{
			Name: t.GetName(), Agent: t.GetAgent(), Stage: t.GetStage(), DependsOn: t.GetDependsOn(),
			Status: taskStatusOf(rt.GetStatus()), Round: int(rt.GetRound()), Attempt: int(rt.GetAttempts()), Failures: int(rt.GetFailures()),
			Error: rt.GetError(), Errors: rt.GetErrors(), Cost: rt.GetCost(), Session: rt.GetSession(),
			Started: unixTime(rt.GetStartedUnixNano()), Finished: unixTime(rt.GetFinishedUnixNano()), RetryAt: unixTime(rt.GetRetryAtUnixNano()),
			Version: int(rt.GetVersion()), NeedsReview: rt.GetNeedsReview(), Feedback: rt.GetFeedback(), Reason: rt.GetReason(),
		})
	}
	for _, f := range head.GetFiles() {
		d.Files = append(d.Files, sdk.File{Name: f.GetName(), Path: st.BlobPath(f.GetSha256()), SHA256: f.GetSha256(), Size: f.GetSize()})
	}
	for _, rv := range head.GetRevisions() {
		d.Revisions = append(d.Revisions, Revision{Task: rv.GetTask(), Impact: Impact(rv.GetImpact()), Reason: rv.GetReason(),
			Archived: rv.GetArchived(), Review: rv.GetReview(), Reset: rv.GetResetTasks(), Time: unixTime(rv.GetUnixNano())})
	}
	if len(head.GetGateLoops()) > 0 {
		d.GateLoops = make(map[string]int)
		for k, v := range head.GetGateLoops() {
			d.GateLoops[k] = int(v)
		}
	}
	if len(head.GetChunks()) > 0 {
		d.Chunks = make(map[string][]int)
		for f, cs := range head.GetChunks() {
			for _, c := range cs.GetDone() {
				d.Chunks[f] = append(d.Chunks[f], int(c))
			}
		}
	}
	return d, nil
}

func notFoundRun(id string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w %q", ErrUnknownRun, id)
	}
	return err
}

// RunOutputs reads every output version of a run's tasks, current and
// archived, by task in graph order, then version.
func RunOutputs(st *store.Store, id string) ([]TaskOutput, error) {
	id, err := ResolveRunID(st, id)
	if err != nil {
		return nil, err
	}
	g, err := st.RunGraph(id)
	if err != nil {
		return nil, notFoundRun(id, err)
	}
	recs, err := st.RunTasks(id)
	if err != nil {
		return nil, err
	}
	outs, err := st.TaskOutputs(id)
	if err != nil {
		return nil, err
	}
	order := make(map[string]int, len(g.GetTasks()))
	for i, t := range g.GetTasks() {
		order[t.GetName()] = i
	}
	sort.SliceStable(outs, func(i, j int) bool {
		if a, b := order[outs[i].GetTask()], order[outs[j].GetTask()]; a != b {
			return a < b
		}
		return outs[i].GetVersion() < outs[j].GetVersion()
	})
	res := make([]TaskOutput, len(outs))
	for i, o := range outs {
		cur := recs[o.GetTask()].GetVersion() == o.GetVersion()
		res[i] = TaskOutput{
			Task: o.GetTask(), Version: int(o.GetVersion()), Current: cur, Output: o.GetOutput(), Metrics: o.GetMetrics(),
			Cost: o.GetCost(), Session: o.GetSession(), Round: int(o.GetRound()), Attempt: int(o.GetAttempt()),
			Time: unixTime(o.GetUnixNano()), Duration: time.Duration(o.GetDurationNanos()), Action: o.GetAction(), Score: o.GetScore(),
			Artifact: sdk.ContextArtifact{
				KeyDecisions: o.GetKeyDecisions(), ModifiedFiles: o.GetModifiedFiles(), NewPatterns: o.GetNewPatterns(),
				PotentialGotchas: o.GetPotentialGotchas(),
			},
		}
	}
	return res, nil
}

// RunOutputs reads the outputs of one run of the host's store.
func (h *Host) RunOutputs(id string) ([]TaskOutput, error) { return RunOutputs(h.store, id) }

// RunCheckpoints reads a run's checkpoints, oldest first.
func RunCheckpoints(st *store.Store, id string) ([]CheckpointInfo, error) {
	id, err := ResolveRunID(st, id)
	if err != nil {
		return nil, err
	}
	cps, err := st.Checkpoints(id)
	if err != nil {
		return nil, err
	}
	out := make([]CheckpointInfo, len(cps))
	for i, c := range cps {
		out[i] = CheckpointInfo{Seq: c.GetSeq(), Parent: c.GetParent(), Label: c.GetLabel(), Task: c.GetTask(),
			Time: unixTime(c.GetUnixNano()), Status: runStatusOf(c.GetRun().GetStatus()), Stage: c.GetRun().GetStage(),
			Cost: c.GetRun().GetCost(), Succeeded: int(c.GetRun().GetTasksSucceeded())}
	}
	return out, nil
}

// RunCheckpoints reads the checkpoints of one run of the host's store.
func (h *Host) RunCheckpoints(id string) ([]CheckpointInfo, error) {
	return RunCheckpoints(h.store, id)
}

// RunEvents reads the last limit events of a run (0: all), oldest first.
// A deleted run still has its events, ending with its deletion.
func RunEvents(st *store.Store, id string, limit int) ([]Event, error) {
	if rid, err := ResolveRunID(st, id); err == nil {
		id = rid
	}
	recs, err := st.RecentEvents(id, limit)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w %q (hearth runs list shows the runs)", ErrUnknownRun, id)
	}
	out := make([]Event, len(recs))
	for i, r := range recs {
		out[i] = eventFromRecord(r)
	}
	return out, nil
}

// RunEvents reads the events of one run of the host's store.
func (h *Host) RunEvents(id string, limit int) ([]Event, error) { return RunEvents(h.store, id, limit) }
