package contextchain

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"text/template"
)

// mustNew is New for options known to be valid.
func mustNew(tb testing.TB, opts ...Option) *Renderer {
	tb.Helper()
	r, err := New(opts...)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return r
}

// seedChain is the seed's example: one direct dependency.
func seedChain() (string, Graph, []Artifact) {
	return "api", DepMap{"api": {"db"}}, []Artifact{{
		Task:             "db",
		Title:            "Database Setup",
		SourceSession:    "s-1",
		CreatedAt:        at(0),
		Version:          1,
		KeyDecisions:     []string{"Used Zod for schema validation."},
		ModifiedFiles:    []string{"src/models/User.ts", "src/db/schema.sql"},
		PotentialGotchas: []string{"The DB migration requires root access, which has been mocked."},
	}}
}

// pipelineChain is a chain with transitive ancestors, a revisited task, a
// missing ancestor and duplicates.
func pipelineChain() (string, Graph, []Artifact) {
	g := DepMap{
		"frontend": {"api", "design"},
		"api":      {"db", "auth"},
		"auth":     {"db", "research"},
		"db":       {"research"},
		"design":   {"research"},
	}
	arts := []Artifact{
		{
			Task: "research", Title: "Research", CreatedAt: at(0), Version: 1,
			KeyDecisions:     []string{"Target Postgres 16.", "REST, not GraphQL."},
			PotentialGotchas: []string{"The staging database is shared with QA."},
		},
		{
			Task: "db", Title: "Database Setup", CreatedAt: at(10), Version: 1,
			KeyDecisions:     []string{"Used Zod for schema validation."},
			ModifiedFiles:    []string{"src/models/User.ts", "src/db/schema.sql"},
			PotentialGotchas: []string{"The DB migration requires root access, which has been mocked."},
		},
		{
			Task: "auth", Title: "Auth", CreatedAt: at(20), Version: 1,
			KeyDecisions: []string{"Sessions in cookies."},
		},
		{
			// The quality gate sent auth back; this run is the one that counts.
			Task: "auth", Title: "Auth (second pass)", CreatedAt: at(30), Version: 2,
			KeyDecisions:     []string{"JWT in the Authorization header.", "used zod for schema   validation."},
			ModifiedFiles:    []string{"src/auth/jwt.ts", "./src/models/User.ts"},
			NewPatterns:      []string{"Every handler calls requireAuth(ctx) first."},
			PotentialGotchas: []string{"Clock skew breaks token expiry checks in CI."},
		},
		{
			Task: "api", Title: "API Routes", CreatedAt: at(40), Version: 1,
			KeyDecisions:  []string{"Routes live in src/routes, one file per resource."},
			ModifiedFiles: []string{"src/routes/users.ts", "src/routes/index.ts"},
			NewPatterns:   []string{"All APIs now require the x-api-key header."},
		},
	}
	// design has no artifact: its agent crashed before summarizing.
	return "frontend", g, arts
}

