package store

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/host/store/internal/storepb"
	"github.com/hearth-dev/hearth/internal/protoconv"
	"github.com/hearth-dev/hearth/sdk"
)

// Every record <-> protobuf conversion of the store is here; times and
// tool-use outcomes are encoded as the daemon API's are (package
// internal/protoconv).

var sessionStatusToPB = map[record.SessionStatus]storepb.SessionStatus{
	record.SessionLive:    storepb.SessionStatus_SESSION_LIVE,
	record.SessionDormant: storepb.SessionStatus_SESSION_DORMANT,
	record.SessionLost:    storepb.SessionStatus_SESSION_LOST,
}

func sessionToPB(r record.Session) *storepb.Session {
	return &storepb.Session{
		Id: r.ID, Agent: r.Agent, Status: sessionStatusToPB[r.Status],
		CreatedUnixNano: protoconv.UnixNano(r.Created), LastActivityUnixNano: protoconv.UnixNano(r.LastActivity),
		Capacity: int32(r.Capacity), Files: r.Files, Dirs: r.Dirs, Techs: r.Techs,
		FingerprintSeq: r.FingerprintSeq, Tasks: r.Tasks, TasksFailed: r.TasksFailed, ToolUses: r.ToolUses, Unchecked: r.Unchecked,
		HasState: r.HasState, Pid: int32(r.PID), AgentVersion: r.AgentVersion, StatusReason: r.Reason,
		External: r.External, Workspace: r.Workspace, Busy: r.Busy,
	}
}

func sessionFromPB(m *storepb.Session) record.Session {
	r := record.Session{
		ID: m.GetId(), Agent: m.GetAgent(), Created: protoconv.Time(m.GetCreatedUnixNano()), LastActivity: protoconv.Time(m.GetLastActivityUnixNano()),
		Capacity: int(m.GetCapacity()), Files: m.GetFiles(), Dirs: m.GetDirs(), Techs: m.GetTechs(),
		FingerprintSeq: m.GetFingerprintSeq(), Tasks: m.GetTasks(), TasksFailed: m.GetTasksFailed(), ToolUses: m.GetToolUses(), Unchecked: m.GetUnchecked(),
		HasState: m.GetHasState(), PID: int(m.GetPid()), AgentVersion: m.GetAgentVersion(), Reason: m.GetStatusReason(),
		External: m.GetExternal(), Workspace: m.GetWorkspace(), Busy: m.GetBusy(),
	}
	for s, pb := range sessionStatusToPB {
		if pb == m.GetStatus() {
			r.Status = s
		}
	}
	return r
}

// legacyBits packs the applied factors among protoconv.LegacyFactors
// into a record's applied field: bit i for factor i.
func legacyBits(name string) uint32 {
	if i := slices.Index(protoconv.LegacyFactors[:], name); i >= 0 {
		return 1 << i
	}
	return 0
}

// legacyScores are c's fields of protoconv.LegacyFactors, in its order.
func legacyScores(c *storepb.Candidate) [len(protoconv.LegacyFactors)]*float64 {
	return [...]*float64{&c.Directory, &c.File, &c.Tech, &c.Freshness, &c.Load}
}

