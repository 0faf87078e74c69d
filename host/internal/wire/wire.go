// Package wire translates between the host package's Go types and the
// daemon API's protobuf messages (package apipb), in both directions: the
// server (package host/api) encodes what the host returns, the client
// (package host/api/client) decodes it back, so that orchestrators and
// the CLI see the same Go values through the daemon as in-process. The
// cluster's peer API (host/cluster/peer) carries tasks and their results
// between hosts with it too.
//
// It also carries errors across: the server turns an error into a gRPC
// status with a code and an ErrorInfo reason naming the host's sentinel
// error; the client turns it back into an error that wraps the same
// sentinel, so errors.Is works on both sides.
//
// Times and tool-use outcomes are encoded as the store's records encode
// them (package internal/protoconv).
package wire

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/internal/apipb"
	"github.com/hearth-dev/hearth/internal/protoconv"
	"github.com/hearth-dev/hearth/sdk"
)

// Hints encodes task hints.
func Hints(h sdk.Hints) *apipb.Hints {
	return &apipb.Hints{Files: h.Files, Directories: h.Directories, Technologies: h.Technologies}
}

// HintsOf decodes task hints.
func HintsOf(h *apipb.Hints) sdk.Hints {
	return sdk.Hints{Files: h.GetFiles(), Directories: h.GetDirectories(), Technologies: h.GetTechnologies()}
}

// Decision encodes a placement decision.
func Decision(d *hearth.Decision) *apipb.Decision {
	if d == nil {
		return nil
	}
	m := &apipb.Decision{
		Task: d.Task, TaskName: d.TaskName, Agent: d.Agent, Action: string(d.Action), Session: d.Session,
		Outcome: d.Outcome, Threshold: d.Threshold, Score: d.Score, Considered: int32(d.Considered),
		Eligible: int32(d.Eligible), WaitedNanos: int64(d.Waited), Retired: d.Retired, Vetoed: d.Vetoed,
		Rehydration: d.Rehydration, Reason: d.Reason, Hints: Hints(d.Hints), External: d.External,
		Resume: d.Resume, Workspace: d.Workspace, Host: d.Host,
	}
	for _, a := range d.Attempts {
		m.Attempts = append(m.Attempts, &apipb.Attempt{Host: a.Host, Session: a.Session, Result: a.Result})
	}
	for _, c := range d.Candidates {
		pc := &apipb.Candidate{
			Session: c.Session, Dormant: c.Dormant, Eligible: c.Eligible, Load: int32(c.Load), Capacity: int32(c.Capacity),
			Total: c.Total,
		}
		legacy := legacyScores(pc)
		for _, f := range c.Factors {
			pc.Factors = append(pc.Factors, &apipb.Factor{Name: f.Name, Weight: f.Weight, Score: f.Score, Applied: f.Applied, Share: f.Share})
			if i := slices.Index(protoconv.LegacyFactors[:], f.Name); i >= 0 {
				*legacy[i] = f.Score
			}
			if f.Applied {
				pc.Applied = append(pc.Applied, f.Name)
			}
		}
		m.Candidates = append(m.Candidates, pc)
	}
	return m
}