func TestRenderBudget(t *testing.T) {
	task, g, arts := pipelineChain()
	full, err := mustNew(t, WithBudget(0)).Build(task, g, arts)
	if err != nil {
		t.Fatal(err)
	}
	n := len(full.Block)
	header := len(layoutHeader) + len(layoutFooter)

	tests := []struct {
		name         string
		budget       int
		wantBlock    string // "" to skip; "-" for the empty string
		wantLen      int    // exact length when > 0
		wantNote     bool
		omittedSteps int
		omittedItems int
		included     int // total included items; -1 to skip
	}{
		{name: "unlimited", budget: 0, wantLen: n, included: 15},
		{name: "exactly the full size", budget: n, wantLen: n, included: 15},
		{name: "far more than needed", budget: 10 * n, wantLen: n, included: 15},
		{name: "one byte short", budget: n - 1, wantNote: true, included: -1},
		{name: "smaller than the header", budget: 10, wantBlock: "-", omittedSteps: 4, included: 0},
		{name: "header and footer but no room for the note", budget: header + 5, wantBlock: "-", omittedSteps: 4, included: 0},
		{name: "one byte", budget: 1, wantBlock: "-", omittedSteps: 4, included: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := mustNew(t, WithBudget(tt.budget)).Build(task, g, arts)
			if err != nil {
				t.Fatal(err)
			}
			if tt.budget > 0 && len(res.Block) > tt.budget {
				t.Errorf("block is %d bytes, over the %d-byte budget", len(res.Block), tt.budget)
			}
			if tt.wantLen > 0 && len(res.Block) != tt.wantLen {
				t.Errorf("block is %d bytes, want %d", len(res.Block), tt.wantLen)
			}
			if tt.wantBlock == "-" && res.Block != "" {
				t.Errorf("got block %q, want none", res.Block)
			}
			if got := strings.Contains(res.Block, "Context is partial"); got != tt.wantNote {
				t.Errorf("note present: got %v, want %v\n%s", got, tt.wantNote, res.Block)
			}
			if !tt.wantNote {
				if res.OmittedSteps != tt.omittedSteps || res.OmittedItems != tt.omittedItems {
					t.Errorf("omitted: got %d steps %d items, want %d and %d", res.OmittedSteps, res.OmittedItems, tt.omittedSteps, tt.omittedItems)
				}
			}
			included := 0
			for _, s := range res.Steps {
				included += s.Included
				if s.Included+s.Omitted != s.Items {
					t.Errorf("step %s: included %d + omitted %d != items %d", s.Task, s.Included, s.Omitted, s.Items)
				}
			}
			if tt.included >= 0 && included != tt.included {
				t.Errorf("included items: got %d, want %d", included, tt.included)
			}
		})
	}
}

func TestRenderReport(t *testing.T) {
	task, g, arts := pipelineChain()
	res, err := mustNew(t, WithBudget(700)).Build(task, g, arts)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range res.Steps {
		got = append(got, fmt.Sprintf("%s v%d d%d items=%d dups=%d in=%d out=%d", s.Task, s.Version, s.Distance, s.Items, s.Duplicates, s.Included, s.Omitted))
	}
	want := []string{
		"api v1 d1 items=4 dups=0 in=4 out=0",
		// auth outranks db at the same distance (it is newer), so the Zod
		// decision and User.ts count as db's duplicates.
		"auth v2 d2 items=6 dups=0 in=4 out=2",
		"db v1 d2 items=2 dups=2 in=0 out=2",
		// research is at distance 2 through design, which left no artifact.
		"research v1 d2 items=3 dups=0 in=0 out=3",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("reports:\ngot  %q\nwant %q", got, want)
	}
	if res.OmittedSteps != 2 || res.OmittedItems != 2 {
		t.Errorf("omitted: got %d steps and %d items, want 2 and 2", res.OmittedSteps, res.OmittedItems)
	}
	if want := "*Context is partial: 2 earlier steps and 2 items left out to fit the 700-byte context budget.*\n"; !strings.HasSuffix(res.Block, want) {
		t.Errorf("block does not end with %q:\n%s", want, res.Block)
	}
	if got, want := strings.Join(res.Missing, ","), "design"; got != want {
		t.Errorf("missing: got %q, want %q", got, want)
	}
}

func TestRenderSkipsWhatDoesNotFit(t *testing.T) {
	// A huge first decision does not starve the small items after it.
	arts := []Artifact{{
		Task:         "a",
		KeyDecisions: []string{strings.Repeat("x", 5000), "Small decision."},
		ModifiedFiles: []string{
			"a.go",
		},
	}}
	res, err := mustNew(t).Build("b", DepMap{"b": {"a"}}, arts)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Block, "Small decision.") || strings.Contains(res.Block, "xxx") {
		t.Errorf("want the small decision and not the huge one:\n%s", res.Block)
	}
	if !strings.Contains(res.Block, "1 item left out") {
		t.Errorf("want the note to count one item:\n%s", res.Block)
	}
}