func decisionToPB(d *hearth.Decision) *storepb.Decision {
	r := &storepb.Decision{
		Task: d.Task, TaskName: d.TaskName, Agent: d.Agent, Outcome: d.Outcome, Threshold: d.Threshold,
		Considered: int32(d.Considered), Eligible: int32(d.Eligible), Action: string(d.Action),
		Session: d.Session, WaitedNanos: int64(d.Waited), Retired: d.Retired, Reason: d.Reason,
		HintFiles: d.Hints.Files, HintDirs: d.Hints.Directories, HintTechs: d.Hints.Technologies,
		Vetoed: d.Vetoed,
	}
	if d.Action != hearth.ActionSpawned {
		r.Winner = d.Session
		r.Dormant = d.Action == hearth.ActionRehydrated
	}
	// The factors' names and weights are the decision's (every candidate
	// has the same, from one matcher), written once.
	if len(d.Candidates) > 0 {
		for _, f := range d.Candidates[0].Factors {
			r.Factors, r.Weights = append(r.Factors, f.Name), append(r.Weights, f.Weight)
		}
	}
	for _, c := range d.Candidates {
		pc := &storepb.Candidate{
			Id: c.Session, Total: c.Total, Eligible: c.Eligible, Dormant: c.Dormant,
			LoadCount: int32(c.Load), Capacity: int32(c.Capacity),
		}
		legacy := legacyScores(pc)
		for i, f := range c.Factors {
			pc.Scores = append(pc.Scores, f.Score)
			pc.Shares = append(pc.Shares, f.Share)
			if i := slices.Index(protoconv.LegacyFactors[:], f.Name); i >= 0 {
				*legacy[i] = f.Score
			}
			if f.Applied {
				pc.AppliedFactors |= 1 << i
				pc.Applied |= legacyBits(f.Name)
			}
		}
		r.Ranked = append(r.Ranked, pc)
	}
	return r
}

// finite is v, or 0 when v is NaN or infinite. Every number a record
// reads back with goes through it: a record's writer may be older,
// corrupt or hostile (an agent's reported cost, a peer's decision), and
// one NaN would reach every reader that sums it (a budget compared with
// NaN never runs out) and every JSON answer that holds it (JSON has no
// NaN: the daemon's /api/snapshot, and with it the dashboard, went
// blank for one such decision).
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// finiteMetrics is m with each value finite.
func finiteMetrics(m map[string]float64) map[string]float64 {
	for k, v := range m {
		m[k] = finite(v)
	}
	return m
}

func decisionFromPB(r *storepb.Decision) hearth.Decision {
	d := hearth.Decision{
		Task: r.GetTask(), TaskName: r.GetTaskName(), Agent: r.GetAgent(), Action: hearth.Action(r.GetAction()), Session: r.GetSession(),
		Outcome: r.GetOutcome(), Threshold: finite(r.GetThreshold()), Considered: int(r.GetConsidered()),
		Eligible: int(r.GetEligible()), Waited: time.Duration(r.GetWaitedNanos()), Retired: r.GetRetired(),
		Reason: r.GetReason(), Vetoed: r.GetVetoed(),
		Hints: sdk.Hints{Files: r.GetHintFiles(), Directories: r.GetHintDirs(), Technologies: r.GetHintTechs()},
	}
	for _, c := range r.GetRanked() {
		cand := hearth.Candidate{
			Session: c.GetId(), Dormant: c.GetDormant(), Eligible: c.GetEligible(), Load: int(c.GetLoadCount()),
			Capacity: int(c.GetCapacity()), Total: finite(c.GetTotal()),
		}
		if names := r.GetFactors(); len(names) > 0 {
			for i, name := range names {
				f := hearth.Factor{Name: name, Applied: i < 64 && c.GetAppliedFactors()&(1<<i) != 0}
				if i < len(r.GetWeights()) {
					f.Weight = finite(r.GetWeights()[i])
				}
				if i < len(c.GetScores()) {
					f.Score = finite(c.GetScores()[i])
				}
				if i < len(c.GetShares()) { // none before shares were kept
					f.Share = finite(c.GetShares()[i])
				}
				cand.Factors = append(cand.Factors, f)
			}
		} else { // a record from before the list: the five, weights unknown
			for i, score := range legacyScores(c) {
				name := protoconv.LegacyFactors[i]
				cand.Factors = append(cand.Factors, hearth.Factor{Name: name, Score: finite(*score), Applied: c.GetApplied()&legacyBits(name) != 0})
			}
		}
		d.Candidates = append(d.Candidates, cand)
		if cand.Session == d.Session && d.Action != hearth.ActionSpawned {
			d.Score = cand.Total
		}
	}
	if d.Action == hearth.ActionSpawned && len(d.Candidates) > 0 {
		d.Score = d.Candidates[0].Total
	}
	return d
}

