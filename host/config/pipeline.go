package config

import (
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/contextchain"
	"github.com/hearth-dev/hearth/internal/hclspot"
	"github.com/hearth-dev/hearth/internal/text"
	"github.com/hearth-dev/hearth/sdk"
)

type rawPipeline struct {
	Name          string            `hcl:"name,label"`
	Description   *string           `hcl:"description,optional"`
	Parallel      *int              `hcl:"parallel,optional"`
	Agent         *string           `hcl:"agent,optional"`
	Budget        *float64          `hcl:"budget,optional"`
	OnFailure     *string           `hcl:"on_failure,optional"`
	Files         []string          `hcl:"files,optional"`
	RequireChecks *bool             `hcl:"require_checks,optional"`
	Retry         *rawRetry         `hcl:"retry,block"`
	Context       *rawContext       `hcl:"context,block"`
	State         *rawState         `hcl:"state,block"`
	Retention     *rawRetention     `hcl:"retention,block"`
	Tasks         []rawPipelineTask `hcl:"task,block"`
	Stages        []rawStage        `hcl:"stage,block"`
	Body          hcl.Body          `hcl:",body"`
	DefRange      hcl.Range         `hcl:",def_range"`
}

type rawRetry struct {
	Attempts   *int     `hcl:"attempts,optional"`
	Backoff    *string  `hcl:"backoff,optional"`
	MaxBackoff *string  `hcl:"max_backoff,optional"`
	Body       hcl.Body `hcl:",body"`
}

type rawContext struct {
	Budget   *int     `hcl:"budget,optional"`
	Template *string  `hcl:"template,optional"`
	Body     hcl.Body `hcl:",body"`
}

type rawState struct {
	Initial hcl.Expression `hcl:"initial,optional"`
	Owners  []rawOwner     `hcl:"owner,block"`
	Body    hcl.Body       `hcl:",body"`
}

type rawOwner struct {
	Agent    string    `hcl:"agent,label"`
	Reads    []string  `hcl:"reads,optional"`
	Writes   []string  `hcl:"writes,optional"`
	Body     hcl.Body  `hcl:",body"`
	DefRange hcl.Range `hcl:",def_range"`
}

type rawRetention struct {
	PauseAfter   *string  `hcl:"pause_after,optional"`
	AbandonAfter *string  `hcl:"abandon_after,optional"`
	DeleteAfter  *string  `hcl:"delete_after,optional"`
	Body         hcl.Body `hcl:",body"`
}

// rawStage is a stage block: its settings are the vocabulary's
// (hearth.StageSettings), decoded by name (stages), so that a new one
// needs no change here.
type rawStage struct {
	Name     string    `hcl:"name,label"`
	Body     hcl.Body  `hcl:",remain"`
	DefRange hcl.Range `hcl:",def_range"`
}

type rawPipelineTask struct {
	Name         string         `hcl:"name,label"`
	Agent        *string        `hcl:"agent,optional"`
	Prompt       string         `hcl:"prompt"`
	Files        []string       `hcl:"files,optional"`
	Directories  []string       `hcl:"directories,optional"`
	Technologies []string       `hcl:"technologies,optional"`
	DependsOn    []string       `hcl:"depends_on,optional"`
	Stage        *string        `hcl:"stage,optional"`
	Metadata     hcl.Expression `hcl:"metadata,optional"`
	Attempts     *int           `hcl:"attempts,optional"`
	OnFailure    *string        `hcl:"on_failure,optional"`
	Body         hcl.Body       `hcl:",body"`
	DefRange     hcl.Range      `hcl:",def_range"`
}

