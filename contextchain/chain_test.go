package contextchain

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// at is a fixed time minute minutes into the test day.
func at(minute int) time.Time {
	return time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC).Add(time.Duration(minute) * time.Minute)
}

// art is an artifact with one decision named after its task, so that it is
// never empty and never a duplicate.
func art(task string, minute, version int) Artifact {
	return Artifact{Task: task, CreatedAt: at(minute), Version: version, KeyDecisions: []string{"decision of " + task}}
}

// order renders a chain's steps as "task@distance".
func order(c Chain) []string {
	var out []string
	for _, s := range c.Steps {
		out = append(out, fmt.Sprintf("%s@%d", s.Task, s.Distance))
	}
	return out
}

func TestCollectOrder(t *testing.T) {
	tests := []struct {
		name        string
		task        string
		graph       Graph
		artifacts   []Artifact
		wantSteps   []string
		wantMissing []string
	}{
		{
			name:      "direct before transitive",
			task:      "c",
			graph:     DepMap{"c": {"b"}, "b": {"a"}},
			artifacts: []Artifact{art("a", 50, 1), art("b", 10, 1)},
			// a is newer, but b is closer.
			wantSteps: []string{"b@1", "a@2"},
		},
		{
			name:      "newest first within a level",
			task:      "z",
			graph:     DepMap{"z": {"x", "y", "w"}},
			artifacts: []Artifact{art("x", 1, 1), art("y", 3, 1), art("w", 2, 1)},
			wantSteps: []string{"y@1", "w@1", "x@1"},
		},
		{
			name:      "equal times break by task name",
			task:      "z",
			graph:     DepMap{"z": {"b", "c", "a"}},
			artifacts: []Artifact{art("c", 1, 1), art("a", 1, 1), art("b", 1, 1)},
			wantSteps: []string{"a@1", "b@1", "c@1"},
		},
		{
			name:  "shortest distance wins on a diamond",
			task:  "d",
			graph: DepMap{"d": {"b", "c"}, "b": {"a"}, "c": {"a"}, "a": {"root"}},
			artifacts: []Artifact{
				art("a", 1, 1), art("b", 2, 1), art("c", 3, 1), art("root", 9, 1),
			},
			wantSteps: []string{"c@1", "b@1", "a@2", "root@3"},
		},
		{
			name:  "a dependency listed both directly and transitively is direct",
			task:  "c",
			graph: DepMap{"c": {"b", "a"}, "b": {"a"}},
			artifacts: []Artifact{
				art("a", 1, 1), art("b", 2, 1),
			},
			wantSteps: []string{"b@1", "a@1"},
		},
		{
			name:        "ancestors without an artifact are missing but traversed",
			task:        "d",
			graph:       DepMap{"d": {"c", "b"}, "c": {"a"}, "b": {"x"}},
			artifacts:   []Artifact{art("a", 1, 1)},
			wantSteps:   []string{"a@2"},
			wantMissing: []string{"b", "c", "x"},
		},
		{
			name:        "cycle does not hang and skips the task itself",
			task:        "a",
			graph:       DepMap{"a": {"b"}, "b": {"c"}, "c": {"a", "b"}},
			artifacts:   []Artifact{art("a", 9, 1), art("b", 1, 1), art("c", 2, 1)},
			wantSteps:   []string{"b@1", "c@2"},
			wantMissing: nil,
		},
		{
			name:      "self loop",
			task:      "a",
			graph:     DepMap{"a": {"a", "b"}, "b": {"b"}},
			artifacts: []Artifact{art("b", 1, 1)},
			wantSteps: []string{"b@1"},
		},
		{
			name:      "artifacts of unrelated tasks are ignored",
			task:      "b",
			graph:     DepMap{"b": {"a"}, "c": {"b"}},
			artifacts: []Artifact{art("a", 1, 1), art("c", 2, 1), art("b", 3, 1)},
			wantSteps: []string{"a@1"},
		},
		{
			name:      "nil graph",
			task:      "a",
			graph:     nil,
			artifacts: []Artifact{art("b", 1, 1)},
		},
		{
			name:  "no dependencies",
			task:  "a",
			graph: DepMap{},
		},
		{
			name:        "no artifacts",
			task:        "b",
			graph:       DepMap{"b": {"a"}},
			wantMissing: []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Collect(tt.task, tt.graph, tt.artifacts)
			if got := order(c); !slices.Equal(got, tt.wantSteps) {
				t.Errorf("steps: got %q, want %q", got, tt.wantSteps)
			}
			if !slices.Equal(c.Missing, tt.wantMissing) {
				t.Errorf("missing: got %q, want %q", c.Missing, tt.wantMissing)
			}
			if c.Task != tt.task {
				t.Errorf("task: got %q, want %q", c.Task, tt.task)
			}
		})
	}
}