func TestRenderEmpty(t *testing.T) {
	dupOnly := []Artifact{
		{Task: "a", CreatedAt: at(1), KeyDecisions: []string{"Same."}},
		{Task: "b", CreatedAt: at(0), KeyDecisions: []string{"same.", " "}},
	}
	tests := []struct {
		name  string
		task  string
		graph Graph
		arts  []Artifact
	}{
		{"no graph", "t", nil, nil},
		{"no dependencies", "t", DepMap{}, []Artifact{art("a", 0, 1)}},
		{"dependencies without artifacts", "t", DepMap{"t": {"a"}}, nil},
		{"only blank items", "t", DepMap{"t": {"a"}}, []Artifact{{Task: "a", KeyDecisions: []string{"", "  "}}}},
	}
	for _, tt := range tests {
		for _, budget := range []int{0, DefaultBudget} {
			t.Run(fmt.Sprintf("%s/budget=%d", tt.name, budget), func(t *testing.T) {
				for _, r := range []*Renderer{mustNew(t, WithBudget(budget)), mustNew(t, WithBudget(budget), WithTemplate("x{{.Task}}"))} {
					res, err := r.Build(tt.task, tt.graph, tt.arts)
					if err != nil {
						t.Fatal(err)
					}
					if res.Block != "" || res.OmittedSteps != 0 || res.OmittedItems != 0 {
						t.Errorf("got %+v, want an empty block and nothing omitted", res)
					}
				}
			})
		}
	}
	// A step emptied by deduplication is neither rendered nor left out.
	res, err := mustNew(t).Build("t", DepMap{"t": {"a", "b"}}, dupOnly)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Block, `"b"`) || res.OmittedSteps != 0 || len(res.Steps) != 2 || res.Steps[1].Items != 0 {
		t.Errorf("got %+v, want b reported with no items and not rendered", res)
	}
	var zero Renderer
	if res, err := zero.Build("t", DepMap{"t": {"a"}}, dupOnly); err != nil || !strings.Contains(res.Block, "Same.") {
		t.Errorf("zero Renderer: got %q, %v, want the default layout", res.Block, err)
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name     string
		opts     []Option
		wantLine int
		wantErr  string
	}{
		{"negative budget", []Option{WithBudget(-1)}, 0, "negative context budget: -1 bytes; use 0 for unlimited"},
		{"parse error", []Option{WithTemplate("# Context\n{{range .Steps}}\n{{.Name}\n{{end}}")}, 3, "context template line 3: bad character U+007D '}'; fix the template"},
		{"unclosed action", []Option{WithTemplate("a\nb\n{{if .Note}}")}, 3, "context template line 3: unexpected EOF"},
		{"unknown function", []Option{WithTemplate("{{upper .Task}}")}, 1, `context template line 1: function "upper" not defined`},
		{"unknown field", []Option{WithTemplate("ok\n{{range .Steps}}{{.Summary}}{{end}}")}, 2, "context template line 2: executing"},
		{"bad join argument", []Option{WithTemplate("{{join .Task \", \"}}")}, 1, "wrong type for value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := New(tt.opts...)
			if err == nil {
				t.Fatalf("got %v, want an error", r)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got %q, want it to contain %q", err, tt.wantErr)
			}
			var te *TemplateError
			if errors.As(err, &te) {
				if te.Line != tt.wantLine {
					t.Errorf("line: got %d, want %d", te.Line, tt.wantLine)
				}
				if te.Unwrap() == nil {
					t.Error("TemplateError does not unwrap to text/template's error")
				}
			} else if tt.wantLine != 0 {
				t.Errorf("got %T, want *TemplateError", err)
			} else if !errors.Is(err, ErrNegativeBudget) {
				t.Errorf("got %v, want ErrNegativeBudget", err)
			}
		})
	}
}

