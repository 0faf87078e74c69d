package contextchain

import (
	"errors"
	"testing"
)

// FuzzRender feeds arbitrary item strings, titles, templates and budgets
// through Build. Bad templates must come back as *TemplateError, never as
// a panic, and no block may outgrow its budget. The seed corpus is under
// testdata/fuzz/FuzzRender.
func FuzzRender(f *testing.F) {
	f.Fuzz(func(t *testing.T, tmpl, title, decision, file, pattern, gotcha string, budget uint16) {
		arts := []Artifact{
			{Task: "a", Title: title, CreatedAt: at(2), Version: 1,
				KeyDecisions: []string{decision, gotcha}, ModifiedFiles: []string{file, "./" + file},
				NewPatterns: []string{pattern}, PotentialGotchas: []string{gotcha}},
			{Task: "b", Title: decision, CreatedAt: at(1), Version: 2,
				KeyDecisions: []string{pattern, title}, ModifiedFiles: []string{gotcha},
				NewPatterns: []string{decision}, PotentialGotchas: []string{file, title}},
			{Task: "c", Title: file, CreatedAt: at(3), Version: 1,
				KeyDecisions: []string{title + decision}, PotentialGotchas: []string{pattern + gotcha}},
		}
		g := DepMap{"t": {"a", "b"}, "a": {"c"}, "c": {"t"}}
		b := int(budget)

		layout, err := New(WithBudget(b))
		if err != nil {
			t.Fatalf("New with budget %d: %v", b, err)
		}
		want, err := layout.Build("t", g, arts)
		if err != nil {
			t.Fatalf("default layout failed: %v", err)
		}
		if b > 0 && len(want.Block) > b {
			t.Fatalf("default layout: %d-byte block over the %d-byte budget", len(want.Block), b)
		}
		same, err := New(WithBudget(b), WithTemplate(DefaultTemplate))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := same.Build("t", g, arts); err != nil || got.Block != want.Block {
			t.Fatalf("DefaultTemplate differs from the layout (err %v):\n%q\n%q", err, got.Block, want.Block)
		}

		r, err := New(WithBudget(b), WithTemplate(tmpl))
		if err != nil {
			var te *TemplateError
			if !errors.As(err, &te) {
				t.Fatalf("New: got %T %v, want *TemplateError", err, err)
			}
			return
		}
		res, err := r.Build("t", g, arts)
		if err != nil {
			var te *TemplateError
			if !errors.As(err, &te) {
				t.Fatalf("Build: got %T %v, want *TemplateError", err, err)
			}
			return
		}
		if b > 0 && len(res.Block) > b {
			t.Fatalf("custom template: %d-byte block over the %d-byte budget", len(res.Block), b)
		}
	})
}
