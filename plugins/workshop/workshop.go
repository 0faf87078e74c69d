// Package workshop is a bundled hearth agent that stands in for the LLM
// agents of the seed pipelines (podcast production, story generation,
// essay writing, an exam study planner) so that their examples run
// anywhere, offline, the same way every time. It calls no model and no
// network: each skill writes plausible text from its inputs with fixed
// rules, reports metrics and a cost, uses the run's state document,
// checkpoints, files and chunk progress as a real agent would (through
// sdk.RunCallbacks; outside a run it sees an empty state document), and
// returns what the task decided as its artifact.
//
// A task's prompt holds one command line:
//
//	SKILL.ACTION [key=value ...]
//
// such as `podcast.write_script cost=0.2` or `study.ingest chunk_lines=8
// crash_after_chunks=3`. A value with spaces is double-quoted:
// topic="free will". The command is the first line of the prompt that
// starts with a known SKILL.ACTION, so a prompt may hold prose around it.
// Some skills read the task's feedback (sdk.Task.Feedback): a quality
// gate's report, or a revisit's reason.
//
// Every skill takes these knobs besides its own arguments:
//
//	cost=C                the task's cost (each skill has a default)
//	delay=D               wait D per unit of work (a scene, a chunk, or
//	                      once), so that a person can interrupt a run;
//	                      the wait ends early when the task is cancelled
//	fail_attempts=N       attempts 1..N fail with a transient error (the
//	                      host retries them), after costing C
//	crash_after_chunks=N  (study.ingest) on attempt 1 only, exit the
//	                      plugin process after marking N chunks done
//
// The skills and the state sections each reads and writes are listed in
// README.md.
package workshop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hearth-dev/hearth/sdk"
)

// Version of the agent.
const Version = "0.1.0"

// Agent is the workshop agent. Use New.
type Agent struct {
	// exit ends the plugin process for crash_after_chunks; tests replace
	// it.
	exit func(code int)
}

// New returns a workshop agent; exit ends the process for
// crash_after_chunks (os.Exit when nil).
func New(exit func(int)) *Agent {
	return &Agent{exit: exit}
}

// Describe implements sdk.Agent.
func (a *Agent) Describe(context.Context) (sdk.Info, error) {
	return sdk.Info{
		Name:         "workshop",
		Version:      Version,
		Description:  "deterministic stand-in for the LLM agents of the podcast, story, essay and study planner pipelines",
		Technologies: []string{"markdown"},
		Capacity:     1,
	}, nil
}

// skill is one SKILL.ACTION: the arguments it takes besides the knobs,
// its default cost, and what it does.
type skill struct {
	args []string
	cost float64
	// units says the skill waits the delay knob per unit of work itself
	// (a scene, a chunk), not once before it starts.
	units bool
	run   func(w *work) (string, error)
}

// skills lists every SKILL.ACTION.
var skills = map[string]skill{
	"podcast.research":     {args: []string{"topic"}, cost: 0.12, run: podcastResearch},
	"podcast.write_script": {cost: 0.20, run: podcastWriteScript},
	"podcast.evaluate":     {args: []string{"passes_at_draft", "threshold"}, cost: 0.05, run: podcastEvaluate},
	"podcast.synthesize":   {cost: 0.30, run: podcastSynthesize},

	"story.elements": {cost: 0.04, run: storyElements},
	"story.outline":  {args: []string{"chapters", "scenes"}, cost: 0.06, run: storyOutline},
	"story.chapter":  {args: []string{"n"}, cost: 0.10, units: true, run: storyChapter},
	"story.ending":   {cost: 0.08, run: storyEnding},

	"essay.thesis":    {cost: 0.03, run: essayThesis},
	"essay.outline":   {cost: 0.04, run: essayOutlineSkill},
	"essay.arguments": {cost: 0.06, run: essayArguments},
	"essay.draft":     {cost: 0.10, run: essayDraft},

	"study.collect":  {cost: 0.01, run: studyCollect},
	"study.ingest":   {args: []string{"chunk_lines"}, cost: 0.02, units: true, run: studyIngest},
	"study.estimate": {cost: 0.02, run: studyEstimate},
	"study.plan":     {cost: 0.03, run: studyPlan},
	"study.review":   {cost: 0.02, run: studyReview},
	"study.publish":  {cost: 0.01, run: studyPublish},
}