func (v *validator) pipeline(rp *rawPipeline, cfg *Config) *hearth.Pipeline {
	p := &hearth.Pipeline{Name: rp.Name, Parallel: 1}
	at := func(name string) hcl.Range { return hclspot.Attr(rp.Body, name, rp.DefRange) }
	if rp.Description != nil {
		p.Description = *rp.Description
	}
	if rp.Parallel != nil {
		p.Parallel = *rp.Parallel
		if p.Parallel < 1 {
			v.errorf(at("parallel"), "Invalid parallelism", "parallel is how many tasks run at once; it must be at least 1 (got %d). Remove it for the default, 1.", p.Parallel)
		}
	}
	if rp.Budget != nil {
		p.Budget = *rp.Budget
		if p.Budget < 0 {
			v.errorf(at("budget"), "Invalid budget", "budget caps the run's total cost; it must be positive (got %g). Remove it for no cap.", p.Budget)
		}
	}
	p.OnFailure = v.onFailure(rp.OnFailure, at("on_failure"))
	if rp.RequireChecks != nil {
		p.RequireChecks = *rp.RequireChecks
	}
	for i, f := range rp.Files {
		path := v.path(f)
		fat := hclspot.Elem(rp.Body, "files", i, rp.DefRange)
		if fi, err := os.Stat(path); err != nil {
			if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
				err = pe.Err
			}
			v.errorf(fat, "Missing file", "Pipeline %q attaches %q (%s) to its runs, but it cannot be read: %v. Fix the path (a relative one is read from the config file's directory), or remove it from files.", rp.Name, f, path, err)
		} else if !fi.Mode().IsRegular() {
			v.errorf(fat, "Not a file", "Pipeline %q attaches %q to its runs, but it is not a regular file. List the files themselves; a directory is not attached.", rp.Name, f)
		}
		p.Files = append(p.Files, path)
	}
	v.retry(rp, p)
	v.context(rp, p)
	v.state(rp, p, cfg)
	v.retention(rp, p)
	if len(rp.Tasks) == 0 {
		v.errorf(rp.DefRange, "Empty pipeline", "Pipeline %q has no tasks; add a task block, such as task \"first\" { prompt = \"...\" }, with agent = \"...\" in it or in the pipeline.", rp.Name)
	}
	agents := make([]string, 0, len(cfg.Agents))
	for _, a := range cfg.Agents {
		agents = append(agents, a.Name)
	}
	byName := make(map[string]*rawPipelineTask)
	for i := range rp.Tasks {
		rt := &rp.Tasks[i]
		tat := func(name string) hcl.Range { return hclspot.Attr(rt.Body, name, rt.DefRange) }
		if prev, dup := byName[rt.Name]; dup {
			v.errorf(rt.DefRange, "Duplicate task", "Pipeline %q already has a task named %q, at %s. Give each task its own name: dependencies, guards and run events refer to tasks by name.", rp.Name, rt.Name, prev.DefRange)
			continue
		}
		byName[rt.Name] = rt
		if !hearth.ValidName(rt.Name) {
			v.errorf(rt.DefRange, "Invalid task name", "Task name %q must be made of %s: it is part of the task's idempotency key. Rename it, as in task \"write_script\".", rt.Name, hearth.NameRule)
		}
		t := &hearth.PipelineTask{
			Name: rt.Name, Prompt: rt.Prompt, DependsOn: rt.DependsOn, Metadata: v.metadata(rt),
			Hints: sdk.Hints{Files: rt.Files, Directories: rt.Directories, Technologies: rt.Technologies},
		}
		switch {
		case rt.Agent != nil:
			t.Agent = *rt.Agent
		case rp.Agent != nil:
			t.Agent = *rp.Agent
		}
		agentAt := tat("agent")
		if rt.Agent == nil && rp.Agent != nil {
			agentAt = at("agent")
		}
		switch {
		case t.Agent == "":
			v.errorf(rt.DefRange, "Task without an agent", "Task %q names no agent: set agent = \"<name>\" in the task, or in the pipeline for all its tasks. Agents: %s.", rt.Name, text.OrNone(agents))
		case cfg.Agent(t.Agent) == nil:
			v.errorf(agentAt, "Unknown agent", "There is no agent named %q%s. Agents: %s.", t.Agent, text.Suggest(t.Agent, agents), text.OrNone(agents))
		case cfg.Agent(t.Agent).External != "":
			v.errorf(agentAt, "Task for an external agent", "Agent %q is external: hearth follows its sessions through hooks but cannot run tasks on them. Give task %q an agent hearth runs: %s.", t.Agent, rt.Name, text.OrNone(agentNames(cfg, false)))
		}
		if strings.TrimSpace(t.Prompt) == "" {
			v.errorf(tat("prompt"), "Empty prompt", "Task %q has an empty prompt; say what the agent should do.", rt.Name)
		}
		if rt.Stage != nil {
			t.Stage = *rt.Stage
			if msg := hearth.StageProblem(t.Stage); msg != "" {
				v.errorf(tat("stage"), "Invalid stage", "Task %q: %s.", rt.Name, msg)
			}
		}
		if rt.Attempts != nil {
			t.Attempts = *rt.Attempts
			if t.Attempts < 1 {
				v.errorf(tat("attempts"), "Invalid attempts", "attempts is how many times the task is tried in all, 1 meaning no retry; it must be at least 1 (got %d). Remove it to use the pipeline's retry.attempts.", t.Attempts)
			}
		}
		if rt.OnFailure != nil {
			t.OnFailure = v.onFailure(rt.OnFailure, tat("on_failure"))
		}
		p.Tasks = append(p.Tasks, t)
	}
	v.stages(rp, p)
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, t := range p.Tasks {
		rt := byName[t.Name]
		for i, d := range t.DependsOn {
			dat := hclspot.Elem(rt.Body, "depends_on", i, rt.DefRange)
			switch {
			case d == t.Name:
				v.errorf(dat, "Task depends on itself", "Task %q lists itself in depends_on; remove it.", t.Name)
			case byName[d] == nil:
				others := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == t.Name })
				v.errorf(dat, "Unknown dependency", "Task %q depends on %q, which is not a task of pipeline %q%s. Its other tasks: %s.", t.Name, d, rp.Name, text.Suggest(d, others), text.OrNone(others))
			}
		}
	}
	if cycle := hearth.FindCycle(p.Tasks); cycle != nil {
		// Point at the dependency that closes the circle: cycle[0]'s on
		// cycle[1].
		rt := byName[cycle[0]]
		next := cycle[1%len(cycle)]
		v.errorf(hclspot.Elem(rt.Body, "depends_on", slices.Index(p.Task(cycle[0]).DependsOn, next), rt.DefRange), "Dependency cycle",
			"The tasks of pipeline %q depend on each other in a circle: %s. Remove one of these dependencies.", rp.Name, strings.Join(append(cycle, cycle[0]), " -> "))
	}
	if rp.State != nil && !v.partial {
		// The raw blocks, not p.State.Owners, which skips duplicates: its
		// indexes are not the blocks'. A task that did not decode may
		// have lost its agent, so with errors already found this could
		// only add a wrong one.
		reported := make(map[string]bool)
		for _, ro := range rp.State.Owners {
			if reported[ro.Agent] || cfg.Agent(ro.Agent) == nil || slices.ContainsFunc(p.Tasks, func(t *hearth.PipelineTask) bool { return t.Agent == ro.Agent }) {
				continue
			}
			reported[ro.Agent] = true
			v.errorf(ro.DefRange, "Owner of no task", "Agent %q owns state sections of pipeline %q but runs none of its tasks. Remove the owner block, or check the agent's name.", ro.Agent, rp.Name)
		}
	}
	return p
}

