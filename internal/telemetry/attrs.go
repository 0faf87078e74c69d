package telemetry

import (
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/hearth-dev/hearth"
)

// The spans hearth makes, and the attributes they carry. docs/telemetry.md
// shows them as a trace; a test holds the names here to what a run
// exports.
const (
	// SpanSubmit is a task submitted on its own (Submit), from submission
	// to result.
	SpanSubmit = "hearth.submit"
	// SpanPlace is a placement: the decision and acting on it (waiting for
	// room, retiring, spawning or rehydrating).
	SpanPlace = "hearth.place"
	// SpanSpawn and SpanRehydrate are a plugin process started for a new
	// session, or for a dormant one given its state back.
	SpanSpawn     = "hearth.session.spawn"
	SpanRehydrate = "hearth.session.rehydrate"
	// SpanInvoke is a task run on a session: the call into the plugin,
	// named by the GenAI conventions ("invoke_agent coder"). The agent's
	// own spans are its children.
	SpanInvoke = "invoke_agent"
	// SpanPreToolUse is a question before a tool use, with the guards'
	// verdict; SpanToolUse a tool use the agent reported.
	SpanPreToolUse = "hearth.pre_tool_use"
	SpanToolUse    = "hearth.tool_use"
	// SpanRun is a run executing on this host, from start (or resume) to
	// its end or pause; SpanTask one task of it, from ready to done;
	// SpanAttempt one attempt of that task.
	SpanRun     = "hearth.run"
	SpanTask    = "hearth.task"
	SpanAttempt = "hearth.attempt"
	// SpanGate is a task's result put to its task_result guards (the
	// quality gate); SpanCheckpoint a checkpoint written.
	SpanGate       = "hearth.gate"
	SpanCheckpoint = "hearth.checkpoint"
	// SpanForward is a task sent to another host; SpanForwarded the same
	// task taken there.
	SpanForward   = "hearth.forward"
	SpanForwarded = "hearth.forwarded"
)

// Attribute keys of hearth's spans.
const (
	AttrTask     = attribute.Key("hearth.task.id")
	AttrTaskName = attribute.Key("hearth.task.name")
	AttrAgent    = attribute.Key("hearth.agent")
	AttrSession  = attribute.Key("hearth.session.id")
	AttrRun      = attribute.Key("hearth.run.id")
	AttrPipeline = attribute.Key("hearth.pipeline")
	AttrAttempt  = attribute.Key("hearth.attempt")
	AttrRound    = attribute.Key("hearth.round")
	AttrHost     = attribute.Key("hearth.host.id")
	AttrOutcome  = attribute.Key("hearth.outcome")
	AttrCost     = attribute.Key("hearth.cost")
	AttrToolUses = attribute.Key("hearth.tool_uses")
	AttrPID      = attribute.Key("hearth.plugin.pid")

	AttrAction     = attribute.Key("hearth.placement.action")
	AttrPlaced     = attribute.Key("hearth.placement.session")
	AttrPlacedHost = attribute.Key("hearth.placement.host")
	AttrMatch      = attribute.Key("hearth.placement.outcome")
	AttrScore      = attribute.Key("hearth.placement.score")
	AttrThreshold  = attribute.Key("hearth.placement.threshold")
	AttrReason     = attribute.Key("hearth.placement.reason")
	AttrConsidered = attribute.Key("hearth.placement.considered")
	AttrEligible   = attribute.Key("hearth.placement.eligible")
	AttrWaited     = attribute.Key("hearth.placement.waited_seconds")
	AttrRetired    = attribute.Key("hearth.placement.retired")
	AttrVetoed     = attribute.Key("hearth.placement.vetoed")
	AttrCandidates = attribute.Key("hearth.placement.candidates")
	// AttrFactor is the prefix of the chosen session's factor scores:
	// hearth.placement.factor.directory, .file, .tech, .freshness,
	// .load, one per applied factor, named as the matcher names them.
	AttrFactor = "hearth.placement.factor."
	// AttrShare is the prefix of the chosen session's factors' parts of
	// its total (hearth.Factor.Share): hearth.placement.share.directory,
	// ..., one per applied factor; they add up to hearth.placement.score.
	AttrShare = "hearth.placement.share."

	AttrTool      = attribute.Key("hearth.tool.name")
	AttrToolKind  = attribute.Key("hearth.tool.kind")
	AttrToolPaths = attribute.Key("hearth.tool.paths")
	AttrCallID    = attribute.Key("hearth.tool.call_id")
	AttrToolOut   = attribute.Key("hearth.tool.outcome")
	AttrVerdict   = attribute.Key("hearth.guard.verdict")
	AttrGuard     = attribute.Key("hearth.guard.name")
	AttrGuardWhy  = attribute.Key("hearth.guard.reason")
	AttrGate      = attribute.Key("hearth.gate.action")
	AttrGateTo    = attribute.Key("hearth.gate.to")

	AttrCheckpoint = attribute.Key("hearth.checkpoint.seq")
	AttrLabel      = attribute.Key("hearth.checkpoint.label")

	// A run's task's stage, and what launched the run ("started",
	// "resumed", a revisit, a fork).
	AttrStage  = attribute.Key("hearth.stage")
	AttrLaunch = attribute.Key("hearth.run.launch")
	// AttrFrom is the host that forwarded a task.
	AttrFrom = attribute.Key("hearth.forward.from")
)