// fillEvent sets every field of r from e, reusing r's tool-use record:
// tool-use events, the hottest path, recycle their records.
func fillEvent(r *storepb.Event, e *hearth.Event) {
	r.Seq, r.UnixNano, r.Kind, r.Agent, r.Session = e.Seq, e.Time.UnixNano(), string(e.Kind), e.Agent, e.Session
	r.Task, r.Run, r.Message, r.Error, r.Pid, r.Fraction = e.Task, e.Run, e.Message, e.Err, int32(e.PID), e.Fraction
	r.Guard, r.Hook, r.Action, r.From, r.To, r.Cost = e.Guard, e.Hook, e.Action, e.From, e.To, e.Cost
	r.DurationNanos = int64(e.Duration)
	r.Decision = nil
	if e.Decision != nil {
		r.Decision = decisionToPB(e.Decision)
	}
	u := e.ToolUse
	if u == nil {
		r.ToolUse = nil
		return
	}
	tu := r.ToolUse
	if tu == nil {
		tu = &storepb.ToolUse{}
		r.ToolUse = tu
	}
	tu.Tool, tu.Paths, tu.Technologies, tu.Outcome = u.Tool, u.Paths, u.Technologies, protoconv.OutcomeCode(u.Outcome)
	tu.Error, tu.DurationNanos, tu.Cost, tu.CallId, tu.Kind = u.Error, int64(u.Duration), u.Cost, u.CallID, string(u.Kind)
}

func eventFromPB(r *storepb.Event) hearth.Event {
	e := hearth.Event{
		Seq: r.GetSeq(), Time: time.Unix(0, r.GetUnixNano()), Kind: hearth.EventKind(r.GetKind()), Agent: r.GetAgent(),
		Session: r.GetSession(), Task: r.GetTask(), Message: r.GetMessage(), Err: r.GetError(),
		PID: int(r.GetPid()), Fraction: finite(r.GetFraction()), Guard: r.GetGuard(), Hook: r.GetHook(), Action: r.GetAction(),
		Run: r.GetRun(), From: r.GetFrom(), To: r.GetTo(), Cost: finite(r.GetCost()), Duration: time.Duration(r.GetDurationNanos()),
	}
	if tu := r.GetToolUse(); tu != nil {
		u := sdk.ToolUse{
			CallID: tu.GetCallId(), Tool: tu.GetTool(), Kind: sdk.ToolKind(tu.GetKind()), Paths: tu.GetPaths(), Technologies: tu.GetTechnologies(),
			Outcome: protoconv.Outcome(tu.GetOutcome()), Error: tu.GetError(), Duration: time.Duration(tu.GetDurationNanos()),
			Cost: finite(tu.GetCost()),
		}
		e.ToolUse = &u
	}
	if d := r.GetDecision(); d != nil {
		dec := decisionFromPB(d)
		e.Decision = &dec
	}
	return e
}

var runStatusToPB = map[hearth.RunStatus]storepb.RunStatus{
	hearth.RunCreated:   storepb.RunStatus_RUN_CREATED,
	hearth.RunRunning:   storepb.RunStatus_RUN_RUNNING,
	hearth.RunPaused:    storepb.RunStatus_RUN_PAUSED,
	hearth.RunCompleted: storepb.RunStatus_RUN_COMPLETED,
	hearth.RunFailed:    storepb.RunStatus_RUN_FAILED,
	hearth.RunCancelled: storepb.RunStatus_RUN_CANCELLED,
}

var taskStatusToPB = map[hearth.TaskStatus]storepb.TaskStatus{
	hearth.TaskPending:   storepb.TaskStatus_TASK_PENDING,
	hearth.TaskRunning:   storepb.TaskStatus_TASK_RUNNING,
	hearth.TaskSucceeded: storepb.TaskStatus_TASK_SUCCEEDED,
	hearth.TaskFailed:    storepb.TaskStatus_TASK_FAILED,
	hearth.TaskRetrying:  storepb.TaskStatus_TASK_RETRYING,
	hearth.TaskSkipped:   storepb.TaskStatus_TASK_SKIPPED,
}

