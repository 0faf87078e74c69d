package config

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/internal/hclspot"
	"github.com/hearth-dev/hearth/internal/text"
)

// rawGuard is a `guard "name" { ... }` block.
type rawGuard struct {
	Name      string         `hcl:"name,label"`
	Hook      string         `hcl:"hook"`
	Condition hcl.Expression `hcl:"condition"`
	Action    *string        `hcl:"action,optional"`
	Message   *string        `hcl:"message,optional"`
	BackTo    *string        `hcl:"back_to,optional"`
	MaxLoops  *int           `hcl:"max_loops,optional"`
	Agents    []string       `hcl:"agents,optional"`
	Tasks     []string       `hcl:"tasks,optional"`
	From      []string       `hcl:"from,optional"`
	To        []string       `hcl:"to,optional"`
	Body      hcl.Body       `hcl:",body"`
	DefRange  hcl.Range      `hcl:",def_range"`
}

// rawGuardPaths is the `guards { ... }` block: how every guard reads
// the paths of tool calls (guard.PathPolicy).
type rawGuardPaths struct {
	CaseSensitive      *bool               `hcl:"case_sensitive,optional"`
	SearchesSkipHidden *bool               `hcl:"searches_skip_hidden,optional"`
	Shell              *string             `hcl:"shell,optional"`
	PathFields         map[string][]string `hcl:"path_fields,optional"`
	Body               hcl.Body            `hcl:",body"`
	DefRange           hcl.Range           `hcl:",def_range"`
}

// guardPaths reads the guards block into cfg.GuardPaths, and makes the
// Resolver the file's guards are compiled with.
func (v *validator) guardPaths(raw *rawGuardPaths, cfg *Config) {
	if raw != nil {
		if raw.CaseSensitive != nil {
			cfg.GuardPaths.CaseSensitive = *raw.CaseSensitive
		}
		if raw.SearchesSkipHidden != nil {
			cfg.GuardPaths.SearchesSkipHidden = *raw.SearchesSkipHidden
		}
		if raw.Shell != nil {
			switch sh := strings.TrimSpace(*raw.Shell); sh {
			case "bash", "zsh":
				cfg.GuardPaths.Shell = sh
			default:
				v.errorf(hclspot.Attr(raw.Body, "shell", raw.DefRange), "Invalid shell",
					"shell is the shell agents' commands run in, which guards read them as: \"bash\" (the default, also for sh and dash) or \"zsh\"; got %q.", *raw.Shell)
			}
		}
		// In key order: diagnostics come out the same on every run.
		for _, tool := range slices.Sorted(maps.Keys(raw.PathFields)) {
			fields := raw.PathFields[tool]
			at := hclspot.Attr(raw.Body, "path_fields", raw.DefRange)
			if strings.TrimSpace(tool) == "" || slices.ContainsFunc(fields, func(f string) bool { return strings.TrimSpace(f) == "" }) {
				v.errorf(at, "Invalid path fields", "path_fields maps a tool name pattern, such as \"mcp__filesystem__*\", to the input fields that hold paths, such as [\"path\", \"destination\"]; a name is empty in %q = %q.", tool, fields)
			}
		}
		cfg.GuardPaths.Fields = raw.PathFields
	}
	r, err := guard.NewResolver(cfg.GuardPaths)
	if err != nil {
		v.errorf(hclspot.Attr(raw.Body, "path_fields", raw.DefRange), "Invalid tool pattern", "path_fields: %v. A key is a pattern on tool names, such as \"mcp__filesystem__*\".", err)
		r, _ = guard.NewResolver(guard.PathPolicy{CaseSensitive: cfg.GuardPaths.CaseSensitive, SearchesSkipHidden: cfg.GuardPaths.SearchesSkipHidden, Shell: cfg.GuardPaths.Shell})
	}
	cfg.resolver = r
}

