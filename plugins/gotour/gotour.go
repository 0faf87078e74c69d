// Package gotour is a bundled hearth agent that answers questions about Go
// packages by reading and parsing their source with go/parser. It keeps
// every file it parsed in memory, so a warm session answers questions about
// packages it has seen much faster than a cold one: the workload that makes
// session reuse worth it, on a tree every machine with Go has
// ($(go env GOROOT)/src).
//
// A task's prompt is one question; PKG is a directory relative to the
// agent's root:
//
//	summary PKG          package name, synopsis, size, exported API, largest functions
//	symbol PKG NAME      the declaration of NAME (a func, type, var, const, or T.Method)
//	callers PKG NAME     the call sites of NAME inside PKG
//	imports PKG          the packages PKG imports
//
// The prompt is the question alone: what earlier tasks of a run learned
// comes beside it (sdk.Task.Upstream), and the agent does not need it.
// Each task returns what it learned about its package as its artifact.
//
// The root is GOTOUR_ROOT when set, else $(go env GOROOT)/src, resolved on
// the first task (not at spawn, which stays fast). Set GOTOUR_ROOT in the
// agent's env in the config to tour another tree. Paths the agent reports
// (and asks guards about) are relative to the root, as the tasks' hints
// are: "net/http/server.go". Listings and reads go through sdk.Tools;
// answering from memory is a "Recall" tool use of kind read, asked about
// like a read.
package gotour

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/hearth-dev/hearth/sdk"
)

// Version of the agent.
const Version = "0.1.0"

// Agent is the gotour agent. Use New.
type Agent struct {
	rootOnce sync.Once
	root     string
	rootErr  error

	mu        sync.Mutex
	fset      *token.FileSet
	files     map[string]*ast.File // parsed files by path relative to root
	summaries map[string]*Summary  // by package directory
	// calls indexes each package's call sites by callee name, built on
	// the first callers question about it.
	calls map[string]map[string][]string
}

// New returns an agent answering about the packages under root; an empty
// root means GOTOUR_ROOT, else $(go env GOROOT)/src.
func New(root string) *Agent {
	if root == "" {
		root = os.Getenv("GOTOUR_ROOT")
	}
	return &Agent{
		root:      root,
		fset:      token.NewFileSet(),
		files:     make(map[string]*ast.File),
		summaries: make(map[string]*Summary),
		calls:     make(map[string]map[string][]string),
	}
}

// rootDir returns the tree the agent reads, finding the Go source tree on
// first use when no root was given.
func (a *Agent) rootDir(ctx context.Context) (string, error) {
	a.rootOnce.Do(func() {
		if a.root != "" {
			return
		}
		out, err := exec.CommandContext(ctx, "go", "env", "GOROOT").Output()
		if err != nil {
			a.rootErr = sdk.Permanent(fmt.Errorf("gotour: cannot find the Go source tree: `go env GOROOT` failed (%v); set GOTOUR_ROOT to the tree to read", err))
			return
		}
		a.root = filepath.Join(strings.TrimSpace(string(out)), "src")
	})
	return a.root, a.rootErr
}

// Describe implements sdk.Agent.
func (a *Agent) Describe(context.Context) (sdk.Info, error) {
	return sdk.Info{
		Name:         "gotour",
		Version:      Version,
		Description:  "answers questions about Go packages by parsing their source",
		Technologies: []string{"go"},
		Capacity:     1,
	}, nil
}

type question struct {
	verb, pkg, name string
}

func parseQuestion(prompt string) (question, error) {
	f := strings.Fields(prompt)
	usage := "ask one of: summary PKG | symbol PKG NAME | callers PKG NAME | imports PKG (PKG relative to the root, e.g. net/http)"
	if len(f) < 2 {
		return question{}, fmt.Errorf("gotour: cannot read the question %q; %s", prompt, usage)
	}
	q := question{verb: f[0], pkg: path.Clean(strings.TrimPrefix(f[1], "./"))}
	switch q.verb {
	case "summary", "imports":
		if len(f) != 2 {
			return q, fmt.Errorf("gotour: %q takes one package; %s", q.verb, usage)
		}
	case "symbol", "callers":
		if len(f) != 3 {
			return q, fmt.Errorf("gotour: %q takes a package and a name; %s", q.verb, usage)
		}
		q.name = f[2]
	default:
		return q, fmt.Errorf("gotour: unknown question %q; %s", q.verb, usage)
	}
	if strings.HasPrefix(q.pkg, "..") || path.IsAbs(q.pkg) {
		return q, fmt.Errorf("gotour: package %q must be a path inside the root, such as net/http", f[1])
	}
	return q, nil
}