// DecisionOf decodes a placement decision.
func DecisionOf(m *apipb.Decision) hearth.Decision {
	d := hearth.Decision{
		Task: m.GetTask(), TaskName: m.GetTaskName(), Agent: m.GetAgent(), Action: hearth.Action(m.GetAction()),
		Session: m.GetSession(), Outcome: m.GetOutcome(), Threshold: m.GetThreshold(), Score: m.GetScore(),
		Considered: int(m.GetConsidered()), Eligible: int(m.GetEligible()), Waited: time.Duration(m.GetWaitedNanos()),
		Retired: m.GetRetired(), Vetoed: m.GetVetoed(), Rehydration: m.GetRehydration(), Reason: m.GetReason(),
		Hints: HintsOf(m.GetHints()), External: m.GetExternal(), Resume: m.GetResume(), Workspace: m.GetWorkspace(), Host: m.GetHost(),
	}
	for _, a := range m.GetAttempts() {
		d.Attempts = append(d.Attempts, hearth.Attempt{Host: a.GetHost(), Session: a.GetSession(), Result: a.GetResult()})
	}
	for _, c := range m.GetCandidates() {
		hc := hearth.Candidate{
			Session: c.GetSession(), Dormant: c.GetDormant(), Eligible: c.GetEligible(), Load: int(c.GetLoad()),
			Capacity: int(c.GetCapacity()), Total: c.GetTotal(),
		}
		for _, f := range c.GetFactors() {
			hc.Factors = append(hc.Factors, hearth.Factor{Name: f.GetName(), Weight: f.GetWeight(), Score: f.GetScore(), Applied: f.GetApplied(), Share: f.GetShare()})
		}
		if len(c.GetFactors()) == 0 { // from a daemon older than the list
			for i, score := range legacyScores(c) {
				name := protoconv.LegacyFactors[i]
				hc.Factors = append(hc.Factors, hearth.Factor{Name: name, Score: *score, Applied: slices.Contains(c.GetApplied(), name)})
			}
		}
		d.Candidates = append(d.Candidates, hc)
	}
	return d
}

// legacyScores are c's fields of protoconv.LegacyFactors, in its order.
func legacyScores(c *apipb.Candidate) [len(protoconv.LegacyFactors)]*float64 {
	return [...]*float64{&c.Directory, &c.File, &c.Tech, &c.Freshness, &c.LoadScore}
}

// Artifact encodes a context artifact learned on session at a time (zero
// when unknown); the message keeps saying where and when for clients
// that read it there.
func Artifact(a sdk.ContextArtifact, session string, at time.Time) *apipb.Artifact {
	return &apipb.Artifact{
		KeyDecisions: a.KeyDecisions, ModifiedFiles: a.ModifiedFiles, NewPatterns: a.NewPatterns,
		PotentialGotchas: a.PotentialGotchas, SourceSession: session, CreatedUnixNano: protoconv.UnixNano(at),
	}
}

// ArtifactOf decodes a context artifact; where and when it was learned is
// in the outcome or output that carries it.
func ArtifactOf(m *apipb.Artifact) sdk.ContextArtifact {
	return sdk.ContextArtifact{
		KeyDecisions: m.GetKeyDecisions(), ModifiedFiles: m.GetModifiedFiles(), NewPatterns: m.GetNewPatterns(),
		PotentialGotchas: m.GetPotentialGotchas(),
	}
}

// Outcome encodes a submitted task's outcome.
func Outcome(o *hearth.Outcome) *apipb.Outcome {
	m := &apipb.Outcome{
		TaskId: o.TaskID, Agent: o.Agent, Session: o.Session, Decision: Decision(&o.Decision),
		Result:   &apipb.Result{Output: o.Result.Output, Metrics: o.Result.Metrics, Cost: o.Result.Cost, ToolUses: o.ToolUses},
		Artifact: Artifact(o.Artifact, o.Session, time.Time{}), DurationNanos: int64(o.Duration), TraceId: o.TraceID,
	}
	if g := o.Gate; g != nil {
		m.Gate = &apipb.Gate{Guard: g.Guard, Action: string(g.Action), Feedback: g.Feedback, To: g.To, MaxLoops: int32(g.MaxLoops)}
	}
	return m
}

// OutcomeOf decodes a submitted task's outcome.
func OutcomeOf(m *apipb.Outcome) *hearth.Outcome {
	r := m.GetResult()
	o := &hearth.Outcome{
		TaskID: m.GetTaskId(), Agent: m.GetAgent(), Session: m.GetSession(), Decision: DecisionOf(m.GetDecision()),
		Result:   sdk.Result{Output: r.GetOutput(), Metrics: r.GetMetrics(), Cost: r.GetCost(), Artifact: ArtifactOf(m.GetArtifact())},
		Artifact: ArtifactOf(m.GetArtifact()), ToolUses: r.GetToolUses(), Duration: time.Duration(m.GetDurationNanos()), TraceID: m.GetTraceId(),
	}
	if g := m.GetGate(); g != nil {
		o.Gate = &hearth.Gate{Guard: g.GetGuard(), Action: hearth.GateAction(g.GetAction()), Feedback: g.GetFeedback(), To: g.GetTo(), MaxLoops: int(g.GetMaxLoops())}
	}
	return o
}

