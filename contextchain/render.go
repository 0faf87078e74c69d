package contextchain

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"time"
)

// DefaultBudget is the size cap of a rendered block, in bytes, when
// [WithBudget] is not given: about a thousand tokens, enough for a few
// steps' notes without crowding out the task's own prompt.
const DefaultBudget = 4096

// Errors returned by [New]. A template that fails to parse or to run is a
// [*TemplateError].
var (
	// ErrNegativeBudget means WithBudget was given a negative size.
	ErrNegativeBudget = errors.New("negative context budget")
)

// TemplateError is a custom template that failed to parse or to run.
type TemplateError struct {
	// Line is the 1-based line of the template text the error is at, or 0
	// when text/template did not say.
	Line int
	// Err is text/template's error.
	Err error

	msg string // Err's message without text/template's "template: name:line:" prefix
}

func (e *TemplateError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("context template line %d: %s; fix the template, or drop it to use the default layout", e.Line, e.msg)
	}
	return fmt.Sprintf("context template: %s; fix the template, or drop it to use the default layout", e.msg)
}

func (e *TemplateError) Unwrap() error { return e.Err }

// templatePos picks the line out of text/template's messages, which read
// "template: NAME:LINE: msg" when parsing and "template: NAME:LINE:COL: msg"
// when executing.
var templatePos = regexp.MustCompile(`(?s)^template: .*?:(\d+):(?:\d+:)? ?(.*)$`)

func newTemplateError(err error) *TemplateError {
	e := &TemplateError{Err: err, msg: err.Error()}
	if m := templatePos.FindStringSubmatch(e.msg); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		e.msg = m[2]
	}
	return e
}

// DefaultTemplate is the default layout written as a template for
// [WithTemplate]: a starting point for a custom layout. The default
// [Renderer] does not execute it; it produces the same bytes from Go code so
// that fitting the budget costs one render instead of one per item.
const DefaultTemplate = `# Context from Previous Steps
{{range .Steps}}The following context was learned from the "{{.Name}}" session:

{{range .KeyDecisions}}- **Key Decision:** {{.}}
{{end}}{{with .ModifiedFiles}}- **Modified:** {{join . ", "}}
{{end}}{{range .NewPatterns}}- **Pattern:** {{.}}
{{end}}{{range .PotentialGotchas}}- **Note:** {{.}}
{{end}}
{{end}}*Use this knowledge to maintain consistency.*
{{with .Note}}
*{{.}}*
{{end}}`

// The pieces of the default layout; layoutSize and renderLayout must agree
// with each other and with DefaultTemplate (the tests hold them to it).
const (
	layoutHeader     = "# Context from Previous Steps\n"
	layoutFooter     = "*Use this knowledge to maintain consistency.*\n"
	layoutStepOpen   = "The following context was learned from the \""
	layoutStepClose  = "\" session:\n\n"
	layoutStepEnd    = "\n"
	layoutDecision   = "- **Key Decision:** "
	layoutModified   = "- **Modified:** "
	layoutFileSep    = ", "
	layoutPattern    = "- **Pattern:** "
	layoutGotcha     = "- **Note:** "
	layoutNoteOpen   = "\n*"
	layoutNoteClose  = "*\n"
	layoutLineEnding = "\n"
)

// Data is what a custom template sees; the package doc lists its fields.
type Data struct {
	Task         string
	Steps        []Step
	Missing      []string
	OmittedSteps int
	OmittedItems int
	Note         string
	Budget       int
}

// Result is a rendered block and what went into it.
type Result struct {
	// Block is the Markdown to put before the task's prompt (see [Prompt]),
	// or "" when there is nothing to say or nothing fits.
	Block string
	// Steps reports on every step of the chain, in priority order.
	Steps []StepReport
	// Missing are the ancestors that left no artifact.
	Missing []string
	// OmittedSteps and OmittedItems are what the block's closing note says
	// was left out: steps with something to say of which nothing was
	// rendered, and items left out of the steps that were.
	OmittedSteps int
	OmittedItems int
}

// StepReport says what became of one step's artifact.
type StepReport struct {
	Task     string
	Version  int
	Distance int
	// Items is the number of items left after deduplication, all of which
	// competed for the budget; Duplicates the number removed before.
	Items      int
	Duplicates int
	// Included items were rendered; Omitted ones (Items - Included) were
	// left out to fit the budget.
	Included int
	Omitted  int
}

// Renderer renders chains into prompt blocks. Build one with [New]; the zero
// Renderer renders the default layout without a budget. A Renderer is
// immutable and safe for concurrent use.
type Renderer struct {
	budget int
	text   string
	tmpl   *template.Template // nil: the default layout, rendered by Go code
}

// Option configures a [Renderer].
type Option func(*Renderer)