func runStatusFromPB(s storepb.RunStatus) hearth.RunStatus {
	for k, v := range runStatusToPB {
		if v == s {
			return k
		}
	}
	return ""
}

func taskStatusFromPB(s storepb.TaskStatus) hearth.TaskStatus {
	for k, v := range taskStatusToPB {
		if v == s {
			return k
		}
	}
	return ""
}

func runToPB(r *record.Run) *storepb.Run {
	m := &storepb.Run{
		Id: r.ID, Pipeline: r.Pipeline, Status: runStatusToPB[r.Status], Reason: r.Reason,
		CreatedUnixNano: protoconv.UnixNano(r.Created), UpdatedUnixNano: protoconv.UnixNano(r.Updated), LastActivityUnixNano: protoconv.UnixNano(r.LastActivity),
		StartedUnixNano: protoconv.UnixNano(r.Started), FinishedUnixNano: protoconv.UnixNano(r.Finished), Budget: r.Budget, Cost: r.Cost,
		Stage: r.Stage, StateJson: r.State, Checkpoint: r.Checkpoint, ForkedFrom: r.ForkedFrom, ForkedAt: r.ForkedAt,
		Abandoned: r.Abandoned, TasksTotal: int32(r.TasksTotal), TasksSucceeded: int32(r.TasksSucceeded),
		TasksFailed: int32(r.TasksFailed), TasksSkipped: int32(r.TasksSkipped), TraceId: r.TraceID,
	}
	if len(r.Chunks) > 0 {
		m.Chunks = make(map[string]*storepb.ChunkSet, len(r.Chunks))
		for f, cs := range r.Chunks {
			set := &storepb.ChunkSet{Done: make([]int32, len(cs))}
			for i, c := range cs {
				set.Done[i] = int32(c)
			}
			m.Chunks[f] = set
		}
	}
	for _, f := range r.Files {
		m.Files = append(m.Files, &storepb.RunFile{Name: f.Name, Sha256: f.SHA256, Size: f.Size, AddedUnixNano: protoconv.UnixNano(f.Added)})
	}
	if len(r.GateLoops) > 0 {
		m.GateLoops = make(map[string]int32, len(r.GateLoops))
		for k, v := range r.GateLoops {
			m.GateLoops[k] = int32(v)
		}
	}
	for _, rv := range r.Revisions {
		m.Revisions = append(m.Revisions, &storepb.Revision{Task: rv.Task, Impact: string(rv.Impact), Reason: rv.Reason,
			Archived: rv.Archived, Review: rv.Review, ResetTasks: rv.Reset, UnixNano: protoconv.UnixNano(rv.Time)})
	}
	return m
}