// Session encodes a session's description.
func Session(s hearth.SessionInfo) *apipb.Session {
	return &apipb.Session{
		Id: s.ID, Agent: s.Agent, Status: s.Status, Reason: s.Reason, CreatedUnixNano: protoconv.UnixNano(s.Created),
		LastActivityUnixNano: protoconv.UnixNano(s.LastActivity), Capacity: int32(s.Capacity), Load: int32(s.Load), Pid: int32(s.PID),
		AgentVersion: s.AgentVersion, Tasks: s.Tasks, TasksFailed: s.TasksFailed, ToolUses: s.ToolUses, Unchecked: s.Unchecked, HasState: s.HasState,
		Files: s.Files, Directories: s.Directories, Technologies: s.Technologies,
		External: s.External, Workspace: s.Workspace, Resume: s.Resume,
	}
}

// SessionOf decodes a session's description.
func SessionOf(m *apipb.Session) hearth.SessionInfo {
	return hearth.SessionInfo{
		ID: m.GetId(), Agent: m.GetAgent(), Status: m.GetStatus(), Reason: m.GetReason(), Created: protoconv.Time(m.GetCreatedUnixNano()),
		LastActivity: protoconv.Time(m.GetLastActivityUnixNano()), Capacity: int(m.GetCapacity()), Load: int(m.GetLoad()), PID: int(m.GetPid()),
		AgentVersion: m.GetAgentVersion(), Tasks: m.GetTasks(), TasksFailed: m.GetTasksFailed(), ToolUses: m.GetToolUses(), Unchecked: m.GetUnchecked(),
		HasState: m.GetHasState(), Files: nonNil(m.GetFiles()), Directories: nonNil(m.GetDirectories()),
		Technologies: nonNil(m.GetTechnologies()), External: m.GetExternal(), Workspace: m.GetWorkspace(), Resume: m.GetResume(),
	}
}

// nonNil keeps a list that was empty an empty JSON array, as it is
// in-process.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// SessionDetail encodes a session with its history.
func SessionDetail(d *hearth.SessionDetail) *apipb.SessionDetail {
	m := &apipb.SessionDetail{Session: Session(d.SessionInfo)}
	for i := range d.Events {
		m.Events = append(m.Events, Event(d.Events[i]))
	}
	for i := range d.Decisions {
		m.Decisions = append(m.Decisions, Decision(&d.Decisions[i]))
	}
	return m
}

// SessionDetailOf decodes a session with its history.
func SessionDetailOf(m *apipb.SessionDetail) *hearth.SessionDetail {
	d := &hearth.SessionDetail{SessionInfo: SessionOf(m.GetSession()), Events: []hearth.Event{}, Decisions: []hearth.Decision{}}
	for _, e := range m.GetEvents() {
		d.Events = append(d.Events, EventOf(e))
	}
	for _, dec := range m.GetDecisions() {
		d.Decisions = append(d.Decisions, DecisionOf(dec))
	}
	return d
}

