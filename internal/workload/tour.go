package workload

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"

	"github.com/hearth-dev/hearth/matcher"
)

// CodeTour builds the workload of hearth's code tour: the tasks of the
// pipeline in the config file at configPath (examples/code-tour/hearth.hcl),
// about packages of the Go tree at goSrc ($(go env GOROOT)/src), in the
// file's order.
func CodeTour(configPath, goSrc string) (Workload, error) {
	src, err := os.ReadFile(configPath)
	if err != nil {
		return Workload{}, fmt.Errorf("read the code tour: %w", err)
	}
	qs, err := parseTour(src, configPath)
	if err != nil {
		return Workload{}, err
	}
	w := Workload{Name: "code-tour", Root: goSrc, Packages: map[string][]string{}, Questions: qs}
	for _, q := range qs {
		if _, ok := w.Packages[q.Package]; ok {
			continue
		}
		if w.Packages[q.Package], err = goFiles(goSrc, q.Package); err != nil {
			return Workload{}, fmt.Errorf("code tour: %w", err)
		}
	}
	return w, nil
}

// tourSchema is the part of a hearth config the tour needs: each task's
// prompt and hints; everything else is left alone.
var (
	tourFileSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "pipeline", LabelNames: []string{"name"}},
	}}
	tourPipelineSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "task", LabelNames: []string{"name"}},
	}}
	tourTaskSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "prompt", Required: true},
		{Name: "directories"},
		{Name: "files"},
		{Name: "technologies"},
	}}
)

// parseTour reads the tasks of the first pipeline of a hearth config: a
// question each, about the package its prompt names (its second word, as
// the gotour agent reads it). Errors carry file:line:col.
func parseTour(src []byte, filename string) ([]Question, error) {
	f, diags := hclparse.NewParser().ParseHCL(src, filename)
	if diags.HasErrors() {
		return nil, diagError(diags)
	}
	content, _, diags := f.Body.PartialContent(tourFileSchema)
	if diags.HasErrors() {
		return nil, diagError(diags)
	}
	if len(content.Blocks) == 0 {
		return nil, fmt.Errorf("%s: no pipeline block; the code tour is a pipeline of gotour tasks", filename)
	}
	pipeline, _, diags := content.Blocks[0].Body.PartialContent(tourPipelineSchema)
	if diags.HasErrors() {
		return nil, diagError(diags)
	}
	var qs []Question
	for _, b := range pipeline.Blocks {
		task, _, diags := b.Body.PartialContent(tourTaskSchema)
		if diags.HasErrors() {
			return nil, diagError(diags)
		}
		var q Question
		var err error
		if q.Prompt, err = stringAttr(task.Attributes["prompt"]); err != nil {
			return nil, err
		}
		fields := strings.Fields(q.Prompt)
		if len(fields) < 2 {
			return nil, fmt.Errorf("%s: task %q: prompt %q names no package; write it as the gotour agent reads it, e.g. \"summary net/http\"",
				at(b.DefRange), b.Labels[0], q.Prompt)
		}
		q.Package = matcher.NormalizePath(fields[1])
		for _, l := range []struct {
			name string
			to   *[]string
		}{{"directories", &q.Hints.Dirs}, {"files", &q.Hints.Files}, {"technologies", &q.Hints.Techs}} {
			if *l.to, err = stringsAttr(task.Attributes[l.name]); err != nil {
				return nil, err
			}
		}
		qs = append(qs, q)
	}
	if len(qs) == 0 {
		return nil, fmt.Errorf("%s: pipeline %q has no tasks", at(content.Blocks[0].DefRange), content.Blocks[0].Labels[0])
	}
	return qs, nil
}

var errNotLiteral = errors.New("must be a literal")

// diagError turns HCL's error diagnostics into one error, each saying
// where, as file:line:col, what, and HCL's advice.
func diagError(diags hcl.Diagnostics) error {
	var errs []error
	for _, d := range diags.Errs() {
		var d2 *hcl.Diagnostic
		if errors.As(d, &d2) && d2.Subject != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %s", at(*d2.Subject), d2.Summary, d2.Detail))
		} else {
			errs = append(errs, d)
		}
	}
	return errors.Join(errs...)
}

// at is where r starts, as file:line:col.
func at(r hcl.Range) string {
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
}

// stringAttr evaluates a literal string attribute.
func stringAttr(a *hcl.Attribute) (string, error) {
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return "", diagError(diags)
	}
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return "", fmt.Errorf("%s: %s %w string", at(a.Expr.Range()), a.Name, errNotLiteral)
	}
	return v.AsString(), nil
}

// stringsAttr evaluates a literal list of strings; a missing attribute is
// an empty list.
func stringsAttr(a *hcl.Attribute) ([]string, error) {
	if a == nil {
		return nil, nil
	}
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return nil, diagError(diags)
	}
	if !v.IsKnown() || v.IsNull() || !(v.Type().IsTupleType() || v.Type().IsListType()) {
		return nil, fmt.Errorf("%s: %s %w list of strings", at(a.Expr.Range()), a.Name, errNotLiteral)
	}
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if !e.IsKnown() || e.IsNull() || e.Type() != cty.String {
			return nil, fmt.Errorf("%s: %s %w list of strings", at(a.Expr.Range()), a.Name, errNotLiteral)
		}
		out = append(out, e.AsString())
	}
	return out, nil
}