// knobs are the arguments every skill takes.
var knobs = []string{"cost", "delay", "fail_attempts", "crash_after_chunks"}

// Skills lists the skills, sorted.
func Skills() []string {
	out := make([]string, 0, len(skills))
	for s := range skills {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Command is a parsed command line.
type Command struct {
	Skill string
	Args  map[string]string
	// Feedback is the task's feedback (sdk.Task.Feedback): a quality
	// gate's report, or a revisit's reason. Parse leaves it empty.
	Feedback string
	Cost     float64
	Delay    time.Duration
	// FailAttempts and CrashAfterChunks are the knobs of the same names;
	// 0 when unset.
	FailAttempts     int
	CrashAfterChunks int
}

// Parse finds the command line in a prompt and reads it.
func Parse(prompt string) (Command, error) {
	var line string
	for l := range strings.SplitSeq(prompt, "\n") {
		f := strings.Fields(l)
		if len(f) > 0 {
			if _, ok := skills[f[0]]; ok {
				line = strings.TrimSpace(l)
				break
			}
		}
	}
	if line == "" {
		return Command{}, fmt.Errorf("workshop: no command in the prompt; start a line with one of %s, as in \"podcast.research topic=tides\"", strings.Join(Skills(), ", "))
	}
	words, err := split(line)
	if err != nil {
		return Command{}, fmt.Errorf("workshop: %q: %w", line, err)
	}
	c := Command{Skill: words[0], Args: make(map[string]string)}
	sk := skills[c.Skill]
	c.Cost = sk.cost
	for _, w := range words[1:] {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" {
			return c, fmt.Errorf("workshop: %s: argument %q is not key=value", c.Skill, w)
		}
		if !slices.Contains(sk.args, k) && !slices.Contains(knobs, k) {
			return c, fmt.Errorf("workshop: %s takes no argument %q; it takes %s", c.Skill, k, strings.Join(slices.Concat(sk.args, knobs), ", "))
		}
		c.Args[k] = v
	}
	if v, ok := c.Args["cost"]; ok {
		if c.Cost, err = strconv.ParseFloat(v, 64); err != nil || c.Cost < 0 {
			return c, fmt.Errorf("workshop: cost=%s: want a number of at least 0, such as cost=0.02", v)
		}
	}
	if v, ok := c.Args["delay"]; ok {
		if c.Delay, err = time.ParseDuration(v); err != nil || c.Delay < 0 {
			return c, fmt.Errorf("workshop: delay=%s: want a duration, such as delay=200ms", v)
		}
	}
	for _, k := range []struct {
		name string
		to   *int
	}{{"fail_attempts", &c.FailAttempts}, {"crash_after_chunks", &c.CrashAfterChunks}} {
		if v, ok := c.Args[k.name]; ok {
			if *k.to, err = strconv.Atoi(v); err != nil || *k.to < 0 {
				return c, fmt.Errorf("workshop: %s=%s: want a whole number of at least 0", k.name, v)
			}
		}
	}
	return c, nil
}

// split cuts a command line into words; a double-quoted value keeps its
// spaces (key="two words").
func split(line string) ([]string, error) {
	var (
		out    []string
		b      strings.Builder
		quote  bool
		inWord bool
	)
	for _, r := range line {
		switch {
		case r == '"':
			quote = !quote
			inWord = true
		case !quote && (r == ' ' || r == '\t'):
			if inWord {
				out = append(out, b.String())
				b.Reset()
				inWord = false
			}
		default:
			b.WriteRune(r)
			inWord = true
		}
	}
	if quote {
		return nil, errors.New("a quote is not closed")
	}
	if inWord {
		out = append(out, b.String())
	}
	return out, nil
}

// work is one task being carried out: the command, the host, and what the
// skill learned.
type work struct {
	ctx context.Context
	t   sdk.Task
	cb  sdk.Callbacks
	// run reaches the task's run; nil outside one.
	run     sdk.RunCallbacks
	cmd     Command
	a       *Agent
	metrics map[string]float64
	art     sdk.ContextArtifact
}

// Run implements sdk.Agent.
func (a *Agent) Run(ctx context.Context, t sdk.Task, cb sdk.Callbacks) (sdk.Result, error) {
	cmd, err := Parse(t.Prompt)
	if err != nil {
		return sdk.Result{}, sdk.Permanent(err)
	}
	cmd.Feedback = strings.TrimSpace(t.Feedback)
	attempt := max(t.Attempt, 1)
	w := &work{ctx: ctx, t: t, cb: cb, cmd: cmd, a: a, metrics: make(map[string]float64)}
	w.run, _ = cb.(sdk.RunCallbacks)
	if !skills[cmd.Skill].units {
		if err := w.pause(); err != nil {
			return sdk.Result{}, err
		}
	}
	if attempt <= cmd.FailAttempts {
		// A failed attempt still costs what it spent.
		if err := cb.ReportProgress(ctx, sdk.Progress{Message: "failing, as the prompt asks", Cost: cmd.Cost}); err != nil {
			return sdk.Result{}, err
		}
		return sdk.Result{}, fmt.Errorf("workshop: %s: attempt %d fails, as fail_attempts=%d asks (a stand-in for a 429 rate limit)", cmd.Skill, attempt, cmd.FailAttempts)
	}
	out, err := skills[cmd.Skill].run(w)
	if err != nil {
		return sdk.Result{}, err
	}
	w.metrics["words"] = float64(len(strings.Fields(out)))
	return sdk.Result{Output: out, Metrics: w.metrics, Cost: cmd.Cost, Artifact: w.art}, nil
}

// pause waits the delay knob, or until the task is cancelled.
func (w *work) pause() error {
	if w.cmd.Delay <= 0 {
		return w.ctx.Err()
	}
	t := time.NewTimer(w.cmd.Delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-w.ctx.Done():
		return w.ctx.Err()
	}
}

// attempt is the task's attempt number, 1 on the first.
func (w *work) attempt() int { return max(w.t.Attempt, 1) }

// round is the task's round: 1, then one more each time a quality gate or
// a revisit sent the work back to it (the n of its idempotency key
// run/task/n). Outside a run it is 1.
func (w *work) round() int {
	if i := strings.LastIndexByte(w.t.IdempotencyKey, '/'); i >= 0 {
		if n, err := strconv.Atoi(w.t.IdempotencyKey[i+1:]); err == nil && n > 0 {
			return n
		}
	}
	return 1
}

// arg returns the argument key, or def.
func (w *work) arg(key, def string) string {
	if v, ok := w.cmd.Args[key]; ok && v != "" {
		return v
	}
	return def
}

// intArg returns the whole-number argument key, or def.
func (w *work) intArg(key string, def int) (int, error) {
	v, ok := w.cmd.Args[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, sdk.Permanent(fmt.Errorf("workshop: %s: %s=%s: want a whole number of at least 1", w.cmd.Skill, key, v))
	}
	return n, nil
}

// load reads state section into v and reports whether it was set. A task
// outside a run sees an empty document.
func (w *work) load(section string, v any) (bool, error) {
	if w.run == nil {
		return false, nil
	}
	b, err := w.run.State(w.ctx, section)
	if err != nil {
		return false, err
	}
	if len(b) == 0 || string(b) == "null" {
		return false, nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, sdk.Permanent(fmt.Errorf("workshop: %s: state section %s is not what it expects: %w", w.cmd.Skill, section, err))
	}
	return true, nil
}

// save writes state section; outside a run it does nothing.
func (w *work) save(section string, v any) error {
	if w.run == nil {
		return nil
	}
	return w.run.SetState(w.ctx, section, v)
}

// checkpoint asks for a checkpoint; outside a run it does nothing.
func (w *work) checkpoint(label string) error {
	if w.run == nil {
		return nil
	}
	_, err := w.run.Checkpoint(w.ctx, label)
	return err
}

// files lists the run's files; outside a run there are none.
func (w *work) files() ([]sdk.File, error) {
	if w.run == nil {
		return nil, nil
	}
	return w.run.Files(w.ctx)
}

// use asks the host about a tool use of path, does it with do (nil for a
// file the skill only pretends to write), and reports it. A denied use
// fails the task for good: the skill cannot do without it.
func (w *work) use(tool string, kind sdk.ToolKind, path string, do func() error) error {
	call := sdk.ToolCall{CallID: sdk.NewID("call"), Tool: tool, Kind: kind, Paths: []string{path}}
	v, err := w.cb.CheckToolUse(w.ctx, call)
	if err != nil {
		return err
	}
	u := sdk.ToolUse{CallID: call.CallID, Tool: tool, Kind: kind, Paths: []string{path}, Technologies: []string{"markdown"}, Outcome: sdk.OutcomeOK}
	if !v.Allow {
		u.Outcome, u.Error = sdk.OutcomeDenied, v.Reason
		if err := w.cb.ReportToolUse(w.ctx, u); err != nil {
			return err
		}
		return sdk.Permanent(fmt.Errorf("workshop: %s: %w", w.cmd.Skill, &sdk.DeniedError{Tool: tool, Paths: []string{path}, Guard: v.Guard, Reason: v.Reason}))
	}
	var derr error
	if do != nil {
		start := time.Now()
		derr = do()
		u.Duration = time.Since(start)
		if derr != nil {
			u.Outcome, u.Error = sdk.OutcomeError, derr.Error()
		}
	}
	if err := w.cb.ReportToolUse(w.ctx, u); err != nil {
		return err
	}
	return derr
}

// wrote reports a Write of a (virtual) file, asked about first, and lists
// it in the artifact.
func (w *work) wrote(path string) error {
	if err := w.use("Write", sdk.KindWrite, path, nil); err != nil {
		return err
	}
	w.art.ModifiedFiles = append(w.art.ModifiedFiles, path)
	return nil
}

// pick chooses one of options by a hash of key: the same key, the same
// choice.
func pick(key string, options []string) string {
	h := fnv.New32a()
	h.Write([]byte(key))
	return options[int(h.Sum32()%uint32(len(options)))]
}

// recommendations returns the "- " lines of a feedback report's
// "Recommendations:" list.
func recommendations(feedback string) []string {
	_, rest, ok := strings.Cut(feedback, "Recommendations:")
	if !ok {
		return nil
	}
	var out []string
	for l := range strings.SplitSeq(rest, "\n") {
		l = strings.TrimSpace(l)
		if s, ok := strings.CutPrefix(l, "- "); ok {
			out = append(out, s)
		} else if l != "" && len(out) > 0 {
			break
		}
	}
	return out
}

// revisitReason is the reason a person gave when revisiting the task,
// from feedback "This task is revisited: REASON".
func revisitReason(feedback string) string {
	_, r, ok := strings.Cut(feedback, "This task is revisited")
	if !ok {
		return ""
	}
	r = strings.TrimPrefix(r, ":")
	line, _, _ := strings.Cut(r, "\n")
	return strings.TrimSpace(line)
}

func round2(f float64) float64 { return float64(int(f*100+0.5)) / 100 }

var _ sdk.Agent = (*Agent)(nil)