// stages decodes the pipeline's stage blocks against the vocabulary's
// table of their settings (hearth.StageSettings): each attribute is
// parsed, from its value as a string, by the setting of its name.
func (v *validator) stages(rp *rawPipeline, p *hearth.Pipeline) {
	used := p.TaskStages()
	settings := hearth.StageSettings()
	first := make(map[string]*rawStage, len(rp.Stages))
	for i := range rp.Stages {
		rs := &rp.Stages[i]
		if prev := first[rs.Name]; prev != nil {
			v.errorf(rs.DefRange, "Duplicate stage block", "Pipeline %q already has a block for stage %q, at %s. Merge the two: a stage has one block.", rp.Name, rs.Name, prev.DefRange)
			continue
		}
		first[rs.Name] = rs
		switch {
		case hearth.StageProblem(rs.Name) != "":
			v.errorf(rs.DefRange, "Invalid stage name", "Stage block %q: %s.", rs.Name, hearth.StageProblem(rs.Name))
		case !slices.Contains(used, rs.Name) && !v.partial:
			// With errors found already, a task that did not decode may
			// be the one that names it.
			v.errorf(rs.DefRange, "Stage of no task", "Pipeline %q has a block for stage %q, which none of its tasks names%s. The stages its tasks name: %s. Name it in a task (stage = %q), or remove the block.",
				rp.Name, rs.Name, text.Suggest(rs.Name, used), text.OrNone(used), rs.Name)
		}
		st := &hearth.Stage{Name: rs.Name}
		attrs, diags := rs.Body.JustAttributes()
		v.diags = append(v.diags, diags...)
		// In the file's order: diagnostics come out the same on every run.
		list := slices.SortedFunc(maps.Values(attrs), func(a, b *hcl.Attribute) int { return a.Range.Start.Byte - b.Range.Start.Byte })
		for _, a := range list {
			i := slices.IndexFunc(settings, func(set hearth.StageSetting) bool { return set.Name == a.Name })
			if i < 0 {
				v.errorf(a.NameRange, "Unknown stage setting", "A stage block has no setting %q%s. Its settings: %s.", a.Name, text.Suggest(a.Name, hearth.StageSettingNames()), stageSettingsDoc(settings))
				continue
			}
			set := settings[i]
			val, d := a.Expr.Value(evalContext())
			v.diags = append(v.diags, d...)
			if d.HasErrors() {
				continue
			}
			str, err := convert.Convert(val, cty.String)
			if err != nil || str.IsNull() || !str.IsKnown() {
				v.errorf(a.Expr.Range(), "Invalid stage setting", "Stage %q: %s is written as a string: %s; got a value of type %s.", rs.Name, set.Name, set.Doc, val.Type().FriendlyName())
				continue
			}
			if err := set.Parse(st, str.AsString()); err != nil {
				v.errorf(a.Expr.Range(), "Invalid stage setting", "Stage %q: %v.", rs.Name, err)
				continue
			}
			if set.Check != nil {
				if msg := set.Check(st); msg != "" {
					v.errorf(a.Expr.Range(), "Invalid stage setting", "Stage %q: %s.", rs.Name, msg)
				}
			}
		}
		p.Stages = append(p.Stages, st)
	}
}

