package depgraph

import (
	"strings"
	"testing"
)

// fake is a graph of the module example.com/hearth with the imports
// given by package name; a name with a dot in its first element, or
// "testing", is outside the module.
func fake(imports map[string][]string) *Graph {
	const module = "example.com/hearth"
	g := &Graph{Module: module, Packages: make(map[string]*Package)}
	path := func(name string) string {
		if first, _, _ := strings.Cut(name, "/"); strings.Contains(first, ".") || name == "testing" {
			return name
		}
		return module + "/" + name
	}
	add := func(name string) *Package {
		p := g.Packages[path(name)]
		if p == nil {
			p = &Package{ImportPath: path(name), Name: name, InModule: path(name) != name}
			g.Packages[p.ImportPath] = p
		}
		return p
	}
	for from, tos := range imports {
		p := add(from)
		for _, to := range tos {
			add(to)
			p.Imports = append(p.Imports, path(to))
		}
	}
	return g
}

func TestRulesCanFail(t *testing.T) {
	page := []byte(strings.Join([]string{
		"| from | must not reach | why |",
		"| --- | --- | --- |",
		"| `host/api/client` | `host/engine` | the client links no engine |",
		"| `host/runs`, `host/pool` | each other | side by side |",
		"| `*` but `cmd/...` | `testing` | no test kit outside tests |",
		"",
		"| from | must not import | why |",
		"| --- | --- | --- |",
		"| `cmd/...` | `google.golang.org/grpc/...` | no gRPC type in the CLI |",
		"",
		"| from | reaches | until |",
		"| --- | --- | --- |",
		"| `host/runs` | `host/pool` | someone lands |",
	}, "\n"))
	rules, exceptions, err := ParseRules(page, "page.md")
	if err != nil {
		t.Fatal(err)
	}
	g := fake(map[string][]string{
		"host/api/client": {"host/cluster"},
		"host/cluster":    {"host/engine"},
		"host/engine":     {"host/runs"},
		"host/runs":       {"host/pool"},
		"host/pool":       {"host/runs", "sdk/sdktest"},
		"sdk/sdktest":     {"testing"},
		// Reached through a package outside the module: not the
		// module's doing, and not followed.
		"host/process":                   {"github.com/hashicorp/go-plugin"},
		"github.com/hashicorp/go-plugin": {"testing"},
		"cmd/hearth":                     {"host/api/client", "google.golang.org/grpc/status", "host/process"},
	})
	violations, err := g.Check(rules)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range violations {
		got = append(got, v.From+" -> "+v.To+" via "+strings.Join(v.Path, ",")+" at "+v.Rule.At)
	}
	want := []string{
		"host/api/client -> host/engine via host/api/client,host/cluster,host/engine at page.md:3",
		"host/pool -> host/runs via host/pool,host/runs at page.md:4",
		"host/runs -> host/pool via host/runs,host/pool at page.md:4",
		"host/api/client -> testing via host/api/client,host/cluster,host/engine,host/runs,host/pool,sdk/sdktest,testing at page.md:5",
		"host/cluster -> testing via host/cluster,host/engine,host/runs,host/pool,sdk/sdktest,testing at page.md:5",
		"host/engine -> testing via host/engine,host/runs,host/pool,sdk/sdktest,testing at page.md:5",
		"host/pool -> testing via host/pool,sdk/sdktest,testing at page.md:5",
		"host/runs -> testing via host/runs,host/pool,sdk/sdktest,testing at page.md:5",
		"sdk/sdktest -> testing via sdk/sdktest,testing at page.md:5",
		"cmd/hearth -> google.golang.org/grpc/status via cmd/hearth,google.golang.org/grpc/status at page.md:9",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	left, stale := Apply(violations, exceptions)
	if len(left) != len(want)-1 || len(stale) != 0 {
		t.Errorf("after the exception: %d left, %d stale; want %d and 0", len(left), len(stale), len(want)-1)
	}
	// Once the pair is gone, its exception is stale.
	if _, stale := Apply(nil, exceptions); len(stale) != 1 || stale[0].At != "page.md:13" {
		t.Errorf("stale exceptions %+v; want the one at page.md:13", stale)
	}
}

func TestRulesNamingNoPackageAreErrors(t *testing.T) {
	g := fake(map[string][]string{"host/api/client": {"host/engine"}})
	for _, row := range []string{
		"| `host/api/clinet` | `host/engine` | a typo |",
		"| `host/api/client` | `host/store` | a package that moved |",
		"| `*` but `cmd/...` | `host/engine` | a but that names nothing |",
	} {
		rules, _, err := ParseRules([]byte("| from | must not reach | why |\n| - | - | - |\n"+row+"\n"), "page.md")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Check(rules); err == nil || !strings.Contains(err.Error(), "page.md:3") {
			t.Errorf("%s: %v; want an error at page.md:3", row, err)
		}
	}
	for _, row := range []string{
		"| host/api | `host/engine` | no backquotes |",
		"| `host/api` | `host/engine` |",
	} {
		if _, _, err := ParseRules([]byte("| from | must not reach | why |\n| - | - | - |\n"+row+"\n"), "page.md"); err == nil || !strings.Contains(err.Error(), "page.md:3") {
			t.Errorf("%s: %v; want an error at page.md:3", row, err)
		}
	}
}

func TestPackageMap(t *testing.T) {
	g := fake(map[string][]string{"host/api": {"host/api/client"}, "internal/text": nil})
	rows, err := ParseMap([]byte("| package | what it holds |\n| --- | --- |\n| `host/api` | the daemon |\n| `host/gone` | moved away |\n"), "page.md")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(g.CheckMap(rows), "\n")
	for _, want := range []string{"page.md:4: the package map names host/gone", "package host/api/client is not in the package map", "package internal/text is not in the package map"} {
		if !strings.Contains(got, want) {
			t.Errorf("map problems:\n%s\nlack %q", got, want)
		}
	}
}

func TestFloors(t *testing.T) {
	g := fake(map[string][]string{
		"cmd/hearth":  {"host/api", "sdk"},
		"host/api":    {"host/engine", "google.golang.org/grpc"},
		"host/engine": {"sdk"},
		"matcher":     nil,
	})
	floors, chain := g.floors(g.Own())
	if floors != 4 || strings.Join(chain, " ") != "cmd/hearth host/api host/engine sdk" {
		t.Errorf("floors %d, chain %v; want 4: cmd/hearth host/api host/engine sdk", floors, chain)
	}
}