func TestCollectOrderIgnoresInputOrder(t *testing.T) {
	g := DepMap{"z": {"a", "b", "c", "d"}, "a": {"e"}, "b": {"e", "f"}}
	arts := []Artifact{art("a", 1, 1), art("b", 1, 1), art("c", 5, 1), art("d", 0, 1), art("e", 3, 1), art("f", 3, 1)}
	want := order(Collect("z", g, arts))
	for i := range 20 {
		g2 := DepMap{}
		for k, v := range g {
			v2 := slices.Clone(v)
			rotate(v2, i)
			g2[k] = v2
		}
		a2 := slices.Clone(arts)
		rotate(a2, i)
		if got := order(Collect("z", g2, a2)); !slices.Equal(got, want) {
			t.Fatalf("rotation %d: got %q, want %q", i, got, want)
		}
	}
}

func rotate[T any](s []T, n int) {
	if len(s) == 0 {
		return
	}
	n %= len(s)
	slices.Reverse(s[:n])
	slices.Reverse(s[n:])
	slices.Reverse(s)
}

func TestCollectVersions(t *testing.T) {
	v := func(version, minute int, note string) Artifact {
		return Artifact{Task: "a", Version: version, CreatedAt: at(minute), KeyDecisions: []string{note}}
	}
	tests := []struct {
		name      string
		artifacts []Artifact
		want      string
	}{
		{"highest version wins", []Artifact{v(1, 5, "one"), v(3, 1, "three"), v(2, 9, "two")}, "three"},
		{"equal versions: latest time wins", []Artifact{v(2, 5, "late"), v(2, 1, "early")}, "late"},
		{"equal version and time: given last wins", []Artifact{v(1, 1, "first"), v(1, 1, "second")}, "second"},
		{"unversioned counts as oldest", []Artifact{v(1, 1, "one"), v(0, 9, "zero")}, "one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Collect("b", DepMap{"b": {"a"}}, tt.artifacts)
			if len(c.Steps) != 1 {
				t.Fatalf("got %d steps, want 1", len(c.Steps))
			}
			if got := c.Steps[0].KeyDecisions; !slices.Equal(got, []string{tt.want}) {
				t.Errorf("got %q, want [%q]", got, tt.want)
			}
		})
	}
}

