package workload

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth/matcher"
)

func TestCodeTour(t *testing.T) {
	w := tourWorkload(t)
	if len(w.Questions) != 48 || len(w.Packages) != 12 || w.Repeats() != 36 {
		t.Fatalf("got %d questions about %d packages, %d repeats; want 48, 12, 36", len(w.Questions), len(w.Packages), w.Repeats())
	}
	q := w.Questions[0]
	want := Question{Prompt: "summary net/http", Package: "net/http", Hints: matcher.Hints{Dirs: []string{"net/http"}, Techs: []string{"go"}}}
	if !reflect.DeepEqual(q, want) {
		t.Errorf("first question: got %+v, want %+v", q, want)
	}
	for pkg, files := range w.Packages {
		for _, f := range files {
			if path.Dir(f) != pkg || strings.HasSuffix(f, "_test.go") {
				t.Errorf("package %s lists %s, want its own non-test files", pkg, f)
			}
		}
	}
	if err := w.Validate(); err != nil {
		t.Error(err)
	}
}

func TestParseTourErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"no pipeline", `agent "a" {}`, "tour.hcl: no pipeline block"},
		{"no tasks", `pipeline "p" {}`, `tour.hcl:1:1: pipeline "p" has no tasks`},
		{"no prompt", `pipeline "p" {
  task "t" {}
}`, "tour.hcl:2:12: Missing required argument"},
		{"prompt without a package", `pipeline "p" {
  task "t" { prompt = "summary" }
}`, `tour.hcl:2:3: task "t": prompt "summary" names no package`},
		{"not a literal", `pipeline "p" {
  task "t" { prompt = var.x }
}`, "tour.hcl:2:23: Variables not allowed"},
		{"not a list", `pipeline "p" {
  task "t" {
    prompt = "summary a"
    directories = "a"
  }
}`, "tour.hcl:4:19: directories must be a literal list of strings"},
		{"syntax", `pipeline "p" {`, "tour.hcl:1:14: Unclosed configuration block"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseTour([]byte(tc.src), "tour.hcl")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	qs, err := parseTour([]byte(`agent "gotour" { bundled = "gotour" }
pipeline "p" {
  agent = "gotour"
  task "t" {
    prompt       = "symbol ./net//http Server"
    files        = ["net/http/server.go"]
    technologies = ["go"]
    depends_on   = []
  }
}`), "tour.hcl")
	want := []Question{{Prompt: "symbol ./net//http Server", Package: "net/http",
		Hints: matcher.Hints{Files: []string{"net/http/server.go"}, Techs: []string{"go"}}}}
	if err != nil || !reflect.DeepEqual(qs, want) {
		t.Errorf("got %+v, %v, want %+v", qs, err, want)
	}
}

// FuzzParseTour: whatever the file holds, reading it returns questions
// that each name a package, or an error; it never panics.
func FuzzParseTour(f *testing.F) {
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", "code-tour", "hearth.hcl"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(src)
	f.Add([]byte(`pipeline "p" { task "t" { prompt = "imports a" } }`))
	f.Fuzz(func(t *testing.T, src []byte) {
		qs, err := parseTour(src, "fuzz.hcl")
		if err != nil {
			return
		}
		for _, q := range qs {
			if q.Package == "" || len(strings.Fields(q.Prompt)) < 2 {
				t.Errorf("question %+v names no package", q)
			}
		}
	})
}

func TestModuleCache(t *testing.T) {
	w := moduleWorkload(t)
	if len(w.Packages) != 22 || len(w.Questions) != 88 {
		t.Fatalf("got %d packages, %d questions; want 22, 88", len(w.Packages), len(w.Questions))
	}
	for _, q := range w.Questions {
		if !strings.Contains(q.Package, "@v") || !slices.Equal(q.Hints.Dirs, []string{q.Package}) || !slices.Equal(q.Hints.Techs, []string{"go"}) {
			t.Errorf("question %q: package %s, hints %+v; want a module cache path and its directory, Go", q.Prompt, q.Package, q.Hints)
		}
		// The name a symbol or callers question asks about is declared
		// in the file it names.
		if f := q.Hints.Files; len(f) == 1 {
			name := strings.Fields(q.Prompt)[2]
			if !declares(t, filepath.Join(w.Root, filepath.FromSlash(f[0])), name) {
				t.Errorf("question %q names %s, which does not declare %s", q.Prompt, f[0], name)
			}
		}
	}
	if err := w.Validate(); err != nil {
		t.Error(err)
	}
	if _, err := ModuleCache(w.Root, map[string]string{}, DefaultModules, 1); err == nil || !strings.Contains(err.Error(), "FindModules") {
		t.Errorf("a module not found: got %v, want an error saying where to find it", err)
	}
}