// maxCandidates bounds the candidates a placement span lists.
const maxCandidates = 5

// DecisionAttrs are a placement's attributes: what was done, where, the
// score and threshold, the chosen session's factors (the best
// candidate's for a spawn), and each ranked candidate in one line.
func DecisionAttrs(d *hearth.Decision) []attribute.KeyValue {
	out := []attribute.KeyValue{
		AttrAction.String(string(d.Action)), AttrMatch.String(d.Outcome),
		AttrScore.Float64(d.Score), AttrThreshold.Float64(d.Threshold), AttrReason.String(d.Reason),
		AttrConsidered.Int(d.Considered), AttrEligible.Int(d.Eligible),
	}
	if d.Session != "" {
		out = append(out, AttrPlaced.String(d.Session))
	}
	if d.Host != "" {
		out = append(out, AttrPlacedHost.String(d.Host))
	}
	if d.Waited > 0 {
		out = append(out, AttrWaited.Float64(d.Waited.Seconds()))
	}
	if d.Retired != "" {
		out = append(out, AttrRetired.String(d.Retired))
	}
	if len(d.Vetoed) > 0 {
		out = append(out, AttrVetoed.StringSlice(d.Vetoed))
	}
	var chosen *hearth.Candidate
	for i := range d.Candidates {
		if d.Candidates[i].Session == d.Session {
			chosen = &d.Candidates[i]
		}
	}
	if chosen == nil && len(d.Candidates) > 0 && d.Action == hearth.ActionSpawned {
		chosen = &d.Candidates[0]
	}
	if chosen != nil {
		for _, f := range chosen.Factors {
			if f.Applied {
				out = append(out, attribute.Float64(AttrFactor+f.Name, f.Score), attribute.Float64(AttrShare+f.Name, f.Share))
			}
		}
	}
	if len(d.Candidates) > 0 {
		cs := make([]string, 0, min(len(d.Candidates), maxCandidates))
		for _, c := range d.Candidates[:min(len(d.Candidates), maxCandidates)] {
			cs = append(cs, candidateLine(c))
		}
		out = append(out, AttrCandidates.StringSlice(cs))
	}
	return out
}

// candidateLine is one candidate as a person reads it: "coder-1a2b3c4d
// total=0.72 directory=0.90 file=0.50 freshness=0.99 load=1.00".
func candidateLine(c hearth.Candidate) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s total=%.2f", c.Session, c.Total)
	for _, f := range c.Factors {
		if f.Applied {
			fmt.Fprintf(&b, " %s=%.2f", f.Name, f.Score)
		}
	}
	if c.Dormant {
		b.WriteString(" dormant")
	}
	if !c.Eligible {
		b.WriteString(" ineligible")
	}
	return b.String()
}

// Usage is what a task's model calls used (hearth.Tokens).
type Usage = hearth.Tokens

// UsageOf reads a result's token metrics; ok is false when it has none.
func UsageOf(metrics map[string]float64) (u Usage, ok bool) {
	t := hearth.TokensOf(metrics, "")
	if t == nil {
		return Usage{}, false
	}
	return *t, true
}

// GenAIUsage are u as the GenAI conventions' attributes: input tokens
// counting every input token, cached ones included (the conventions
// say so), with the cache reads and writes beside them.
func GenAIUsage(u Usage) []attribute.KeyValue {
	return []attribute.KeyValue{
		semconv.GenAIUsageInputTokens(int(u.Input + u.CachedInput)),
		semconv.GenAIUsageCacheReadInputTokens(int(u.CachedInput)),
		semconv.GenAIUsageCacheCreationInputTokens(int(u.CacheWrite)),
		semconv.GenAIUsageOutputTokens(int(u.Output)),
	}
}