// Run implements sdk.Agent.
func (a *Agent) Run(ctx context.Context, t sdk.Task, cb sdk.Callbacks) (sdk.Result, error) {
	q, err := parseQuestion(t.Prompt)
	if err != nil {
		return sdk.Result{}, sdk.Permanent(err)
	}
	var (
		out string
		sum *Summary
	)
	switch q.verb {
	case "summary", "imports":
		sum, err = a.summary(ctx, cb, q.pkg)
		if err != nil {
			return sdk.Result{}, err
		}
		if q.verb == "summary" {
			out = sum.render()
		} else {
			out = fmt.Sprintf("%s imports %d packages: %s", q.pkg, len(sum.Imports), strings.Join(sum.Imports, ", "))
		}
	case "symbol", "callers":
		files, err := a.load(ctx, cb, q.pkg)
		if err != nil {
			return sdk.Result{}, err
		}
		if q.verb == "symbol" {
			out, err = a.symbol(files, q.name)
		} else {
			out = a.callers(q.pkg, files, q.name)
		}
		if err != nil {
			return sdk.Result{}, err
		}
		a.mu.Lock()
		sum = a.summaries[q.pkg]
		a.mu.Unlock()
	}
	return sdk.Result{
		Output:   out,
		Metrics:  map[string]float64{"lines": float64(strings.Count(out, "\n") + 1)},
		Artifact: learned(sum),
	}, nil
}

// recall asks the host before the agent answers about files from memory,
// and reports it: a guard that denies reading a file denies recalling it.
// It returns the host's reason when denied.
func recall(ctx context.Context, cb sdk.Callbacks, files, techs []string) (string, error) {
	call := sdk.ToolCall{CallID: sdk.NewID("recall"), Tool: "Recall", Kind: sdk.KindRead, Paths: files}
	v, err := cb.CheckToolUse(ctx, call)
	if err != nil {
		return "", err
	}
	u := sdk.ToolUse{CallID: call.CallID, Tool: "Recall", Kind: sdk.KindRead, Paths: files, Technologies: techs, Outcome: sdk.OutcomeOK}
	if !v.Allow {
		u.Outcome, u.Error = sdk.OutcomeDenied, v.Reason
	}
	if err := cb.ReportToolUse(ctx, u); err != nil {
		return "", err
	}
	if !v.Allow {
		return v.Reason, nil
	}
	return "", nil
}

// summary returns a package's summary: from memory when the session has
// one (parsed earlier or imported with its state), else by parsing.
func (a *Agent) summary(ctx context.Context, cb sdk.Callbacks, pkg string) (*Summary, error) {
	a.mu.Lock()
	s := a.summaries[pkg]
	a.mu.Unlock()
	if s != nil {
		denied, err := recall(ctx, cb, s.Files, technologies(s))
		if err != nil {
			return nil, err
		}
		if denied != "" {
			return nil, sdk.Permanent(fmt.Errorf("gotour: cannot answer about %s from memory: %s", pkg, denied))
		}
		return s, nil
	}
	if _, err := a.load(ctx, cb, pkg); err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.summaries[pkg], nil
}