// guards compiles the file's guards; each problem is reported at its spot,
// inside the condition for the condition's own errors.
func (v *validator) guards(raws []rawGuard, cfg *Config, src []byte) {
	seen := make(map[string]hcl.Range)
	agents := make([]string, 0, len(cfg.Agents))
	for _, a := range cfg.Agents {
		agents = append(agents, a.Name)
	}
	for i := range raws {
		rg := &raws[i]
		at := func(name string) hcl.Range { return hclspot.Attr(rg.Body, name, rg.DefRange) }
		if prev, dup := seen[rg.Name]; dup {
			v.errorf(rg.DefRange, "Duplicate guard", "A guard named %q is already declared at %s. Give each guard its own name: it is how denials are reported.", rg.Name, prev)
			continue
		}
		seen[rg.Name] = rg.DefRange
		// gohcl does not enforce required attributes of expression type:
		// a missing one arrives as a null stand-in.
		if val, diags := rg.Condition.Value(nil); !diags.HasErrors() && val.IsNull() {
			v.errorf(rg.DefRange, "Missing condition", "Guard %q needs a condition: an expr expression saying when it acts, such as condition = \"tool == 'Bash'\".", rg.Name)
			continue
		}
		cond, ok := v.condition(rg)
		if !ok {
			continue
		}
		spec := guard.Spec{
			Name: rg.Name, Hook: guard.Hook(rg.Hook), Condition: cond,
			Agents: rg.Agents, Tasks: rg.Tasks, From: rg.From, ToStage: rg.To,
		}
		if rg.Action != nil {
			spec.Action = guard.Action(*rg.Action)
		}
		if rg.Message != nil {
			spec.Message = *rg.Message
		}
		if rg.BackTo != nil {
			spec.To = *rg.BackTo
			switch {
			case v.partial:
				// What did not decode (the action, a task) would make
				// these checks wrong.
			case spec.Action != guard.SendBack:
				v.errorf(at("back_to"), "back_to without send_back", "Guard %q names back_to, which only a task_result guard with action = \"send_back\" uses; set that action, or remove back_to.", rg.Name)
			case !hasTask(cfg, spec.To):
				v.errorf(at("back_to"), "Unknown task", "Guard %q sends work back to task %q, which no pipeline has%s. Name a task the gated task depends on.", rg.Name, spec.To, text.Suggest(spec.To, taskNames(cfg)))
			default:
				v.backTo(rg, cfg)
			}
		}
		if rg.MaxLoops != nil {
			spec.MaxLoops = *rg.MaxLoops
			if spec.MaxLoops < 1 {
				v.errorf(at("max_loops"), "Invalid loop limit", "max_loops is how many times the guard may send work back or retry in one run; it must be at least 1 (got %d).", spec.MaxLoops)
			}
		}
		for _, a := range rg.Agents {
			if cfg.Agent(a) == nil {
				v.errorf(at("agents"), "Unknown agent", "Guard %q names agent %q, which is not configured%s. Agents: %s.", rg.Name, a, text.Suggest(a, agents), text.OrNone(agents))
			}
		}
		if (len(rg.From) > 0 || len(rg.To) > 0) && spec.Hook != guard.Transition {
			v.errorf(at(firstSet(rg.From, "from", "to")), "Stage filter on a non-transition guard", "from and to name the stages of a transition; a %s guard has none. Remove them, or use hook = \"transition\".", rg.Hook)
		}
		rule, err := guard.CompileWith(spec, cfg.resolver)
		if err != nil {
			v.guardError(rg, err, src)
			continue
		}
		cfg.Guards = append(cfg.Guards, rule)
	}
}

// backTo checks a send_back guard against the pipelines of the tasks it
// gates: the work can only go back to a task the gated one depends on,
// directly or not (the host escalates the run otherwise).
func (v *validator) backTo(rg *rawGuard, cfg *Config) {
	to := *rg.BackTo
	r := hclspot.Attr(rg.Body, "back_to", rg.DefRange)
	for _, p := range cfg.Pipelines {
		for _, name := range rg.Tasks {
			if p.Task(name) == nil {
				continue
			}
			ancestors := p.Ancestors(name)
			switch {
			case name == to:
				v.errorf(r, "Send back to itself", "Guard %q gates task %q and sends the work back to %q itself; use action = \"retry\" to try a task again, or name a task it depends on.", rg.Name, name, to)
			case len(ancestors) == 0:
				v.errorf(r, "Send back to a task not depended on", "Guard %q gates task %q of pipeline %q, which depends on no task: there is nothing to send its work back to. Use action = \"retry\", or gate a later task.", rg.Name, name, p.Name)
			case !slices.Contains(ancestors, to):
				v.errorf(r, "Send back to a task not depended on", "Guard %q gates task %q of pipeline %q and sends the work back to %q, which %q does not depend on. Name one of the tasks it depends on: %s.", rg.Name, name, p.Name, to, name, text.OrNone(ancestors))
			default:
				continue
			}
			return
		}
	}
}

func taskNames(cfg *Config) []string {
	var names []string
	for _, p := range cfg.Pipelines {
		for _, t := range p.Tasks {
			names = append(names, t.Name)
		}
	}
	return names
}

func hasTask(cfg *Config, name string) bool {
	for _, p := range cfg.Pipelines {
		if p.Task(name) != nil {
			return true
		}
	}
	return false
}

func firstSet(from []string, a, b string) string {
	if len(from) > 0 {
		return a
	}
	return b
}

// condition returns a guard's condition: a plain string or heredoc. HCL
// interpolation is refused rather than evaluated: a condition is expr, and
// a ${...} in it is almost certainly a mistake.
func (v *validator) condition(rg *rawGuard) (string, bool) {
	r := rg.Condition.Range()
	parts, ok := literalParts(rg.Condition)
	if !ok {
		v.errorf(r, "Condition is not a plain string", "A guard's condition is an expr expression written as a string or a heredoc, such as condition = \"tool == 'Bash'\". HCL interpolation (${...}), variables and functions are not allowed in it; write $${ for a literal ${.")
		return "", false
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Val.AsString())
	}
	return b.String(), true
}