// WithBudget caps rendered blocks at bytes bytes; 0 means unlimited.
func WithBudget(bytes int) Option {
	return func(r *Renderer) { r.budget = bytes }
}

// WithTemplate replaces the default layout with a text/template; "" keeps
// the default. The package doc describes the data it sees.
func WithTemplate(text string) Option {
	return func(r *Renderer) { r.text = text }
}

// New returns a Renderer with [DefaultBudget] and the default layout,
// changed by opts. A custom template is parsed and executed once against
// sample data here, so that a mistake in it surfaces when the configuration
// is loaded rather than when a task starts.
func New(opts ...Option) (*Renderer, error) {
	r := &Renderer{budget: DefaultBudget}
	for _, o := range opts {
		o(r)
	}
	if r.budget < 0 {
		return nil, fmt.Errorf("%w: %d bytes; use 0 for unlimited or a positive number of bytes", ErrNegativeBudget, r.budget)
	}
	if r.text == "" {
		return r, nil
	}
	t, err := template.New("contextchain").Funcs(template.FuncMap{"join": strings.Join}).Parse(r.text)
	if err != nil {
		return nil, newTemplateError(err)
	}
	r.tmpl = t
	// Field names and function arguments are only checked when a template
	// runs. The cap keeps a runaway template from filling memory; reaching
	// it is not an error here.
	w := &limitWriter{max: 1 << 20}
	if err := t.Execute(w, sampleData()); err != nil && !errors.Is(err, errOverBudget) {
		return nil, newTemplateError(err)
	}
	return r, nil
}

func sampleData() Data {
	return Data{
		Task: "review",
		Steps: []Step{{
			Artifact: Artifact{
				Task:             "setup",
				Title:            "Database Setup",
				SourceSession:    "session-1",
				CreatedAt:        time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
				Version:          1,
				KeyDecisions:     []string{"Used Zod for schema validation."},
				ModifiedFiles:    []string{"src/models/User.ts"},
				NewPatterns:      []string{"All APIs now require the x-api-key header."},
				PotentialGotchas: []string{"The DB migration requires root access."},
			},
			Distance:   1,
			Duplicates: 1,
		}},
		Missing:      []string{"research"},
		OmittedSteps: 1,
		OmittedItems: 1,
		Note:         partialNote(1, 1, DefaultBudget),
		Budget:       DefaultBudget,
	}
}

// Budget returns the renderer's cap in bytes, 0 when unlimited.
func (r *Renderer) Budget() int { return r.budget }

// Build collects task's chain (see [Collect]) and renders it.
func (r *Renderer) Build(task string, g Graph, artifacts []Artifact) (Result, error) {
	return r.Render(Collect(task, g, artifacts))
}

// Render renders c within the renderer's budget, as the package doc
// describes. The only errors are a custom template's, as a
// [*TemplateError]; the default layout never fails.
func (r *Renderer) Render(c Chain) (Result, error) {
	items := flatten(c.Steps)
	inc := make([]bool, len(items))
	for i := range inc {
		inc[i] = true
	}
	if r.budget > 0 && len(items) > 0 {
		var err error
		if r.tmpl == nil {
			r.fitLayout(&c, items, inc)
		} else {
			err = r.fitTemplate(&c, items, inc)
		}
		if err != nil {
			return Result{}, err
		}
	}

	// The fitting above measured with the largest note the block could
	// need; the real note is never longer for the default layout. A custom
	// template need not behave so, so the block is checked once more and
	// trimmed from the lowest priority end until it fits.
	var block string
	for last := len(inc) - 1; ; {
		d := r.data(&c, items, inc, -1, -1)
		if len(d.Steps) == 0 {
			block = ""
			break
		}
		b, fits, err := r.render(&d, nil)
		if err != nil {
			return Result{}, err
		}
		if fits {
			block = b
			break
		}
		for last >= 0 && !inc[last] {
			last--
		}
		inc[last] = false
	}

	res := Result{Block: block, Missing: c.Missing, Steps: make([]StepReport, len(c.Steps))}
	for i := range c.Steps {
		s := &c.Steps[i]
		res.Steps[i] = StepReport{Task: s.Task, Version: s.Version, Distance: s.Distance, Items: s.items(), Duplicates: s.Duplicates}
	}
	for i, it := range items {
		if inc[i] {
			res.Steps[it.step].Included++
		}
	}
	for i := range res.Steps {
		sr := &res.Steps[i]
		sr.Omitted = sr.Items - sr.Included
		switch {
		case sr.Items > 0 && sr.Included == 0:
			res.OmittedSteps++
		case sr.Included > 0:
			res.OmittedItems += sr.Omitted
		}
	}
	return res, nil
}