// stageSettingsDoc lists a stage block's settings with what each does.
func stageSettingsDoc(settings []hearth.StageSetting) string {
	out := make([]string, len(settings))
	for i, set := range settings {
		out[i] = set.Name + " (" + set.Doc + ")"
	}
	return strings.Join(out, "; ")
}

// metadata decodes a task's metadata: strings by name, passed to the
// agent. Numbers and bools are written as strings; anything else is an
// error that names the entry.
func (v *validator) metadata(rt *rawPipelineTask) map[string]string {
	if rt.Metadata == nil {
		return nil
	}
	val, diags := rt.Metadata.Value(evalContext())
	v.diags = append(v.diags, diags...)
	if diags.HasErrors() || val.IsNull() {
		return nil
	}
	r := rt.Metadata.Range()
	example := "as in metadata = { episode = \"12\", tone = \"calm\" }"
	if !val.Type().IsObjectType() && !val.Type().IsMapType() {
		v.errorf(r, "Invalid metadata", "Task %q: metadata is a map of strings passed to the agent, %s; got a value of type %s.", rt.Name, example, val.Type().FriendlyName())
		return nil
	}
	out := make(map[string]string, val.LengthInt())
	// In key order: diagnostics come out the same on every run.
	entries := val.AsValueMap()
	for _, k := range slices.Sorted(maps.Keys(entries)) {
		e := entries[k]
		if e.IsNull() {
			v.errorf(entryRange(rt.Metadata, k), "Invalid metadata", "Task %q: metadata %q has no value; give it a string, or remove it.", rt.Name, k)
			continue
		}
		s, err := convert.Convert(e, cty.String)
		if err != nil {
			v.errorf(entryRange(rt.Metadata, k), "Invalid metadata", "Task %q: metadata %q is of type %s; metadata values are strings (numbers and bools are written as strings), %s.", rt.Name, k, e.Type().FriendlyName(), example)
			continue
		}
		out[k] = s.AsString()
	}
	return out
}

// entryRange is where the value of key is in an object written in the
// file, or the whole expression's range.
func entryRange(e hcl.Expression, key string) hcl.Range {
	if o, ok := e.(*hclsyntax.ObjectConsExpr); ok {
		for _, item := range o.Items {
			k, diags := item.KeyExpr.Value(nil)
			if !diags.HasErrors() && k.IsKnown() && !k.IsNull() && k.Type() == cty.String && k.AsString() == key {
				return item.ValueExpr.Range()
			}
		}
	}
	return e.Range()
}

func (v *validator) onFailure(s *string, r hcl.Range) hearth.OnFailure {
	if s == nil {
		return hearth.DefaultOnFailure
	}
	switch f := hearth.OnFailure(*s); f {
	case hearth.OnFailureFail, hearth.OnFailurePause:
		return f
	}
	v.errorf(r, "Invalid escalation", "on_failure must be %q (the run fails; it can be resumed once the cause is fixed) or %q (the run pauses for a person); got %q%s.", hearth.OnFailureFail, hearth.OnFailurePause, *s, text.Suggest(*s, []string{string(hearth.OnFailureFail), string(hearth.OnFailurePause)}))
	return hearth.DefaultOnFailure
}

