package gotour

import (
	"fmt"
	"go/ast"
	"go/token"
	"sort"
	"strings"
)

// Summary is what the agent knows about one package once it has parsed it.
// It is small, so sessions export it as their state: a rehydrated session
// answers summary questions without parsing again.
type Summary struct {
	Dir        string   `json:"dir"`
	Name       string   `json:"name"`
	Synopsis   string   `json:"synopsis"`
	Files      []string `json:"files"`
	Lines      int      `json:"lines"`
	Funcs      int      `json:"funcs"`
	Methods    int      `json:"methods"`
	Types      int      `json:"types"`
	Consts     int      `json:"consts"`
	Vars       int      `json:"vars"`
	Largest    []Sized  `json:"largest"`
	Imports    []string `json:"imports"`
	HasAsm     bool     `json:"has_asm,omitempty"`
	UsesCgo    bool     `json:"uses_cgo,omitempty"`
	BuildFiles []string `json:"build_constrained,omitempty"`
}

// Sized is a function and its length in lines.
type Sized struct {
	Name  string `json:"name"`
	Lines int    `json:"lines"`
}

// summarize computes a package's summary from its parsed files.
func summarize(dir string, fset *token.FileSet, files map[string]*ast.File, hasAsm bool) *Summary {
	s := &Summary{Dir: dir, HasAsm: hasAsm}
	imports := make(map[string]bool)
	var sized []Sized
	for _, path := range sortedKeys(files) {
		f := files[path]
		s.Files = append(s.Files, path)
		if s.Name == "" || f.Name.Name != "main" {
			s.Name = f.Name.Name
		}
		if f.Doc != nil && s.Synopsis == "" {
			s.Synopsis = synopsis(f.Doc.Text())
		}
		s.Lines += fset.Position(f.End()).Line
		for _, c := range f.Comments {
			if strings.HasPrefix(c.Text(), "go:build") || strings.Contains(c.List[0].Text, "//go:build") {
				s.BuildFiles = append(s.BuildFiles, path)
				break
			}
		}
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			imports[p] = true
			if p == "C" {
				s.UsesCgo = true
			}
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil {
					s.Methods++
				} else if d.Name.IsExported() {
					s.Funcs++
				}
				if d.Body != nil {
					n := fset.Position(d.End()).Line - fset.Position(d.Pos()).Line + 1
					sized = append(sized, Sized{Name: funcName(d), Lines: n})
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch sp := spec.(type) {
					case *ast.TypeSpec:
						if sp.Name.IsExported() {
							s.Types++
						}
					case *ast.ValueSpec:
						for _, n := range sp.Names {
							if !n.IsExported() {
								continue
							}
							if d.Tok == token.CONST {
								s.Consts++
							} else {
								s.Vars++
							}
						}
					}
				}
			}
		}
	}
	sort.SliceStable(sized, func(i, j int) bool {
		if sized[i].Lines != sized[j].Lines {
			return sized[i].Lines > sized[j].Lines
		}
		return sized[i].Name < sized[j].Name
	})
	s.Largest = sized[:min(5, len(sized))]
	s.Imports = sortedKeys(imports)
	return s
}

// render is the text answer to a summary question.
func (s *Summary) render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "package %s (%s): %d files, %d lines\n", s.Name, s.Dir, len(s.Files), s.Lines)
	if s.Synopsis != "" {
		fmt.Fprintf(&b, "  %s\n", s.Synopsis)
	}
	fmt.Fprintf(&b, "  exported: %d funcs, %d types, %d consts, %d vars; %d methods\n", s.Funcs, s.Types, s.Consts, s.Vars, s.Methods)
	fmt.Fprintf(&b, "  imports %d packages\n", len(s.Imports))
	for _, f := range s.Largest {
		fmt.Fprintf(&b, "  largest: %s (%d lines)\n", f.Name, f.Lines)
	}
	return strings.TrimRight(b.String(), "\n")
}

func funcName(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return d.Name.Name
	}
	return recvType(d.Recv.List[0].Type) + "." + d.Name.Name
}

func recvType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvType(t.X)
	case *ast.Ident:
		return t.Name
	case *ast.IndexExpr:
		return recvType(t.X)
	case *ast.IndexListExpr:
		return recvType(t.X)
	}
	return "?"
}

// synopsis is the first sentence of a doc comment.
func synopsis(doc string) string {
	doc = strings.Join(strings.Fields(doc), " ")
	if i := strings.Index(doc, ". "); i >= 0 {
		return doc[:i+1]
	}
	return doc
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