// declares reports whether the Go file at p declares name at top level.
func declares(t *testing.T, p, name string) bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.Name == name {
				return true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.Name == name {
					return true
				}
			}
		}
	}
	return false
}

func TestDeep(t *testing.T) {
	w := Deep(DefaultDeep)
	if !reflect.DeepEqual(w, Deep(DefaultDeep)) {
		t.Fatal("two workloads from one seed differ")
	}
	if len(w.Packages) != 17 || len(w.Questions) != 68 {
		t.Fatalf("got %d packages, %d questions; want 17, 68", len(w.Packages), len(w.Questions))
	}
	siblings, nested := 0, 0
	for pkg := range w.Packages {
		if !strings.HasPrefix(pkg, DefaultDeep.Prefix+"/") {
			t.Errorf("package %s is not under %s", pkg, DefaultDeep.Prefix)
		}
		if d := strings.Count(pkg, "/") + 1; d < 5 || d > 7 {
			t.Errorf("package %s has depth %d, want 5 to 7", pkg, d)
		}
		for other := range w.Packages {
			switch {
			case other != pkg && path.Dir(other) == path.Dir(pkg):
				siblings++
			case strings.HasPrefix(other, pkg+"/"):
				nested++
			}
		}
	}
	if siblings == 0 || nested == 0 {
		t.Errorf("%d sibling pairs, %d nested packages: want packages beside and below others", siblings, nested)
	}
	if err := w.Validate(); err != nil {
		t.Error(err)
	}
	if other := Deep(DeepOptions{Seed: 2, Prefix: "x", Areas: 1, Groups: 1, Packages: 2, MaxFiles: 3}); len(other.Packages) != 2 {
		t.Errorf("one area, group, two packages: got %d packages", len(other.Packages))
	}

	// Written, the tree is Go an agent can read, declaring what the
	// questions ask about.
	dir := t.TempDir()
	written, err := WriteDeep(w, dir)
	if err != nil {
		t.Fatal(err)
	}
	if written.Root != dir {
		t.Errorf("root: got %q, want %q", written.Root, dir)
	}
	for _, q := range written.Questions {
		files, err := goFiles(dir, q.Package)
		if err != nil || !slices.Equal(files, w.Packages[q.Package]) {
			t.Fatalf("package %s on disk: got %v, %v, want %v", q.Package, files, err, w.Packages[q.Package])
		}
		if f := strings.Fields(q.Prompt); len(f) == 3 {
			found := false
			for _, file := range files {
				found = found || declares(t, filepath.Join(dir, filepath.FromSlash(file)), f[2])
			}
			if !found {
				t.Errorf("question %q: no file of %s declares %s", q.Prompt, q.Package, f[2])
			}
		}
	}
}

func TestInterleave(t *testing.T) {
	w := Deep(DefaultDeep)
	a, b, c := w.Interleave(1), w.Interleave(1), w.Interleave(2)
	if !reflect.DeepEqual(a, b) {
		t.Error("one seed, two orders")
	}
	if reflect.DeepEqual(a.Questions, c.Questions) || reflect.DeepEqual(a.Questions, w.Questions) {
		t.Error("another seed, or none, gives the same order")
	}
	sorted := func(qs []Question) []string {
		var out []string
		for _, q := range qs {
			out = append(out, q.Prompt)
		}
		slices.Sort(out)
		return out
	}
	if !slices.Equal(sorted(a.Questions), sorted(w.Questions)) {
		t.Error("interleaving changed the questions, not only their order")
	}
	if a.Repeats() != w.Repeats() {
		t.Errorf("repeats: got %d, want %d", a.Repeats(), w.Repeats())
	}
}

func TestValidate(t *testing.T) {
	w := Workload{Name: "w", Packages: map[string][]string{"a": nil}, Questions: []Question{{Prompt: "summary b", Package: "b"}}}
	err := w.Validate()
	if err == nil || !strings.Contains(err.Error(), "package a has no files") || !strings.Contains(err.Error(), "is about b, which the workload does not list") {
		t.Errorf("got %v", err)
	}
	if _, err := Simulate(w, DefaultPool, Naive, nil); err == nil {
		t.Error("Simulate of an invalid workload: got nil error")
	}
}