// Event encodes an event.
func Event(e hearth.Event) *apipb.Event {
	m := &apipb.Event{
		Seq: e.Seq, UnixNano: protoconv.UnixNano(e.Time), Kind: string(e.Kind), Agent: e.Agent, Session: e.Session, Task: e.Task,
		Run: e.Run, Message: e.Message, Error: e.Err, Pid: int32(e.PID), Fraction: e.Fraction, Decision: Decision(e.Decision),
		Guard: e.Guard, Hook: e.Hook, Action: e.Action, From: e.From, To: e.To, Cost: e.Cost, DurationNanos: int64(e.Duration),
	}
	if u := e.ToolUse; u != nil {
		m.ToolUse = &apipb.ToolUse{
			CallId: u.CallID, Tool: u.Tool, Kind: string(u.Kind), Paths: u.Paths, Technologies: u.Technologies, Outcome: protoconv.OutcomeCode(u.Outcome),
			Error: u.Error, DurationNanos: int64(u.Duration), Cost: u.Cost, AtUnixNano: protoconv.UnixNano(u.At),
		}
	}
	return m
}

// EventOf decodes an event.
func EventOf(m *apipb.Event) hearth.Event {
	e := hearth.Event{
		Seq: m.GetSeq(), Time: protoconv.Time(m.GetUnixNano()), Kind: hearth.EventKind(m.GetKind()), Agent: m.GetAgent(),
		Session: m.GetSession(), Task: m.GetTask(), Run: m.GetRun(), Message: m.GetMessage(), Err: m.GetError(),
		PID: int(m.GetPid()), Fraction: m.GetFraction(), Guard: m.GetGuard(), Hook: m.GetHook(), Action: m.GetAction(),
		From: m.GetFrom(), To: m.GetTo(), Cost: m.GetCost(), Duration: time.Duration(m.GetDurationNanos()),
	}
	if d := m.GetDecision(); d != nil {
		dec := DecisionOf(d)
		e.Decision = &dec
	}
	if u := m.GetToolUse(); u != nil {
		e.ToolUse = &sdk.ToolUse{
			CallID: u.GetCallId(), Tool: u.GetTool(), Kind: sdk.ToolKind(u.GetKind()), Paths: u.GetPaths(), Technologies: u.GetTechnologies(),
			Outcome: protoconv.Outcome(u.GetOutcome()), Error: u.GetError(), Duration: time.Duration(u.GetDurationNanos()),
			Cost: u.GetCost(), At: protoconv.Time(u.GetAtUnixNano()),
		}
	}
	return e
}

// RunInfo encodes a run's description.
func RunInfo(r hearth.RunInfo) *apipb.RunInfo {
	return &apipb.RunInfo{
		Id: r.ID, Pipeline: r.Pipeline, Status: string(r.Status), Reason: r.Reason, Stage: r.Stage,
		CreatedUnixNano: protoconv.UnixNano(r.Created), StartedUnixNano: protoconv.UnixNano(r.Started), UpdatedUnixNano: protoconv.UnixNano(r.Updated),
		LastActivityUnixNano: protoconv.UnixNano(r.LastActivity), FinishedUnixNano: protoconv.UnixNano(r.Finished), Budget: r.Budget, Cost: r.Cost,
		Tasks: int32(r.Tasks), Succeeded: int32(r.Succeeded), Failed: int32(r.Failed), Skipped: int32(r.Skipped),
		Progress: r.Progress, Checkpoint: r.Checkpoint, ForkedFrom: r.ForkedFrom, ForkedAt: r.ForkedAt,
		Abandoned: r.Abandoned, Interrupted: r.Interrupted, TraceId: r.TraceID,
	}
}

// RunInfoOf decodes a run's description.
func RunInfoOf(m *apipb.RunInfo) hearth.RunInfo {
	return hearth.RunInfo{
		ID: m.GetId(), Pipeline: m.GetPipeline(), Status: hearth.RunStatus(m.GetStatus()), Reason: m.GetReason(), Stage: m.GetStage(),
		Created: protoconv.Time(m.GetCreatedUnixNano()), Started: protoconv.Time(m.GetStartedUnixNano()), Updated: protoconv.Time(m.GetUpdatedUnixNano()),
		LastActivity: protoconv.Time(m.GetLastActivityUnixNano()), Finished: protoconv.Time(m.GetFinishedUnixNano()), Budget: m.GetBudget(),
		Cost: m.GetCost(), Tasks: int(m.GetTasks()), Succeeded: int(m.GetSucceeded()), Failed: int(m.GetFailed()),
		Skipped: int(m.GetSkipped()), Progress: m.GetProgress(), Checkpoint: m.GetCheckpoint(), ForkedFrom: m.GetForkedFrom(),
		ForkedAt: m.GetForkedAt(), Abandoned: m.GetAbandoned(), Interrupted: m.GetInterrupted(), TraceID: m.GetTraceId(),
	}
}