// literalParts returns the literal pieces of a plain string or heredoc.
func literalParts(e hcl.Expression) ([]*hclsyntax.LiteralValueExpr, bool) {
	switch t := e.(type) {
	case *hclsyntax.TemplateExpr:
		out := make([]*hclsyntax.LiteralValueExpr, 0, len(t.Parts))
		for _, p := range t.Parts {
			lit, ok := p.(*hclsyntax.LiteralValueExpr)
			if !ok || !lit.Val.IsKnown() || lit.Val.IsNull() || lit.Val.Type() != cty.String {
				return nil, false
			}
			out = append(out, lit)
		}
		return out, true
	case *hclsyntax.LiteralValueExpr:
		if t.Val.IsKnown() && !t.Val.IsNull() && t.Val.Type() == cty.String {
			return []*hclsyntax.LiteralValueExpr{t}, true
		}
	}
	return nil, false
}

// guardError reports a guard's compile error; one about a spot in the
// condition is placed there, in the file.
func (v *validator) guardError(rg *rawGuard, err error, src []byte) {
	var ce *guard.CompileError
	if !errors.As(err, &ce) {
		v.errorf(rg.DefRange, "Invalid guard", "%v", err)
		return
	}
	detail := ce.Msg
	if ce.Hint != "" {
		detail += "; " + ce.Hint
	}
	if ce.Offset < 0 {
		subject := rg.DefRange
		switch {
		case strings.HasPrefix(ce.Msg, "unknown hook"):
			subject = hclspot.Attr(rg.Body, "hook", rg.DefRange)
		case strings.Contains(ce.Msg, "guard can"), strings.Contains(ce.Msg, "send_back"):
			subject = hclspot.Attr(rg.Body, "action", rg.DefRange)
		case strings.Contains(ce.Msg, "condition"):
			subject = rg.Condition.Range()
		}
		v.errorf(subject, "Invalid guard", "Guard %q: %s.", rg.Name, detail)
		return
	}
	pos := conditionPos(rg.Condition, src, ce.Offset)
	end := pos
	end.Column++
	end.Byte++
	v.errorf(hcl.Range{Filename: pos.Filename, Start: pos.Pos, End: end.Pos}, "Invalid guard condition", "Guard %q: %s.", rg.Name, detail)
}

type filePos struct {
	hcl.Pos
	Filename string
}

// conditionPos finds where in the file the condition's offset-th rune
// came from: each literal part of the string is walked in its source and
// its decoded value side by side, stepping over escapes (\" in a quoted
// string), doubled $$ and %%, and the indentation a <<- heredoc strips.
func conditionPos(e hcl.Expression, src []byte, offset int) filePos {
	r := e.Range()
	parts, _ := literalParts(e)
	heredoc := r.Start.Byte+2 <= len(src) && string(src[r.Start.Byte:r.Start.Byte+2]) == "<<"
	k := offset
	for i, p := range parts {
		val := p.Val.AsString()
		n := utf8.RuneCountInString(val)
		if k >= n && i < len(parts)-1 {
			k -= n
			continue
		}
		return align(src, p.SrcRange, val, k, heredoc)
	}
	return filePos{Pos: r.Start, Filename: r.Filename}
}

// align walks raw (the source of a literal) and val (its value) together
// until k runes of val have passed, and returns that point in the file.
func align(src []byte, rng hcl.Range, val string, k int, heredoc bool) filePos {
	raw := src[rng.Start.Byte:min(rng.End.Byte, len(src))]
	pos := rng.Start
	advance := func(n int) {
		for _, c := range string(raw[:n]) {
			if c == '\n' {
				pos.Line++
				pos.Column = 1
			} else {
				pos.Column++
			}
		}
		pos.Byte += n
		raw = raw[n:]
	}
	dec := []rune(val)
	for j := 0; j < k && j < len(dec) && len(raw) > 0; {
		c, size := utf8.DecodeRune(raw)
		switch {
		case c == dec[j]:
			advance(size)
			j++
		case !heredoc && c == '\\':
			advance(escapeLen(raw))
			j++
		case (c == '$' || c == '%') && len(raw) > 1 && raw[1] == byte(c):
			advance(2)
			j++
		case c == ' ' || c == '\t':
			advance(size) // indentation a <<- heredoc stripped
		default:
			advance(size)
		}
	}
	// Stripped indentation right at the spot belongs before it.
	for k < len(dec) && len(raw) > 0 && (raw[0] == ' ' || raw[0] == '\t') && rune(raw[0]) != dec[k] {
		advance(1)
	}
	return filePos{Pos: pos, Filename: rng.Filename}
}

// escapeLen is the length of the escape sequence at the start of b.
func escapeLen(b []byte) int {
	if len(b) < 2 {
		return len(b)
	}
	switch b[1] {
	case 'u':
		return min(6, len(b))
	case 'U':
		return min(10, len(b))
	}
	return 2
}

// GuardSet returns the config's guards, grouped by hook.
func (c *Config) GuardSet() *guard.Set { return guard.NewSet(c.Guards) }