// kind is the list an item comes from; the constants are in budget
// priority order.
type kind uint8

const (
	kindDecision kind = iota
	kindGotcha
	kindPattern
	kindFile
)

type item struct {
	step int
	kind kind
	text string
}

// flatten lists the chain's items in budget priority order.
func flatten(steps []Step) []item {
	n := 0
	for i := range steps {
		n += steps[i].items()
	}
	items := make([]item, 0, n)
	for i := range steps {
		s := &steps[i]
		for _, l := range []struct {
			k    kind
			list []string
		}{{kindDecision, s.KeyDecisions}, {kindGotcha, s.PotentialGotchas}, {kindPattern, s.NewPatterns}, {kindFile, s.ModifiedFiles}} {
			for _, t := range l.list {
				items = append(items, item{step: i, kind: l.k, text: t})
			}
		}
	}
	return items
}

// worstCase returns the omission counts with the longest note the block
// can end with: every non-empty step and every item left out. The note's
// length grows with each count, so a block that fits with this note fits
// with the real one.
func worstCase(c *Chain, items []item) (steps, its int) {
	for i := range c.Steps {
		if c.Steps[i].items() > 0 {
			steps++
		}
	}
	return steps, len(items)
}

// data builds what a template sees for the included items. Negative counts
// mean the real ones.
func (r *Renderer) data(c *Chain, items []item, inc []bool, omittedSteps, omittedItems int) Data {
	d := Data{Task: c.Task, Missing: c.Missing, Budget: r.budget}
	included := make([]int, len(c.Steps))
	cur := -1
	for i, it := range items {
		if !inc[i] {
			continue
		}
		included[it.step]++
		if it.step != cur {
			s := &c.Steps[it.step]
			d.Steps = append(d.Steps, Step{
				Artifact: Artifact{
					Task:          s.Task,
					Title:         s.Title,
					SourceSession: s.SourceSession,
					CreatedAt:     s.CreatedAt,
					Version:       s.Version,
				},
				Distance:   s.Distance,
				Duplicates: s.Duplicates,
			})
			cur = it.step
		}
		s := &d.Steps[len(d.Steps)-1]
		switch it.kind {
		case kindDecision:
			s.KeyDecisions = append(s.KeyDecisions, it.text)
		case kindGotcha:
			s.PotentialGotchas = append(s.PotentialGotchas, it.text)
		case kindPattern:
			s.NewPatterns = append(s.NewPatterns, it.text)
		case kindFile:
			s.ModifiedFiles = append(s.ModifiedFiles, it.text)
		}
	}
	if omittedSteps < 0 {
		omittedSteps, omittedItems = 0, 0
		for i := range c.Steps {
			n := c.Steps[i].items()
			switch {
			case n > 0 && included[i] == 0:
				omittedSteps++
			case included[i] > 0:
				omittedItems += n - included[i]
			}
		}
	}
	d.OmittedSteps, d.OmittedItems = omittedSteps, omittedItems
	if r.budget > 0 {
		d.Note = partialNote(omittedSteps, omittedItems, r.budget)
	}
	return d
}

// render renders d and reports whether it fits the budget. A custom
// template renders into w, which may be reused between calls; it stops as
// soon as the output outgrows the budget.
func (r *Renderer) render(d *Data, w *limitWriter) (string, bool, error) {
	if r.tmpl == nil {
		b := renderLayout(d)
		return b, r.budget == 0 || len(b) <= r.budget, nil
	}
	if w == nil {
		w = &limitWriter{}
	}
	w.buf, w.max = w.buf[:0], r.budget
	if err := r.tmpl.Execute(w, d); err != nil {
		if errors.Is(err, errOverBudget) {
			return "", false, nil
		}
		return "", false, newTemplateError(err)
	}
	return string(w.buf), true, nil
}

// fitTemplate chooses the items for a custom template by rendering: a
// template is opaque, so the only way to know an item's cost is to try.
func (r *Renderer) fitTemplate(c *Chain, items []item, inc []bool) error {
	w := &limitWriter{}
	d := r.data(c, items, inc, -1, -1)
	if _, fits, err := r.render(&d, w); err != nil || fits {
		return err
	}
	ws, wi := worstCase(c, items)
	clear(inc)
	for i := range items {
		inc[i] = true
		d := r.data(c, items, inc, ws, wi)
		_, fits, err := r.render(&d, w)
		if err != nil {
			return err
		}
		inc[i] = fits
	}
	return nil
}