func TestCollectVersionOrdersByNewestVersionTime(t *testing.T) {
	// x's newest version is newer than y's, even though x's first run was
	// older: ordering uses the artifact that counts.
	arts := []Artifact{art("x", 1, 1), art("y", 5, 1), art("x", 9, 2)}
	c := Collect("z", DepMap{"z": {"y", "x"}}, arts)
	if got, want := order(c), []string{"x@1", "y@1"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestCollectDedup(t *testing.T) {
	arts := []Artifact{
		{
			Task: "near", CreatedAt: at(1),
			KeyDecisions:     []string{"Use  Zod for validation.", "  ", "use zod\nfor VALIDATION."},
			ModifiedFiles:    []string{"./src/a.go", "src//b.go", ""},
			NewPatterns:      []string{"All APIs need x-api-key."},
			PotentialGotchas: []string{"Migrations need root."},
		},
		{
			Task: "far", CreatedAt: at(9),
			KeyDecisions:     []string{"USE ZOD FOR VALIDATION.", "Postgres 16."},
			ModifiedFiles:    []string{"src/a.go", "src/A.go", "src/b.go/"},
			NewPatterns:      []string{"all apis need   x-api-key."},
			PotentialGotchas: []string{"\tMigrations need root.\n"},
		},
		{
			Task: "empty", CreatedAt: at(5),
			KeyDecisions:  []string{"postgres 16."},
			ModifiedFiles: []string{"src/b.go"},
		},
	}
	g := DepMap{"t": {"near"}, "near": {"far", "empty"}}
	c := Collect("t", g, arts)
	if got, want := order(c), []string{"near@1", "far@2", "empty@2"}; !slices.Equal(got, want) {
		t.Fatalf("order: got %q, want %q", got, want)
	}
	type lists struct{ d, f, p, g []string }
	want := []struct {
		l    lists
		dups int
	}{
		{lists{[]string{"Use  Zod for validation."}, []string{"src/a.go", "src/b.go"}, []string{"All APIs need x-api-key."}, []string{"Migrations need root."}}, 1},
		{lists{[]string{"Postgres 16."}, []string{"src/A.go"}, nil, nil}, 5},
		{lists{nil, nil, nil, nil}, 2},
	}
	for i, s := range c.Steps {
		got := lists{s.KeyDecisions, s.ModifiedFiles, s.NewPatterns, s.PotentialGotchas}
		w := want[i].l
		if !slices.Equal(got.d, w.d) || !slices.Equal(got.f, w.f) || !slices.Equal(got.p, w.p) || !slices.Equal(got.g, w.g) {
			t.Errorf("step %s: got %q, want %q", s.Task, got, w)
		}
		if s.Duplicates != want[i].dups {
			t.Errorf("step %s duplicates: got %d, want %d", s.Task, s.Duplicates, want[i].dups)
		}
	}
	// The input is not modified.
	if arts[0].KeyDecisions[2] != "use zod\nfor VALIDATION." || arts[0].ModifiedFiles[0] != "./src/a.go" {
		t.Errorf("Collect modified its input: %+v", arts[0])
	}
}

func TestCollectDedupIsPerKind(t *testing.T) {
	arts := []Artifact{{Task: "a", KeyDecisions: []string{"Same text."}, NewPatterns: []string{"same text."}, PotentialGotchas: []string{"SAME TEXT."}}}
	c := Collect("b", DepMap{"b": {"a"}}, arts)
	s := c.Steps[0]
	if len(s.KeyDecisions) != 1 || len(s.NewPatterns) != 1 || len(s.PotentialGotchas) != 1 || s.Duplicates != 0 {
		t.Errorf("got %+v, want one item in each list and no duplicates", s)
	}
}

func TestName(t *testing.T) {
	tests := []struct{ title, task, want string }{
		{"Database Setup", "db", "Database Setup"},
		{"  Database\n  Setup ", "db", "Database Setup"},
		{" \t", "db", "db"},
		{"", "db", "db"},
	}
	for _, tt := range tests {
		if got := (Artifact{Title: tt.title, Task: tt.task}).Name(); got != tt.want {
			t.Errorf("Name(%q, %q): got %q, want %q", tt.title, tt.task, got, tt.want)
		}
	}
}

func TestAppendTextKey(t *testing.T) {
	tests := []struct{ in, want string }{
		{"  Use Zod\n\tfor   VALIDATION. ", "use zod for validation."},
		{"ÜNÏCÖDÉ", "ünïcödé"},
		{"", ""},
		{" \n ", ""},
		{"a\xffb", "a\xffb"},
		{" \xfe x", "\xfe x"},
	}
	for _, tt := range tests {
		if got := string(appendTextKey(nil, tt.in)); got != tt.want {
			t.Errorf("appendTextKey(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
	if string(appendTextKey(nil, "\xff")) == string(appendTextKey(nil, "\xfe")) {
		t.Error("distinct invalid bytes share a key")
	}
}
