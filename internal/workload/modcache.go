package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"math/rand/v2"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hearth-dev/hearth/matcher"
)

// ModulePackages names packages of one module, by their directory in it
// ("" for the module's root package).
type ModulePackages struct {
	Module   string
	Packages []string
}

// DefaultModules are packages of modules hearth builds with, so certainly
// in the module cache of any machine that built it: 22 packages of 7
// modules, nested ones included (a module's root package and its
// subpackages, expr's vm and vm/runtime) and deep ones (grpc's
// internal/xds/xdsclient/xdsresource).
var DefaultModules = []ModulePackages{
	{"github.com/dgraph-io/badger/v4", []string{"", "table", "y", "skl"}},
	{"github.com/hashicorp/go-plugin", []string{"", "internal/cmdrunner", "internal/plugin"}},
	{"github.com/hashicorp/hcl/v2", []string{"", "hclsyntax", "ext/dynblock", "ext/typeexpr"}},
	{"github.com/expr-lang/expr", []string{"vm", "vm/runtime", "checker", "parser/lexer"}},
	{"google.golang.org/grpc", []string{"internal/transport", "internal/xds/xdsclient/xdsresource", "credentials/alts/internal/conn"}},
	{"github.com/zclconf/go-cty", []string{"cty", "cty/convert"}},
	{"github.com/spf13/cobra", []string{"", "doc"}},
}

// FindModules returns the module cache ($(go env GOMODCACHE)) and the
// directory of each module in it, at the version the main module in dir
// requires, asking the go command.
func FindModules(ctx context.Context, dir string, modules ...string) (string, map[string]string, error) {
	out, err := goCmd(ctx, dir, "env", "GOMODCACHE")
	if err != nil {
		return "", nil, err
	}
	cache := strings.TrimSpace(string(out))
	out, err = goCmd(ctx, dir, append([]string{"list", "-m", "-json"}, modules...)...)
	if err != nil {
		return "", nil, err
	}
	dirs := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var m struct{ Path, Version, Dir string }
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return "", nil, fmt.Errorf("read go list -m -json: %w", err)
		}
		if m.Dir == "" {
			return "", nil, fmt.Errorf("module %s@%s is not in the module cache; run go mod download %s", m.Path, m.Version, m.Path)
		}
		dirs[m.Path] = m.Dir
	}
	return cache, dirs, nil
}

func goCmd(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// ModuleCache builds a workload on the module cache cache: four questions
// about each package of sel (summary, symbol, callers, imports), the
// modules found in dirs (see [FindModules]). Package directories are
// relative to the cache, such as
// "github.com/dgraph-io/badger/v4@v4.9.6/table", so that an agent rooted
// there (GOTOUR_ROOT) finds them. The names questions ask about, and the
// file hints half of them carry, are drawn from the packages' source with
// seed.
func ModuleCache(cache string, dirs map[string]string, sel []ModulePackages, seed uint64) (Workload, error) {
	w := Workload{Name: "module-cache", Root: cache, Packages: map[string][]string{}}
	rng := rand.New(rand.NewPCG(seed, 0x6d6f64))
	for _, m := range sel {
		dir, ok := dirs[m.Module]
		if !ok {
			return Workload{}, fmt.Errorf("module %s: no directory found; pass it to FindModules", m.Module)
		}
		rel, err := filepath.Rel(cache, dir)
		if err != nil || strings.HasPrefix(rel, "..") {
			return Workload{}, fmt.Errorf("module %s is at %s, outside the module cache %s", m.Module, dir, cache)
		}
		for _, p := range m.Packages {
			pkg := matcher.NormalizePath(path.Join(filepath.ToSlash(rel), p))
			files, err := goFiles(cache, pkg)
			if err != nil {
				return Workload{}, fmt.Errorf("module %s: %w", m.Module, err)
			}
			w.Packages[pkg] = files
			qs, err := questionsAbout(cache, pkg, files, rng)
			if err != nil {
				return Workload{}, err
			}
			w.Questions = append(w.Questions, qs...)
		}
	}
	return w, nil
}

// questionsAbout asks the four gotour questions about pkg, naming
// declarations found in its files.
func questionsAbout(root, pkg string, files []string, rng *rand.Rand) ([]Question, error) {
	var funcs, types []decl
	fset := token.NewFileSet()
	for _, f := range files {
		af, err := parser.ParseFile(fset, filepath.Join(root, filepath.FromSlash(f)), nil, parser.SkipObjectResolution)
		if err != nil {
			continue // the agent skips files that do not parse too
		}
		for _, d := range af.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					funcs = append(funcs, decl{d.Name.Name, f})
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.IsExported() {
						types = append(types, decl{ts.Name.Name, f})
					}
				}
			}
		}
	}
	if len(funcs)+len(types) == 0 {
		return nil, fmt.Errorf("package %s declares nothing exported to ask about; pick another", pkg)
	}
	symbols := slices.Concat(types, funcs)
	if len(funcs) == 0 {
		funcs = types
	}
	return gotourQuestions(pkg, symbols[rng.IntN(len(symbols))], funcs[rng.IntN(len(funcs))], rng), nil
}

type decl struct{ name, file string }

// gotourQuestions are the four questions of the code tour about pkg:
// every one names the package's directory and Go; the symbol and callers
// questions name the declaring file half of the time.
func gotourQuestions(pkg string, symbol, callee decl, rng *rand.Rand) []Question {
	q := func(prompt string, file string) Question {
		h := matcher.Hints{Dirs: []string{pkg}, Techs: []string{"go"}}
		if file != "" && rng.IntN(2) == 0 {
			h.Files = []string{file}
		}
		return Question{Prompt: prompt, Package: pkg, Hints: h}
	}
	return []Question{
		q("summary "+pkg, ""),
		q("symbol "+pkg+" "+symbol.name, symbol.file),
		q("callers "+pkg+" "+callee.name, callee.file),
		q("imports "+pkg, ""),
	}
}