func TestRenderTemplateError(t *testing.T) {
	// Index errors depend on the data, so New cannot see them: the sample
	// data has a missing ancestor, the seed's chain has none.
	r := mustNew(t, WithTemplate("line one\n{{index .Missing 0}}"))
	task, g, arts := seedChain()
	_, err := r.Build(task, g, arts)
	var te *TemplateError
	if !errors.As(err, &te) || te.Line != 2 {
		t.Fatalf("got %v, want a *TemplateError at line 2", err)
	}
	var ee template.ExecError
	if !errors.As(err, &ee) {
		t.Errorf("got %v, want it to wrap a template.ExecError", err)
	}
}

func TestRenderNonMonotoneTemplate(t *testing.T) {
	// This template is short while anything is left out and long when
	// nothing is, which defeats fitting by trial: the final check must
	// trim until the block fits.
	tmpl := `{{if or .OmittedSteps .OmittedItems}}partial{{else}}{{range .Steps}}{{.Name}}: {{join .KeyDecisions "; "}}
{{end}}{{end}}`
	arts := []Artifact{
		{Task: "a", CreatedAt: at(2), KeyDecisions: []string{"one", "two", "three"}},
		{Task: "b", CreatedAt: at(1), KeyDecisions: []string{"four", "five"}},
	}
	r := mustNew(t, WithTemplate(tmpl), WithBudget(12))
	res, err := r.Build("t", DepMap{"t": {"a", "b"}}, arts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Block) > 12 {
		t.Errorf("block %q is over the 12-byte budget", res.Block)
	}
	if res.Block != "partial" {
		t.Errorf("got %q, want %q", res.Block, "partial")
	}
}

func TestPrompt(t *testing.T) {
	tests := []struct{ base, block, want string }{
		{"Write the frontend.", "", "Write the frontend."},
		{"Write the frontend.", "\n \n", "Write the frontend."},
		{"Write the frontend.", "# Context\nx\n", "# Context\nx\n\nWrite the frontend."},
		{"Write the frontend.", "# Context\nx", "# Context\nx\n\nWrite the frontend."},
		{"", "# Context\nx\n\n", "# Context\nx\n"},
	}
	for _, tt := range tests {
		if got := Prompt(tt.base, tt.block); got != tt.want {
			t.Errorf("Prompt(%q, %q): got %q, want %q", tt.base, tt.block, got, tt.want)
		}
	}
}

func TestPartialNote(t *testing.T) {
	tests := []struct {
		steps, items int
		want         string
	}{
		{0, 0, ""},
		{1, 0, "Context is partial: 1 earlier step left out to fit the 4096-byte context budget."},
		{0, 1, "Context is partial: 1 item left out to fit the 4096-byte context budget."},
		{2, 5, "Context is partial: 2 earlier steps and 5 items left out to fit the 4096-byte context budget."},
	}
	for _, tt := range tests {
		if got := partialNote(tt.steps, tt.items, 4096); got != tt.want {
			t.Errorf("partialNote(%d, %d): got %q, want %q", tt.steps, tt.items, got, tt.want)
		}
	}
	// Fitting relies on the note never getting shorter as a count grows.
	for s := range 120 {
		for i := range 120 {
			n := len(partialNote(s, i, 4096))
			if len(partialNote(s+1, i, 4096)) < n || len(partialNote(s, i+1, 4096)) < n {
				t.Fatalf("note shrinks after (%d, %d)", s, i)
			}
		}
	}
}