func runFromPB(m *storepb.Run) *record.Run {
	r := &record.Run{
		ID: m.GetId(), Pipeline: m.GetPipeline(), Status: runStatusFromPB(m.GetStatus()), Reason: m.GetReason(),
		Created: protoconv.Time(m.GetCreatedUnixNano()), Updated: protoconv.Time(m.GetUpdatedUnixNano()),
		LastActivity: protoconv.Time(m.GetLastActivityUnixNano()), Started: protoconv.Time(m.GetStartedUnixNano()),
		Finished: protoconv.Time(m.GetFinishedUnixNano()), Budget: finite(m.GetBudget()), Cost: finite(m.GetCost()), Stage: m.GetStage(),
		State: m.GetStateJson(), Checkpoint: m.GetCheckpoint(), ForkedFrom: m.GetForkedFrom(), ForkedAt: m.GetForkedAt(),
		Abandoned: m.GetAbandoned(), TasksTotal: int(m.GetTasksTotal()), TasksSucceeded: int(m.GetTasksSucceeded()),
		TasksFailed: int(m.GetTasksFailed()), TasksSkipped: int(m.GetTasksSkipped()), TraceID: m.GetTraceId(),
	}
	if len(m.GetChunks()) > 0 {
		r.Chunks = make(map[string][]int, len(m.GetChunks()))
		for f, cs := range m.GetChunks() {
			done := make([]int, len(cs.GetDone()))
			for i, c := range cs.GetDone() {
				done[i] = int(c)
			}
			r.Chunks[f] = done
		}
	}
	for _, f := range m.GetFiles() {
		r.Files = append(r.Files, record.File{Name: f.GetName(), SHA256: f.GetSha256(), Size: f.GetSize(), Added: protoconv.Time(f.GetAddedUnixNano())})
	}
	if len(m.GetGateLoops()) > 0 {
		r.GateLoops = make(map[string]int, len(m.GetGateLoops()))
		for k, v := range m.GetGateLoops() {
			r.GateLoops[k] = int(v)
		}
	}
	for _, rv := range m.GetRevisions() {
		r.Revisions = append(r.Revisions, hearth.Revision{Task: rv.GetTask(), Impact: hearth.Impact(rv.GetImpact()), Reason: rv.GetReason(),
			Archived: rv.GetArchived(), Review: rv.GetReview(), Reset: rv.GetResetTasks(), Time: protoconv.Time(rv.GetUnixNano())})
	}
	return r
}

// graphToPB encodes a run's graph. The stages' rules go as the
// vocabulary's JSON (stages): the store names none of their settings.
func graphToPB(g *record.Graph) (*storepb.RunGraph, error) {
	p := g.Pipeline
	m := &storepb.RunGraph{
		Pipeline: p.Name, Description: p.Description, Parallel: int32(p.Parallel),
		RetryAttempts: int32(p.Retry.Attempts), RetryBackoffNanos: int64(p.Retry.Backoff), RetryMaxBackoffNanos: int64(p.Retry.MaxBackoff),
		OnFailure: string(p.OnFailure), ContextBudget: int32(p.Context.Budget), ContextTemplate: p.Context.Template,
		PauseAfterNanos: int64(p.Retention.PauseAfter), AbandonAfterNanos: int64(p.Retention.AbandonAfter),
		DeleteAfterNanos: int64(p.Retention.DeleteAfter), Config: g.Config, RequireChecks: p.RequireChecks,
	}
	for _, o := range p.State.Owners {
		m.Owners = append(m.Owners, &storepb.Owner{Agent: o.Agent, ReadsAll: o.Reads == nil, Reads: o.Reads, Writes: o.Writes})
	}
	for _, t := range p.Tasks {
		m.Tasks = append(m.Tasks, &storepb.GraphTask{
			Name: t.Name, Agent: t.Agent, Prompt: t.Prompt, DependsOn: t.DependsOn,
			Files: t.Hints.Files, Dirs: t.Hints.Directories, Techs: t.Hints.Technologies,
			Stage: t.Stage, Metadata: t.Metadata, Attempts: int32(t.Attempts), OnFailure: string(t.OnFailure),
		})
	}
	if len(p.Stages) > 0 {
		b, err := json.Marshal(p.Stages)
		if err != nil {
			return nil, fmt.Errorf("stages of pipeline %q: %w", p.Name, err)
		}
		m.Stages = b
	}
	return m, nil
}