func (v *validator) retry(rp *rawPipeline, p *hearth.Pipeline) {
	p.Retry = hearth.Retry{Attempts: hearth.DefaultRetryAttempts, Backoff: hearth.DefaultRetryBackoff, MaxBackoff: hearth.DefaultMaxBackoff}
	r := rp.Retry
	if r == nil {
		return
	}
	at := func(name string) hcl.Range { return hclspot.Attr(r.Body, name, hclspot.Block(r.Body, rp.DefRange)) }
	if r.Attempts != nil {
		p.Retry.Attempts = *r.Attempts
		if p.Retry.Attempts < 1 {
			v.errorf(at("attempts"), "Invalid attempts", "attempts is how many times a task is tried in all, 1 meaning no retry; it must be at least 1 (got %d). Remove it for the default, %d.", p.Retry.Attempts, hearth.DefaultRetryAttempts)
		}
	}
	// An invalid duration is reported already; compared as its default,
	// it would add a second, misleading error.
	n := len(v.diags)
	p.Retry.Backoff = v.duration(r.Backoff, at("backoff"), "backoff", p.Retry.Backoff)
	p.Retry.MaxBackoff = v.duration(r.MaxBackoff, at("max_backoff"), "max_backoff", max(p.Retry.MaxBackoff, p.Retry.Backoff))
	if len(v.diags) == n && p.Retry.MaxBackoff < p.Retry.Backoff {
		v.errorf(at("max_backoff"), "Invalid backoff", "max_backoff (%s) is shorter than backoff (%s): the wait doubles from backoff up to max_backoff. Raise max_backoff, or lower backoff.", p.Retry.MaxBackoff, p.Retry.Backoff)
	}
}

func (v *validator) context(rp *rawPipeline, p *hearth.Pipeline) {
	p.Context = hearth.Context{Budget: hearth.DefaultContextBudget}
	c := rp.Context
	if c == nil {
		return
	}
	at := func(name string) hcl.Range { return hclspot.Attr(c.Body, name, hclspot.Block(c.Body, rp.DefRange)) }
	if c.Budget != nil {
		p.Context.Budget = *c.Budget
		if p.Context.Budget == 0 {
			v.errorf(at("budget"), "Invalid context budget", "budget caps the context block in bytes; 0 would leave no room for it. Give a positive number, -1 for no cap, or remove it for the default, %d.", hearth.DefaultContextBudget)
		}
	}
	if c.Template != nil {
		p.Context.Template = *c.Template
		if err := checkTemplate(p.Context.Template); err != nil {
			var te *contextchain.TemplateError
			r := at("template")
			sb, ok := c.Body.(*hclsyntax.Body)
			if errors.As(err, &te) && te.Line > 0 && ok && sb.Attributes["template"] != nil {
				// Point at the start of the template's line where it is in
				// the file: a quoted string's lines are \n escapes on one
				// line, a heredoc's start below the <<, and a <<- heredoc
				// strips indentation. conditionPos walks all of them.
				pos := conditionPos(sb.Attributes["template"].Expr, v.src, lineOffset(p.Context.Template, te.Line))
				end := pos
				end.Column++
				end.Byte++
				r = hcl.Range{Filename: pos.Filename, Start: pos.Pos, End: end.Pos}
			}
			v.errorf(r, "Invalid context template", "%v", err)
		}
	}
}

// lineOffset is the offset, in runes, of the start of the line-th line
// (1-based) of text; past the last line, the end of text.
func lineOffset(text string, line int) int {
	n := 0
	for _, c := range text {
		if line <= 1 {
			break
		}
		if c == '\n' {
			line--
		}
		n++
	}
	return n
}