// randomArtifacts builds a random run: tasks t0..tn-1, each depending on
// some earlier ones, with artifacts of random sizes, versions, duplicates
// and blank items.
func randomArtifacts(rng *rand.Rand) (string, DepMap, []Artifact) {
	n := 1 + rng.IntN(12)
	g := DepMap{}
	var arts []Artifact
	words := []string{"zod", "postgres", "JWT", "root", "cache", "retry", "x-api-key", "migrations", "  ", "", "ünïcödé", "a\nb"}
	text := func() string {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteByte(' ')
		}
		if rng.IntN(10) == 0 {
			b.WriteString(strings.Repeat("long ", rng.IntN(200)))
		}
		return b.String()
	}
	list := func() []string {
		var l []string
		for range rng.IntN(6) {
			l = append(l, text())
		}
		return l
	}
	for i := range n {
		name := fmt.Sprintf("t%d", i)
		for j := range i {
			if rng.IntN(3) == 0 {
				g[name] = append(g[name], fmt.Sprintf("t%d", j))
			}
		}
		if rng.IntN(20) == 0 && i > 0 { // an occasional cycle
			g[fmt.Sprintf("t%d", rng.IntN(i))] = append(g[fmt.Sprintf("t%d", rng.IntN(i))], name)
		}
		for v := range rng.IntN(3) {
			arts = append(arts, Artifact{
				Task: name, Title: text(), CreatedAt: at(rng.IntN(60)), Version: v + 1,
				KeyDecisions: list(), ModifiedFiles: list(), NewPatterns: list(), PotentialGotchas: list(),
			})
		}
	}
	return fmt.Sprintf("t%d", n-1), g, arts
}

// TestBudgetProperty checks over random chains and budgets that a block
// never exceeds its budget, that the reports add up and agree with the
// note, and that the default layout and DefaultTemplate give the same bytes.
func TestBudgetProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 1000 {
		task, g, arts := randomArtifacts(rng)
		chain := Collect(task, g, arts)
		full, err := mustNew(t, WithBudget(0)).Render(chain)
		if err != nil {
			t.Fatal(err)
		}
		budget := 1 + rng.IntN(len(full.Block)+200)
		if iter%10 == 0 {
			budget = 0
		}
		layout := mustNew(t, WithBudget(budget))
		tmpl := mustNew(t, WithBudget(budget), WithTemplate(DefaultTemplate))
		a, err := layout.Render(chain)
		if err != nil {
			t.Fatal(err)
		}
		b, err := tmpl.Render(chain)
		if err != nil {
			t.Fatal(err)
		}
		if a.Block != b.Block || fmt.Sprint(a.Steps) != fmt.Sprint(b.Steps) {
			t.Fatalf("iteration %d, budget %d: layout and DefaultTemplate differ:\n%q\n%q\n%v\n%v", iter, budget, a.Block, b.Block, a.Steps, b.Steps)
		}
		if budget > 0 && len(a.Block) > budget {
			t.Fatalf("iteration %d: %d-byte block over the %d-byte budget", iter, len(a.Block), budget)
		}
		if budget == 0 || budget >= len(full.Block) {
			if a.Block != full.Block || a.OmittedSteps+a.OmittedItems != 0 {
				t.Fatalf("iteration %d: budget %d fits everything (%d bytes) but got %d bytes, omitted %d+%d", iter, budget, len(full.Block), len(a.Block), a.OmittedSteps, a.OmittedItems)
			}
		}
		var steps, items int
		for _, s := range a.Steps {
			if s.Included+s.Omitted != s.Items || s.Included < 0 || s.Omitted < 0 {
				t.Fatalf("iteration %d: bad report %+v", iter, s)
			}
			if s.Items > 0 && s.Included == 0 {
				steps++
			} else if s.Included > 0 {
				items += s.Omitted
			}
		}
		if steps != a.OmittedSteps || items != a.OmittedItems {
			t.Fatalf("iteration %d: totals %d/%d, reports add to %d/%d", iter, a.OmittedSteps, a.OmittedItems, steps, items)
		}
		if a.Block != "" {
			note := partialNote(steps, items, budget)
			if note != "" && !strings.HasSuffix(a.Block, "*"+note+"*\n") {
				t.Fatalf("iteration %d: block does not end with %q:\n%s", iter, note, a.Block)
			}
			if note == "" && strings.Contains(a.Block, "Context is partial") {
				t.Fatalf("iteration %d: note without omissions:\n%s", iter, a.Block)
			}
		}
	}
}