// load returns the parsed non-test Go files of pkg, parsing those not yet
// in memory. Each listing and read goes through sdk.Tools: put to the host
// first (a guard may deny it) and reported after.
func (a *Agent) load(ctx context.Context, cb sdk.Callbacks, pkg string) (map[string]*ast.File, error) {
	root, err := a.rootDir(ctx)
	if err != nil {
		return nil, err
	}
	tools := sdk.NewTools(cb, root)
	entries, err := tools.List(ctx, pkg)
	var denied *sdk.DeniedError
	switch {
	case errors.As(err, &denied):
		return nil, sdk.Permanent(fmt.Errorf("gotour: listing %s was denied: %s", pkg, denied.Reason))
	case errors.Is(err, os.ErrNotExist):
		return nil, sdk.Permanent(fmt.Errorf("gotour: no package %s under %s; package paths are relative to the root, such as net/http", pkg, root))
	case err != nil:
		return nil, err
	}
	var names []string
	hasAsm := false
	for _, e := range entries {
		n := e.Name()
		switch {
		case e.IsDir():
		case strings.HasSuffix(n, ".s"):
			hasAsm = true
		case strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go"):
			names = append(names, path.Join(pkg, n))
		}
	}
	if len(names) == 0 {
		return nil, sdk.Permanent(fmt.Errorf("gotour: %s holds no Go files", pkg))
	}

	files := make(map[string]*ast.File, len(names))
	var (
		recalled   []string
		deniedWhy  string // the first denial's reason
		deniedFile string
	)
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		a.mu.Lock()
		f := a.files[name]
		a.mu.Unlock()
		if f != nil {
			files[name] = f
			recalled = append(recalled, name)
			continue
		}
		src, err := tools.Read(ctx, name)
		if errors.As(err, &denied) {
			if deniedWhy == "" {
				deniedWhy, deniedFile = denied.Reason, name
			}
			continue
		}
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			continue // gone or unreadable since the listing: skipped
		}
		if err != nil {
			return nil, err
		}
		// token.FileSet is safe for concurrent use: no lock needed.
		f, err = parser.ParseFile(a.fset, name, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			continue // a file that does not parse is skipped, not fatal
		}
		a.mu.Lock()
		a.files[name] = f
		a.mu.Unlock()
		files[name] = f
	}
	if len(recalled) > 0 {
		why, err := recall(ctx, cb, recalled, []string{"go"})
		if err != nil {
			return nil, err
		}
		if why != "" {
			for _, name := range recalled {
				delete(files, name)
			}
			if deniedWhy == "" {
				deniedWhy, deniedFile = why, recalled[0]
			}
			recalled = nil
		}
	}
	if len(files) == 0 && deniedWhy != "" {
		return nil, sdk.Permanent(fmt.Errorf("gotour: cannot answer about %s: reading %s was denied: %s", pkg, deniedFile, deniedWhy))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if prev := a.summaries[pkg]; prev == nil || len(recalled) != len(files) || len(prev.Files) != len(files) {
		a.summaries[pkg] = summarize(pkg, a.fset, files, hasAsm)
	}
	return files, nil
}

// symbol prints the declaration of name (without function bodies).
func (a *Agent) symbol(files map[string]*ast.File, name string) (string, error) {
	recv, method, isMethod := strings.Cut(name, ".")
	for _, p := range sortedKeys(files) {
		for _, d := range files[p].Decls {
			var (
				node ast.Node
				doc  *ast.CommentGroup
			)
			switch d := d.(type) {
			case *ast.FuncDecl:
				match := !isMethod && d.Recv == nil && d.Name.Name == name ||
					isMethod && d.Recv != nil && d.Name.Name == method && recvType(d.Recv.List[0].Type) == recv
				if match {
					fd := *d
					fd.Body, fd.Doc = nil, nil
					node, doc = &fd, d.Doc
				}
			case *ast.GenDecl:
				if isMethod {
					continue
				}
				for _, spec := range d.Specs {
					switch sp := spec.(type) {
					case *ast.TypeSpec:
						if sp.Name.Name == name {
							node, doc = sp, firstDoc(sp.Doc, d.Doc)
						}
					case *ast.ValueSpec:
						for _, n := range sp.Names {
							if n.Name == name {
								node, doc = sp, firstDoc(sp.Doc, d.Doc)
							}
						}
					}
				}
			}
			if node == nil {
				continue
			}
			var b bytes.Buffer
			pos := a.fset.Position(node.Pos())
			if err := printer.Fprint(&b, a.fset, node); err != nil {
				return "", err
			}
			out := fmt.Sprintf("%s:%d:\n%s", p, pos.Line, b.String())
			if doc != nil {
				out += "\n// " + synopsis(doc.Text())
			}
			return out, nil
		}
	}
	return "", sdk.Permanent(fmt.Errorf("gotour: no declaration of %s in the package", name))
}