// RunDetail encodes a run with its tasks.
func RunDetail(d hearth.RunDetail) *apipb.RunDetail {
	m := &apipb.RunDetail{
		Info: RunInfo(d.RunInfo), Config: d.Config, Description: d.Description, Parallel: int32(d.Parallel), State: d.State,
		Owner: d.Owner,
	}
	for _, t := range d.TaskList {
		m.Tasks = append(m.Tasks, &apipb.RunTask{
			Name: t.Name, Agent: t.Agent, Stage: t.Stage, DependsOn: t.DependsOn, Status: string(t.Status), Round: int32(t.Round),
			Attempt: int32(t.Attempt), Failures: int32(t.Failures), Error: t.Error, Errors: t.Errors, Cost: t.Cost, Session: t.Session,
			StartedUnixNano: protoconv.UnixNano(t.Started), FinishedUnixNano: protoconv.UnixNano(t.Finished), RetryAtUnixNano: protoconv.UnixNano(t.RetryAt),
			Version: int32(t.Version), NeedsReview: t.NeedsReview, Feedback: t.Feedback, Reason: t.Reason, TraceId: t.TraceID,
		})
	}
	for _, f := range d.Files {
		m.Files = append(m.Files, &apipb.File{Name: f.Name, Path: f.Path, Sha256: f.SHA256, Size: f.Size})
	}
	for _, r := range d.Revisions {
		m.Revisions = append(m.Revisions, &apipb.Revision{Task: r.Task, Impact: string(r.Impact), Reason: r.Reason,
			Archived: r.Archived, Review: r.Review, ResetTasks: r.Reset, UnixNano: protoconv.UnixNano(r.Time)})
	}
	if len(d.GateLoops) > 0 {
		m.GateLoops = make(map[string]int32, len(d.GateLoops))
		for k, v := range d.GateLoops {
			m.GateLoops[k] = int32(v)
		}
	}
	if len(d.Chunks) > 0 {
		m.Chunks = make(map[string]*apipb.Chunks, len(d.Chunks))
		for f, cs := range d.Chunks {
			c := &apipb.Chunks{}
			for _, n := range cs {
				c.Done = append(c.Done, int32(n))
			}
			m.Chunks[f] = c
		}
	}
	return m
}

