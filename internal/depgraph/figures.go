package depgraph

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Figures are what docs/architecture.md reports of the module's
// structure. Only the module's packages count; generated files (a "Code
// generated ... DO NOT EDIT." line) count as packages' files but not
// among the largest.
type Figures struct {
	// Packages counts the module's packages.
	Packages int
	// Floors is the length of the longest chain of imports among them: a
	// package importing none of the module's is on floor 1, one that
	// imports it on floor 2, and so on. Chain is one longest chain, top
	// first.
	Floors int
	Chain  []string
	// Types are the hand-written types with the most methods, most
	// first, exported and unexported methods alike.
	Types []Count
	// Files are the largest hand-written non-test files, in lines.
	Files []Count
	// TestLines are the lines of each package's _test.go files, most
	// first; packages without tests are left out.
	TestLines []Count
	// Lines and TestLinesTotal sum the module's non-test and test lines.
	Lines, TestLinesTotal int
}

// Count is a figure of one thing: a type (package.Type), a file (its
// path in the module) or a package.
type Count struct {
	Name string
	N    int
}

// Measure computes the figures of the module's packages. top bounds the
// lists of types and files.
func (g *Graph) Measure(top int) (*Figures, error) {
	f := &Figures{}
	own := g.Own()
	f.Packages = len(own)
	f.Floors, f.Chain = g.floors(own)
	methods := make(map[string]int)
	tests := make(map[string]int)
	fset := token.NewFileSet()
	for _, p := range own {
		for _, name := range p.GoFiles {
			path := filepath.Join(p.Dir, name)
			src, err := os.ReadFile(path)
			if err != nil {
				return nil, err
			}
			n := lines(src)
			f.Lines += n
			rel, _ := filepath.Rel(g.Dir, path)
			if !generated(src) {
				f.Files = append(f.Files, Count{filepath.ToSlash(rel), n})
			}
			if !strings.HasSuffix(name, ".go") || generated(src) {
				continue
			}
			file, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
			if err != nil {
				return nil, err
			}
			for _, d := range file.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil && len(fd.Recv.List) == 1 {
					methods[p.Name+"."+receiver(fd.Recv.List[0].Type)]++
				}
			}
		}
		for _, name := range p.TestFiles {
			src, err := os.ReadFile(filepath.Join(p.Dir, name))
			if err != nil {
				return nil, err
			}
			tests[p.Name] += lines(src)
			f.TestLinesTotal += lines(src)
		}
	}
	for name, n := range methods {
		f.Types = append(f.Types, Count{name, n})
	}
	for name, n := range tests {
		f.TestLines = append(f.TestLines, Count{name, n})
	}
	for _, l := range []*[]Count{&f.Types, &f.Files, &f.TestLines} {
		sort.Slice(*l, func(i, j int) bool {
			if (*l)[i].N != (*l)[j].N {
				return (*l)[i].N > (*l)[j].N
			}
			return (*l)[i].Name < (*l)[j].Name
		})
	}
	f.Types = f.Types[:min(top, len(f.Types))]
	f.Files = f.Files[:min(top, len(f.Files))]
	return f, nil
}

// floors is the length of the longest import chain among pkgs, and one
// such chain.
func (g *Graph) floors(pkgs []*Package) (int, []string) {
	floor := make(map[string]int)
	next := make(map[string]string)
	var visit func(p *Package) int
	visit = func(p *Package) int {
		if f, ok := floor[p.ImportPath]; ok {
			return f
		}
		floor[p.ImportPath] = 1 // an import cycle cannot build; this ends it anyway
		best := 0
		for _, q := range g.ownImports(p) {
			if f := visit(q); f > best || (f == best && q.ImportPath < next[p.ImportPath]) {
				best, next[p.ImportPath] = f, q.ImportPath
			}
		}
		floor[p.ImportPath] = best + 1
		return best + 1
	}
	top, start := 0, ""
	for _, p := range pkgs {
		if f := visit(p); f > top {
			top, start = f, p.ImportPath
		}
	}
	var chain []string
	for at := start; at != ""; at = next[at] {
		chain = append(chain, g.Packages[at].Name)
	}
	return top, chain
}

// receiver is the name of a method's receiver type.
func receiver(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return receiver(t.X)
	case *ast.IndexExpr:
		return receiver(t.X)
	case *ast.IndexListExpr:
		return receiver(t.X)
	case *ast.Ident:
		return t.Name
	}
	return fmt.Sprintf("%T", e)
}

func lines(src []byte) int {
	n := bytes.Count(src, []byte("\n"))
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}

// generatedLine is the comment Go's convention marks generated files
// with (go help generate).
var generatedLine = regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.$`)

func generated(src []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		line := sc.Text()
		if generatedLine.MatchString(line) {
			return true
		}
		if strings.HasPrefix(line, "package ") {
			return false
		}
	}
	return false
}