func (v *validator) state(rp *rawPipeline, p *hearth.Pipeline, cfg *Config) {
	s := rp.State
	if s == nil {
		return
	}
	if s.Initial != nil {
		val, diags := s.Initial.Value(evalContext())
		v.diags = append(v.diags, diags...)
		switch {
		case diags.HasErrors(), val.IsNull():
		case !val.Type().IsObjectType() && !val.Type().IsMapType():
			v.errorf(s.Initial.Range(), "Invalid initial state", "initial is the state document's first value: an object of sections, as in initial = { inputs = { topic = \"...\" } }.")
		default:
			p.State.Initial = make(map[string]json.RawMessage)
			for k, sec := range val.AsValueMap() {
				b, err := ctyjson.SimpleJSONValue{Value: sec}.MarshalJSON()
				if err != nil {
					v.errorf(s.Initial.Range(), "Invalid initial state", "Section %q cannot be written as JSON: %v.", k, err)
					continue
				}
				p.State.Initial[k] = b
			}
		}
	}
	agents := make([]string, 0, len(cfg.Agents))
	for _, a := range cfg.Agents {
		agents = append(agents, a.Name)
	}
	seen := make(map[string]bool)
	for i := range s.Owners {
		ro := &s.Owners[i]
		if seen[ro.Agent] {
			v.errorf(ro.DefRange, "Duplicate owner", "Agent %q already has an owner block in pipeline %q; merge them.", ro.Agent, rp.Name)
			continue
		}
		seen[ro.Agent] = true
		if cfg.Agent(ro.Agent) == nil {
			v.errorf(ro.DefRange, "Unknown agent", "Owner block names agent %q, which is not configured%s. Agents: %s.", ro.Agent, text.Suggest(ro.Agent, agents), text.OrNone(agents))
		}
		o := &hearth.Owner{Agent: ro.Agent, Reads: ro.Reads, Writes: ro.Writes}
		for _, list := range []struct {
			name     string
			sections []string
		}{{"reads", ro.Reads}, {"writes", ro.Writes}} {
			for j, sec := range list.sections {
				if strings.TrimSpace(sec) == "" {
					v.errorf(hclspot.Elem(ro.Body, list.name, j, ro.DefRange), "Empty section", "Owner %q names an empty section in %s; sections are the top-level keys of the state document, as in %s = [\"notes\"].", ro.Agent, list.name, list.name)
				}
			}
		}
		p.State.Owners = append(p.State.Owners, o)
	}
	if sec, first, i, j, ok := p.State.SharedWrite(); ok {
		// p.State.Owners skips duplicate blocks: find the raw one.
		ro := &s.Owners[slices.IndexFunc(s.Owners, func(ro rawOwner) bool { return ro.Agent == p.State.Owners[i].Agent })]
		v.errorf(hclspot.Elem(ro.Body, "writes", j, ro.DefRange), "Shared section", "Section %q of pipeline %q's state is written by both %q and %q; a section has one owner, the agent that writes it, and others read it. Keep it in one owner's writes (the other can list it in reads), or split it into two sections.", sec, rp.Name, first, ro.Agent)
	}
}

func (v *validator) retention(rp *rawPipeline, p *hearth.Pipeline) {
	p.Retention = hearth.Retention{PauseAfter: hearth.DefaultPauseAfter, AbandonAfter: hearth.DefaultAbandonAfter}
	r := rp.Retention
	if r == nil {
		return
	}
	at := func(name string) hcl.Range { return hclspot.Attr(r.Body, name, hclspot.Block(r.Body, rp.DefRange)) }
	// As for retry: an invalid duration taken as its default would make
	// a misleading second error about the order.
	n := len(v.diags)
	p.Retention.PauseAfter = v.optDuration(r.PauseAfter, at("pause_after"), "pause_after", p.Retention.PauseAfter)
	p.Retention.AbandonAfter = v.optDuration(r.AbandonAfter, at("abandon_after"), "abandon_after", p.Retention.AbandonAfter)
	p.Retention.DeleteAfter = v.optDuration(r.DeleteAfter, at("delete_after"), "delete_after", 0)
	if field, problem := p.Retention.Check(); problem != "" && len(v.diags) == n {
		v.errorf(at(field), "Invalid retention", "%s. Each step counts idle time from the run's last activity: make pause_after < abandon_after < delete_after, or turn a step off with \"0\".", problem)
	}
	if p.Retention == (hearth.Retention{}) {
		// Every step off; the zero hearth.Retention would mean the defaults.
		p.Retention = hearth.RetentionOff
	}
}

// optDuration is duration for settings where "0" turns the step off. Any
// zero duration ("0s", "0h") does too, and the errors say how to.
func (v *validator) optDuration(s *string, r hcl.Range, name string, def time.Duration) time.Duration {
	if s == nil {
		return def
	}
	d, err := time.ParseDuration(strings.TrimSpace(*s))
	switch {
	case err != nil:
		v.errorf(r, "Invalid duration", "%s must be a duration such as \"12h\" or \"168h\", or \"0\" to turn this step off; %q is not one%s.", name, *s, text.DaysHint(*s))
		return def
	case d < 0:
		v.errorf(r, "Invalid duration", "%s must be positive, or \"0\" to turn this step off (got %q).", name, *s)
		return def
	}
	return d
}

// checkTemplate checks that a context template parses, the way the run
// engine builds its renderer from it.
func checkTemplate(tmpl string) error {
	_, err := contextchain.New(contextchain.WithTemplate(tmpl))
	return err
}