// RunDetailOf decodes a run with its tasks.
func RunDetailOf(m *apipb.RunDetail) hearth.RunDetail {
	d := hearth.RunDetail{
		RunInfo: RunInfoOf(m.GetInfo()), Config: m.GetConfig(), Description: m.GetDescription(),
		Parallel: int(m.GetParallel()), State: json.RawMessage(m.GetState()), Owner: m.GetOwner(),
	}
	for _, t := range m.GetTasks() {
		d.TaskList = append(d.TaskList, hearth.RunTaskInfo{
			Name: t.GetName(), Agent: t.GetAgent(), Stage: t.GetStage(), DependsOn: t.GetDependsOn(), Status: hearth.TaskStatus(t.GetStatus()),
			Round: int(t.GetRound()), Attempt: int(t.GetAttempt()), Failures: int(t.GetFailures()), Error: t.GetError(),
			Errors: t.GetErrors(), Cost: t.GetCost(), Session: t.GetSession(), Started: protoconv.Time(t.GetStartedUnixNano()),
			Finished: protoconv.Time(t.GetFinishedUnixNano()), RetryAt: protoconv.Time(t.GetRetryAtUnixNano()), Version: int(t.GetVersion()),
			NeedsReview: t.GetNeedsReview(), Feedback: t.GetFeedback(), Reason: t.GetReason(), TraceID: t.GetTraceId(),
		})
	}
	for _, f := range m.GetFiles() {
		d.Files = append(d.Files, sdk.File{Name: f.GetName(), Path: f.GetPath(), SHA256: f.GetSha256(), Size: f.GetSize()})
	}
	for _, r := range m.GetRevisions() {
		d.Revisions = append(d.Revisions, hearth.Revision{Task: r.GetTask(), Impact: hearth.Impact(r.GetImpact()), Reason: r.GetReason(),
			Archived: r.GetArchived(), Review: r.GetReview(), Reset: r.GetResetTasks(), Time: protoconv.Time(r.GetUnixNano())})
	}
	if len(m.GetGateLoops()) > 0 {
		d.GateLoops = make(map[string]int, len(m.GetGateLoops()))
		for k, v := range m.GetGateLoops() {
			d.GateLoops[k] = int(v)
		}
	}
	if len(m.GetChunks()) > 0 {
		d.Chunks = make(map[string][]int, len(m.GetChunks()))
		for f, cs := range m.GetChunks() {
			for _, n := range cs.GetDone() {
				d.Chunks[f] = append(d.Chunks[f], int(n))
			}
		}
	}
	return d
}

// TaskOutput encodes one output version of a run's task.
func TaskOutput(o hearth.TaskOutput) *apipb.TaskOutput {
	return &apipb.TaskOutput{
		Task: o.Task, Version: int32(o.Version), Current: o.Current, Output: o.Output, Metrics: o.Metrics, Cost: o.Cost,
		Session: o.Session, Round: int32(o.Round), Attempt: int32(o.Attempt), UnixNano: protoconv.UnixNano(o.Time),
		DurationNanos: int64(o.Duration), Artifact: Artifact(o.Artifact, o.Session, o.Time), Action: o.Action, Score: o.Score,
	}
}

// TaskOutputOf decodes one output version of a run's task.
func TaskOutputOf(m *apipb.TaskOutput) hearth.TaskOutput {
	return hearth.TaskOutput{
		Task: m.GetTask(), Version: int(m.GetVersion()), Current: m.GetCurrent(), Output: m.GetOutput(), Metrics: m.GetMetrics(),
		Cost: m.GetCost(), Session: m.GetSession(), Round: int(m.GetRound()), Attempt: int(m.GetAttempt()),
		Time: protoconv.Time(m.GetUnixNano()), Duration: time.Duration(m.GetDurationNanos()), Artifact: ArtifactOf(m.GetArtifact()),
		Action: m.GetAction(), Score: m.GetScore(),
	}
}

// Checkpoint encodes a run's checkpoint.
func Checkpoint(c hearth.CheckpointInfo) *apipb.Checkpoint {
	return &apipb.Checkpoint{Seq: c.Seq, Parent: c.Parent, Label: c.Label, Task: c.Task, UnixNano: protoconv.UnixNano(c.Time),
		Status: string(c.Status), Stage: c.Stage, Cost: c.Cost, Succeeded: int32(c.Succeeded)}
}

// CheckpointOf decodes a run's checkpoint.
func CheckpointOf(m *apipb.Checkpoint) hearth.CheckpointInfo {
	return hearth.CheckpointInfo{Seq: m.GetSeq(), Parent: m.GetParent(), Label: m.GetLabel(), Task: m.GetTask(),
		Time: protoconv.Time(m.GetUnixNano()), Status: hearth.RunStatus(m.GetStatus()), Stage: m.GetStage(), Cost: m.GetCost(),
		Succeeded: int(m.GetSucceeded())}
}

// State encodes state sections.
func State(s map[string]json.RawMessage) *apipb.StateSections {
	if len(s) == 0 {
		return nil
	}
	m := &apipb.StateSections{Sections: make(map[string][]byte, len(s))}
	for k, v := range s {
		m.Sections[k] = v
	}
	return m
}