// fitLayout chooses the items for the default layout by arithmetic: the
// layout's size is a sum of per-step and per-item costs, so each item is
// one addition instead of one render.
func (r *Renderer) fitLayout(c *Chain, items []item, inc []bool) {
	stepCost := func(s *Step) int {
		return len(layoutStepOpen) + len(s.Name()) + len(layoutStepClose) + len(layoutStepEnd)
	}
	itemCost := func(it item, firstFile bool) int {
		switch it.kind {
		case kindDecision:
			return len(layoutDecision) + len(it.text) + len(layoutLineEnding)
		case kindGotcha:
			return len(layoutGotcha) + len(it.text) + len(layoutLineEnding)
		case kindPattern:
			return len(layoutPattern) + len(it.text) + len(layoutLineEnding)
		}
		if firstFile {
			return len(layoutModified) + len(it.text) + len(layoutLineEnding)
		}
		return len(layoutFileSep) + len(it.text)
	}

	// Everything, without a note.
	size := len(layoutHeader) + len(layoutFooter)
	prev := -1
	hasFile := false
	for _, it := range items {
		if it.step != prev {
			size += stepCost(&c.Steps[it.step])
			prev, hasFile = it.step, false
		}
		size += itemCost(it, it.kind == kindFile && !hasFile)
		hasFile = hasFile || it.kind == kindFile
	}
	if size <= r.budget {
		return
	}

	ws, wi := worstCase(c, items)
	size = len(layoutHeader) + len(layoutFooter) + noteCost(partialNote(ws, wi, r.budget))
	hasStep := make([]bool, len(c.Steps))
	hasFiles := make([]bool, len(c.Steps))
	for i, it := range items {
		cost := itemCost(it, it.kind == kindFile && !hasFiles[it.step])
		if !hasStep[it.step] {
			cost += stepCost(&c.Steps[it.step])
		}
		inc[i] = size+cost <= r.budget
		if inc[i] {
			size += cost
			hasStep[it.step] = true
			hasFiles[it.step] = hasFiles[it.step] || it.kind == kindFile
		}
	}
}

func noteCost(note string) int {
	if note == "" {
		return 0
	}
	return len(layoutNoteOpen) + len(note) + len(layoutNoteClose)
}

// renderLayout writes the default layout; DefaultTemplate executed on d
// gives the same bytes.
func renderLayout(d *Data) string {
	var b strings.Builder
	b.WriteString(layoutHeader)
	for i := range d.Steps {
		s := &d.Steps[i]
		b.WriteString(layoutStepOpen)
		b.WriteString(s.Name())
		b.WriteString(layoutStepClose)
		for _, v := range s.KeyDecisions {
			b.WriteString(layoutDecision)
			b.WriteString(v)
			b.WriteString(layoutLineEnding)
		}
		if len(s.ModifiedFiles) > 0 {
			b.WriteString(layoutModified)
			b.WriteString(strings.Join(s.ModifiedFiles, layoutFileSep))
			b.WriteString(layoutLineEnding)
		}
		for _, v := range s.NewPatterns {
			b.WriteString(layoutPattern)
			b.WriteString(v)
			b.WriteString(layoutLineEnding)
		}
		for _, v := range s.PotentialGotchas {
			b.WriteString(layoutGotcha)
			b.WriteString(v)
			b.WriteString(layoutLineEnding)
		}
		b.WriteString(layoutStepEnd)
	}
	b.WriteString(layoutFooter)
	if d.Note != "" {
		b.WriteString(layoutNoteOpen)
		b.WriteString(d.Note)
		b.WriteString(layoutNoteClose)
	}
	return b.String()
}

// partialNote is the sentence that tells the agent its context is partial.
// Its length never shrinks when either count grows, which fitting relies on.
func partialNote(steps, items, budget int) string {
	if steps <= 0 && items <= 0 {
		return ""
	}
	var parts []string
	if steps > 0 {
		parts = append(parts, plural(steps, "earlier step"))
	}
	if items > 0 {
		parts = append(parts, plural(items, "item"))
	}
	return "Context is partial: " + strings.Join(parts, " and ") +
		" left out to fit the " + strconv.Itoa(budget) + "-byte context budget."
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// errOverBudget stops a template as soon as its output outgrows the budget:
// a trial that cannot fit need not finish.
var errOverBudget = errors.New("rendered block exceeds the context budget")

type limitWriter struct {
	buf []byte
	max int // 0: no limit
}

func (w *limitWriter) Write(p []byte) (int, error) {
	if w.max > 0 && len(w.buf)+len(p) > w.max {
		return 0, errOverBudget
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// Prompt puts block before base, separated by a blank line, so that the
// agent reads what earlier steps learned before its own instructions. A
// blank block leaves base unchanged.
func Prompt(base, block string) string {
	if strings.TrimSpace(block) == "" {
		return base
	}
	block = strings.TrimRight(block, "\n")
	if base == "" {
		return block + "\n"
	}
	return block + "\n\n" + base
}