// graphFromPB decodes a run's graph; one written before stages had
// rules has none.
func graphFromPB(m *storepb.RunGraph) (*record.Graph, error) {
	p := &hearth.Pipeline{
		Name: m.GetPipeline(), Description: m.GetDescription(), Parallel: int(m.GetParallel()),
		OnFailure: hearth.OnFailure(m.GetOnFailure()),
		Retry: hearth.Retry{Attempts: int(m.GetRetryAttempts()), Backoff: time.Duration(m.GetRetryBackoffNanos()),
			MaxBackoff: time.Duration(m.GetRetryMaxBackoffNanos())},
		Context:       hearth.Context{Budget: int(m.GetContextBudget()), Template: m.GetContextTemplate()},
		RequireChecks: m.GetRequireChecks(),
		Retention: hearth.Retention{PauseAfter: time.Duration(m.GetPauseAfterNanos()),
			AbandonAfter: time.Duration(m.GetAbandonAfterNanos()), DeleteAfter: time.Duration(m.GetDeleteAfterNanos())},
	}
	for _, o := range m.GetOwners() {
		own := &hearth.Owner{Agent: o.GetAgent(), Writes: o.GetWrites()}
		if !o.GetReadsAll() {
			own.Reads = append([]string{}, o.GetReads()...)
		}
		p.State.Owners = append(p.State.Owners, own)
	}
	for _, t := range m.GetTasks() {
		p.Tasks = append(p.Tasks, &hearth.PipelineTask{
			Name: t.GetName(), Agent: t.GetAgent(), Prompt: t.GetPrompt(), DependsOn: t.GetDependsOn(),
			Hints: sdk.Hints{Files: t.GetFiles(), Directories: t.GetDirs(), Technologies: t.GetTechs()},
			Stage: t.GetStage(), Metadata: t.GetMetadata(), Attempts: int(t.GetAttempts()), OnFailure: hearth.OnFailure(t.GetOnFailure()),
		})
	}
	if b := m.GetStages(); len(b) > 0 {
		if err := json.Unmarshal(b, &p.Stages); err != nil {
			return nil, fmt.Errorf("stages of pipeline %q: %w", p.Name, err)
		}
	}
	return &record.Graph{Pipeline: p, Config: m.GetConfig()}, nil
}

func taskToPB(t *record.Task) *storepb.RunTask {
	return &storepb.RunTask{
		Name: t.Name, Status: taskStatusToPB[t.Status], Round: int32(t.Round), Attempts: int32(t.Attempts),
		Failures: int32(t.Failures), Error: t.Error, Errors: t.Errors, Cost: t.Cost, Session: t.Session, TaskId: t.TaskID,
		StartedUnixNano: protoconv.UnixNano(t.Started), FinishedUnixNano: protoconv.UnixNano(t.Finished), RetryAtUnixNano: protoconv.UnixNano(t.RetryAt),
		Version: int32(t.Version), NeedsReview: t.NeedsReview, Feedback: t.Feedback, Reason: t.Reason, TraceId: t.TraceID,
	}
}

func taskFromPB(m *storepb.RunTask) *record.Task {
	return &record.Task{
		Name: m.GetName(), Status: taskStatusFromPB(m.GetStatus()), Round: int(m.GetRound()), Attempts: int(m.GetAttempts()),
		Failures: int(m.GetFailures()), Error: m.GetError(), Errors: m.GetErrors(), Cost: finite(m.GetCost()), Session: m.GetSession(),
		TaskID: m.GetTaskId(), Started: protoconv.Time(m.GetStartedUnixNano()), Finished: protoconv.Time(m.GetFinishedUnixNano()),
		RetryAt: protoconv.Time(m.GetRetryAtUnixNano()), Version: int(m.GetVersion()), NeedsReview: m.GetNeedsReview(),
		Feedback: m.GetFeedback(), Reason: m.GetReason(), TraceID: m.GetTraceId(),
	}
}

func checkpointToPB(c *record.Checkpoint) *storepb.Checkpoint {
	m := &storepb.Checkpoint{Seq: c.Seq, Parent: c.Parent, Label: c.Label, Task: c.Task, UnixNano: protoconv.UnixNano(c.Time)}
	if c.Run != nil {
		m.Run = runToPB(c.Run)
	}
	for _, t := range c.Tasks {
		m.Tasks = append(m.Tasks, taskToPB(t))
	}
	return m
}