func firstDoc(docs ...*ast.CommentGroup) *ast.CommentGroup {
	for _, d := range docs {
		if d != nil {
			return d
		}
	}
	return nil
}

// callers lists the call sites of name in the package, by enclosing
// function.
func (a *Agent) callers(pkg string, files map[string]*ast.File, name string) string {
	if _, method, ok := strings.Cut(name, "."); ok {
		name = method
	}
	a.mu.Lock()
	index, ok := a.calls[pkg]
	a.mu.Unlock()
	if !ok || len(files) != a.indexed(pkg) {
		index = a.indexCalls(files)
		a.mu.Lock()
		a.calls[pkg] = index
		a.mu.Unlock()
	}
	sites := index[name]
	if len(sites) == 0 {
		return fmt.Sprintf("no calls of %s", name)
	}
	return fmt.Sprintf("%d calls of %s:\n%s", len(sites), name, strings.Join(sites, "\n"))
}

// indexed is how many files the package's call index was built from.
func (a *Agent) indexed(pkg string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.summaries[pkg].Files)
}

// indexCalls maps each callee name to its call sites in files.
func (a *Agent) indexCalls(files map[string]*ast.File) map[string][]string {
	index := make(map[string][]string)
	for _, p := range sortedKeys(files) {
		for _, d := range files[p].Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			caller := funcName(fd)
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				var id *ast.Ident
				switch fn := call.Fun.(type) {
				case *ast.Ident:
					id = fn
				case *ast.SelectorExpr:
					id = fn.Sel
				}
				if id != nil {
					line := a.fset.Position(call.Pos()).Line
					index[id.Name] = append(index[id.Name], fmt.Sprintf("%s:%d in %s", p, line, caller))
				}
				return true
			})
		}
	}
	return index
}

// learned is what a task taught about the package of summary s (nil when
// it has none).
func learned(s *Summary) sdk.ContextArtifact {
	var art sdk.ContextArtifact
	if s == nil {
		return art
	}
	art.KeyDecisions = []string{fmt.Sprintf("%s is package %s: %d files, %d exported funcs, %d exported types", s.Dir, s.Name, len(s.Files), s.Funcs, s.Types)}
	if len(s.Largest) > 0 {
		art.NewPatterns = []string{fmt.Sprintf("the largest function in %s is %s (%d lines)", s.Dir, s.Largest[0].Name, s.Largest[0].Lines)}
	}
	if len(s.BuildFiles) > 0 {
		art.PotentialGotchas = append(art.PotentialGotchas, fmt.Sprintf("%d files in %s have build constraints; not every declaration exists on every platform", len(s.BuildFiles), s.Dir))
	}
	if s.UsesCgo {
		art.PotentialGotchas = append(art.PotentialGotchas, s.Dir+" uses cgo")
	}
	if s.HasAsm {
		art.PotentialGotchas = append(art.PotentialGotchas, s.Dir+" has assembly implementations")
	}
	return art
}

// state is what a session exports: the package summaries it computed.
type state struct {
	Version   int                 `json:"version"`
	Summaries map[string]*Summary `json:"summaries"`
}

// ExportState implements sdk.StateExporter.
func (a *Agent) ExportState(context.Context) ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return json.Marshal(state{Version: 1, Summaries: a.summaries})
}

// ImportState implements sdk.StateExporter.
func (a *Agent) ImportState(_ context.Context, b []byte) error {
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("gotour: session state is not gotour's JSON: %w", err)
	}
	if st.Version != 1 {
		return fmt.Errorf("gotour: session state version %d; this agent reads version 1", st.Version)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for dir, s := range st.Summaries {
		if s != nil {
			a.summaries[dir] = s
		}
	}
	return nil
}

// Packages lists the package directories the session knows about.
func (a *Agent) Packages() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := sortedKeys(a.summaries)
	sort.Strings(out)
	return out
}

func technologies(s *Summary) []string {
	t := []string{"go"}
	if s.HasAsm {
		t = append(t, "asm")
	}
	if s.UsesCgo {
		t = append(t, "cgo")
	}
	return t
}

var (
	_ sdk.Agent         = (*Agent)(nil)
	_ sdk.StateExporter = (*Agent)(nil)
)
