// Package depgraph reads the module's package import graph from `go
// list`, holds it to the import rules docs/architecture.md states (its
// tables are the rules: the test at the module's root, TestArchitecture,
// reads them from the page), and measures the figures that page reports:
// packages, floors of the graph, the largest types and files, test lines
// per package (go run ./bench/architecture prints them for any checkout).
//
// Only what a build links counts: a package's non-test imports. A test
// may import anything (the daemon's tests start an engine); the binary
// and the packages others import may not.
package depgraph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
)

// Package is one package of the graph, as `go list` describes it.
type Package struct {
	// ImportPath is the package's full import path.
	ImportPath string
	// Name is the path within the module for the module's packages
	// ("host/api", "hearth" for the root), the import path for others.
	Name string
	Dir  string
	// InModule is set for the module's own packages; Standard for the
	// standard library's.
	InModule bool
	Standard bool
	// Imports are the non-test imports, as full import paths.
	Imports []string
	// GoFiles are the files a build compiles (on this platform);
	// TestFiles the package's _test.go files, internal and external.
	GoFiles   []string
	TestFiles []string
}

// Graph is the module's packages and everything they import.
type Graph struct {
	// Module is the module's path; Dir its root directory.
	Module string
	Dir    string
	// Packages are every package of the graph by import path.
	Packages map[string]*Package

	// own caches which patterns name the module's packages.
	own map[string]bool
}

// listed is what `go list -json` says of a package, as far as it is read.
type listed struct {
	ImportPath   string
	Dir          string
	Standard     bool
	Module       *struct{ Path, Dir string }
	Imports      []string
	GoFiles      []string
	CgoFiles     []string
	TestGoFiles  []string
	XTestGoFiles []string
	Error        *struct{ Err string }
}

// Load lists the packages of the module in dir and everything they
// import, with `go list -deps -json ./...` (the go command must be on
// PATH). The module is dir's: run it at the module's root.
func Load(ctx context.Context, dir string) (*Graph, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-deps", "-json", "./...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps -json ./... in %s: %w\n%s", dir, err, stderr.Bytes())
	}
	mod := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Path}}\t{{.Dir}}")
	mod.Dir = dir
	m, err := mod.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -m in %s: %w", dir, err)
	}
	path, root, ok := strings.Cut(strings.TrimSpace(string(m)), "\t")
	if !ok {
		return nil, fmt.Errorf("go list -m in %s said %q: run it in one module", dir, m)
	}
	return parse(bytes.NewReader(out), path, root)
}

// parse reads the JSON stream of `go list -json` for module at root.
func parse(r io.Reader, module, root string) (*Graph, error) {
	g := &Graph{Module: module, Dir: root, Packages: make(map[string]*Package)}
	dec := json.NewDecoder(r)
	for {
		var l listed
		err := dec.Decode(&l)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read go list's output: %w", err)
		}
		if l.Error != nil {
			return nil, fmt.Errorf("go list: package %s: %s", l.ImportPath, l.Error.Err)
		}
		p := &Package{ImportPath: l.ImportPath, Name: l.ImportPath, Dir: l.Dir, Standard: l.Standard,
			Imports: l.Imports, GoFiles: append(l.GoFiles, l.CgoFiles...), TestFiles: append(l.TestGoFiles, l.XTestGoFiles...)}
		if l.Module != nil && l.Module.Path == module {
			p.InModule = true
			p.Name = g.name(l.ImportPath)
		}
		g.Packages[p.ImportPath] = p
	}
	return g, nil
}

// name is the path within the module of the module's package path: the
// root is called by the module's last element ("hearth").
func (g *Graph) name(importPath string) string {
	if importPath == g.Module {
		return g.Module[strings.LastIndex(g.Module, "/")+1:]
	}
	return strings.TrimPrefix(importPath, g.Module+"/")
}

// Own returns the module's packages, sorted by name.
func (g *Graph) Own() []*Package {
	var out []*Package
	for _, p := range g.Packages {
		if p.InModule {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ownImports are p's imports that are the module's own packages.
func (g *Graph) ownImports(p *Package) []*Package {
	var out []*Package
	for _, imp := range p.Imports {
		if q := g.Packages[imp]; q != nil && q.InModule {
			out = append(out, q)
		}
	}
	return out
}