func checkpointFromPB(m *storepb.Checkpoint) *record.Checkpoint {
	c := &record.Checkpoint{Seq: m.GetSeq(), Parent: m.GetParent(), Label: m.GetLabel(), Task: m.GetTask(), Time: protoconv.Time(m.GetUnixNano())}
	if m.GetRun() != nil {
		c.Run = runFromPB(m.GetRun())
	}
	for _, t := range m.GetTasks() {
		c.Tasks = append(c.Tasks, taskFromPB(t))
	}
	return c
}

func outputToPB(o *record.Output) *storepb.TaskOutput {
	a := o.Artifact
	return &storepb.TaskOutput{
		Task: o.Task, Version: int32(o.Version), Output: o.Output, Metrics: o.Metrics, Cost: o.Cost,
		Session: o.Session, Attempt: int32(o.Attempt), Round: int32(o.Round), UnixNano: protoconv.UnixNano(o.Time),
		DurationNanos: int64(o.Duration), KeyDecisions: a.KeyDecisions, ModifiedFiles: a.ModifiedFiles,
		NewPatterns: a.NewPatterns, PotentialGotchas: a.PotentialGotchas, SourceSession: o.Session,
		ArtifactUnixNano: protoconv.UnixNano(o.Time), Action: o.Action, Score: o.Score,
	}
}

func outputFromPB(m *storepb.TaskOutput) *record.Output {
	return &record.Output{
		Task: m.GetTask(), Version: int(m.GetVersion()), Output: m.GetOutput(), Metrics: finiteMetrics(m.GetMetrics()), Cost: finite(m.GetCost()),
		Session: m.GetSession(), Attempt: int(m.GetAttempt()), Round: int(m.GetRound()), Time: protoconv.Time(m.GetUnixNano()),
		Duration: time.Duration(m.GetDurationNanos()), Action: m.GetAction(), Score: finite(m.GetScore()),
		Artifact: sdk.ContextArtifact{
			KeyDecisions: m.GetKeyDecisions(), ModifiedFiles: m.GetModifiedFiles(), NewPatterns: m.GetNewPatterns(),
			PotentialGotchas: m.GetPotentialGotchas(),
		},
	}
}

// EncodeEvent is e as the store encodes it, for benchmarks that write
// the same bytes to raw Badger.
func EncodeEvent(e hearth.Event) ([]byte, error) {
	m := &storepb.Event{}
	fillEvent(m, &e)
	return encode(m)
}

func forwardToPB(r cluster.ForwardRecord) (*storepb.Forward, error) {
	m := &storepb.Forward{Key: r.Key, From: r.From, Agent: r.Agent, State: storepb.ForwardState_FORWARD_RUNNING,
		AcceptedUnixNano: protoconv.UnixNano(r.Accepted), FinishedUnixNano: protoconv.UnixNano(r.Finished),
		Error: r.Error, ErrorKind: r.ErrorKind}
	if r.Done {
		m.State = storepb.ForwardState_FORWARD_DONE
	}
	if r.Outcome != nil {
		b, err := json.Marshal(r.Outcome)
		if err != nil {
			return nil, fmt.Errorf("forwarded task %s: encode its outcome: %w", r.Key, err)
		}
		m.OutcomeJson = b
	}
	return m, nil
}

func forwardFromPB(m *storepb.Forward) (cluster.ForwardRecord, error) {
	r := cluster.ForwardRecord{Key: m.GetKey(), From: m.GetFrom(), Agent: m.GetAgent(),
		Done:     m.GetState() == storepb.ForwardState_FORWARD_DONE,
		Accepted: protoconv.Time(m.GetAcceptedUnixNano()), Finished: protoconv.Time(m.GetFinishedUnixNano()),
		Error: m.GetError(), ErrorKind: m.GetErrorKind()}
	if len(m.GetOutcomeJson()) > 0 {
		r.Outcome = &hearth.Outcome{}
		if err := json.Unmarshal(m.GetOutcomeJson(), r.Outcome); err != nil {
			return cluster.ForwardRecord{}, fmt.Errorf("its outcome: %w", err)
		}
	}
	return r, nil
}