// StateOf decodes state sections.
func StateOf(m *apipb.StateSections) map[string]json.RawMessage {
	if len(m.GetSections()) == 0 {
		return nil
	}
	out := make(map[string]json.RawMessage, len(m.GetSections()))
	for k, v := range m.GetSections() {
		out[k] = v
	}
	return out
}

// HostStatus encodes a host's status.
func HostStatus(st hearth.HostStatus) *apipb.StatusReply {
	m := &apipb.StatusReply{Version: st.Version, DataDir: st.DataDir, Pid: int32(st.PID), StartedUnixNano: protoconv.UnixNano(st.Started),
		Config: st.Config, ProtocolVersion: int32(st.ProtocolVersion), StoreLsmBytes: st.Store.LSM, StoreVlogBytes: st.Store.VLog}
	for _, a := range st.Agents {
		m.Agents = append(m.Agents, Agent(a))
	}
	for _, c := range st.Sessions {
		m.Sessions = append(m.Sessions, &apipb.SessionCount{Agent: c.Agent, Status: c.Status, N: int32(c.N)})
	}
	return m
}

// HostStatusOf decodes a host's status.
func HostStatusOf(m *apipb.StatusReply) hearth.HostStatus {
	st := hearth.HostStatus{Version: m.GetVersion(), DataDir: m.GetDataDir(), PID: int(m.GetPid()), Started: protoconv.Time(m.GetStartedUnixNano()),
		Config: m.GetConfig(), ProtocolVersion: int(m.GetProtocolVersion()),
		Store: hearth.StoreSize{LSM: m.GetStoreLsmBytes(), VLog: m.GetStoreVlogBytes()}}
	for _, a := range m.GetAgents() {
		st.Agents = append(st.Agents, AgentOf(a))
	}
	for _, c := range m.GetSessions() {
		st.Sessions = append(st.Sessions, hearth.SessionCount{Agent: c.GetAgent(), Status: c.GetStatus(), N: int(c.GetN())})
	}
	return st
}

// EventFilter encodes an event filter; its Buffer is the client's.
func EventFilter(f hearth.EventFilter) *apipb.EventsRequest {
	m := &apipb.EventsRequest{Run: f.Run, Session: f.Session, ToolUses: f.ToolUses}
	for _, k := range f.Kinds {
		m.Kinds = append(m.Kinds, string(k))
	}
	return m
}

// EventFilterOf decodes an event filter, with the server's buffer.
func EventFilterOf(m *apipb.EventsRequest, buffer int) hearth.EventFilter {
	f := hearth.EventFilter{Run: m.GetRun(), Session: m.GetSession(), ToolUses: m.GetToolUses(), Buffer: buffer}
	for _, k := range m.GetKinds() {
		f.Kinds = append(f.Kinds, hearth.EventKind(k))
	}
	return f
}

// BackupStats encodes what a backup holds.
func BackupStats(st hearth.BackupStats) *apipb.BackupStats {
	return &apipb.BackupStats{Records: int32(st.Records), Files: int32(st.Files), Bytes: st.Bytes}
}

// BackupStatsOf decodes what a backup holds.
func BackupStatsOf(m *apipb.BackupStats) hearth.BackupStats {
	return hearth.BackupStats{Records: int(m.GetRecords()), Files: int(m.GetFiles()), Bytes: m.GetBytes()}
}

// Agent encodes an agent's status.
func Agent(a hearth.AgentStatus) *apipb.Agent {
	return &apipb.Agent{Name: a.Name, Bundled: a.Bundled, Command: a.Command, External: a.External,
		Live: int32(a.Live), Dormant: int32(a.Dormant)}
}

// AgentOf decodes an agent's status.
func AgentOf(m *apipb.Agent) hearth.AgentStatus {
	return hearth.AgentStatus{Name: m.GetName(), Bundled: m.GetBundled(), Command: m.GetCommand(), External: m.GetExternal(),
		Live: int(m.GetLive()), Dormant: int(m.GetDormant())}
}
