package depgraph

import (
	"bufio"
	"bytes"
	"fmt"
	"sort"
	"strings"
)

// The rules are tables of a Markdown page, each recognised by its
// header, so that the page a reader reads is the one the test holds the
// code to:
//
//	| from | must not reach | why |     a package of from reaches, through
//	                                      the module's packages, none of to
//	| from | must not import | why |    a package of from imports none of
//	                                      to itself
//	| from | reaches | until |          known exceptions: pairs of packages
//	                                      a rule forbids that still hold
//
// A from or to cell lists patterns in backquotes, separated by commas,
// optionally followed by the word "but" and patterns it leaves out:
// "`*` but `cmd/...`". A pattern is a package of the module by its path
// within it (`host/api`; `hearth` is the root), a tree of them
// (`host/...`), every one of them (`*`), or a package outside the module
// by its import path (`testing`, `google.golang.org/grpc/...`). The to
// cell of a reach rule may say "each other": the from packages must not
// reach one another. An exception names two packages exactly.

// Rule is one row of a rules table.
type Rule struct {
	// From and To are the row's patterns; FromBut and ToBut those after
	// "but".
	From, FromBut, To, ToBut []string
	// EachOther is set for a to cell that says "each other".
	EachOther bool
	// Import is set for a rule on direct imports; a reach rule follows
	// imports through the module's packages.
	Import bool
	Why    string
	// At is where the row is: file:line.
	At string
}

// Exception is a pair a rule forbids that is known to hold still, with
// whoever removes it.
type Exception struct {
	From, To, Until string
	At              string
}

// Violation is a package that reaches (or imports) one its rule forbids.
type Violation struct {
	Rule     *Rule
	From, To string
	// Path is how From reaches To: From, the packages between, To.
	Path []string
}

func (v Violation) String() string {
	verb := "reaches"
	if v.Rule.Import {
		verb = "imports"
	}
	return fmt.Sprintf("%s %s %s (%s), which %s forbids: %s", v.From, verb, v.To, strings.Join(v.Path, " -> "), v.Rule.At, v.Rule.Why)
}

// ParseRules reads the rules and exceptions tables of a Markdown page;
// name is the page's file name, for positions.
func ParseRules(page []byte, name string) ([]*Rule, []Exception, error) {
	var (
		rules []*Rule
		exs   []Exception
		kind  string // the header of the table being read
	)
	sc := bufio.NewScanner(bytes.NewReader(page))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		at := fmt.Sprintf("%s:%d", name, n)
		if !strings.HasPrefix(line, "|") {
			kind = ""
			continue
		}
		cells := splitRow(line)
		if kind == "" {
			switch h := strings.Join(cells, "|"); h {
			case "from|must not reach|why", "from|must not import|why", "from|reaches|until":
				kind = h
			default:
				kind = "other"
			}
			continue
		}
		if kind == "other" || strings.Trim(strings.Join(cells, ""), "-: ") == "" {
			continue
		}
		if len(cells) != 3 {
			return nil, nil, fmt.Errorf("%s: a row of %d cells in a table of 3", at, len(cells))
		}
		if kind == "from|reaches|until" {
			from, fb, err := patterns(cells[0])
			if err == nil && (len(from) != 1 || len(fb) != 0 || from[0] == "*" || strings.HasSuffix(from[0], "...")) {
				err = fmt.Errorf("an exception names one package, not %q", cells[0])
			}
			to, tb, err2 := patterns(cells[1])
			if err == nil && err2 != nil {
				err = err2
			}
			if err == nil && (len(to) != 1 || len(tb) != 0 || to[0] == "*" || strings.HasSuffix(to[0], "...")) {
				err = fmt.Errorf("an exception names one package, not %q", cells[1])
			}
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", at, err)
			}
			exs = append(exs, Exception{From: from[0], To: to[0], Until: cells[2], At: at})
			continue
		}
		r := &Rule{Import: kind == "from|must not import|why", Why: cells[2], At: at}
		var err error
		if r.From, r.FromBut, err = patterns(cells[0]); err != nil {
			return nil, nil, fmt.Errorf("%s: from: %w", at, err)
		}
		if cells[1] == "each other" && !r.Import {
			r.EachOther = true
		} else if r.To, r.ToBut, err = patterns(cells[1]); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", at, err)
		}
		rules = append(rules, r)
	}
	if len(rules) == 0 {
		return nil, nil, fmt.Errorf("%s has no rules table (| from | must not reach | why |)", name)
	}
	return rules, exs, sc.Err()
}

// splitRow splits a table row into its cells, trimmed.
func splitRow(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var cells []string
	for c := range strings.SplitSeq(line, "|") {
		cells = append(cells, strings.TrimSpace(c))
	}
	return cells
}

// patterns reads a cell: backquoted patterns, comma-separated, and those
// after "but".
func patterns(cell string) (in, but []string, err error) {
	head, tail, hasBut := strings.Cut(cell, " but ")
	if in, err = list(head); err != nil {
		return nil, nil, err
	}
	if hasBut {
		if but, err = list(tail); err != nil {
			return nil, nil, err
		}
	}
	return in, but, nil
}

func list(s string) ([]string, error) {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		p, ok := strings.CutPrefix(item, "`")
		if p, ok2 := strings.CutSuffix(p, "`"); ok && ok2 && p != "" && !strings.ContainsAny(p, "` ") {
			out = append(out, p)
			continue
		}
		return nil, fmt.Errorf("%q is not a package pattern in backquotes (`host/api`, `host/...`, `*`)", item)
	}
	return out, nil
}

// matcher is a set of patterns, resolved against a graph.
type matcher struct {
	g       *Graph
	in, but []string
}

func (m matcher) match(p *Package) bool {
	return m.g.matchAny(m.in, p) && !m.g.matchAny(m.but, p)
}

func (g *Graph) matchAny(pats []string, p *Package) bool {
	for _, pat := range pats {
		if g.match(pat, p) {
			return true
		}
	}
	return false
}

// match reports whether package p matches pattern pat.
func (g *Graph) match(pat string, p *Package) bool {
	if pat == "*" {
		return p.InModule
	}
	if g.ownPattern(pat) {
		return p.InModule && nameMatch(pat, p.Name)
	}
	return !p.InModule && nameMatch(pat, p.ImportPath)
}

// nameMatch reports whether name is pat, or in its tree (pat/...).
func nameMatch(pat, name string) bool {
	if tree, ok := strings.CutSuffix(pat, "/..."); ok {
		return name == tree || strings.HasPrefix(name, tree+"/")
	}
	return name == pat
}

// ownPattern reports whether pat names packages of the module: one of
// them matches it by its path within the module. A package outside it
// is named by its import path (the standard library's are not shadowed
// by the module's).
func (g *Graph) ownPattern(pat string) bool {
	if own, ok := g.own[pat]; ok {
		return own
	}
	own := false
	if first, _, _ := strings.Cut(pat, "/"); !strings.Contains(first, ".") {
		for _, p := range g.Packages {
			if p.InModule && nameMatch(pat, p.Name) {
				own = true
				break
			}
		}
	}
	if g.own == nil {
		g.own = make(map[string]bool)
	}
	g.own[pat] = own
	return own
}

// Check holds the graph to rules, and returns every violation, by rule
// and package. A pattern that matches no package of the graph is an
// error: a typo, or a package that moved, would make its rule hold
// vacuously.
func (g *Graph) Check(rules []*Rule) ([]Violation, error) {
	var out []Violation
	for _, r := range rules {
		for _, pat := range append(append(append(append([]string{}, r.From...), r.FromBut...), r.To...), r.ToBut...) {
			if !g.matchesSome(pat) {
				return nil, fmt.Errorf("%s: %s names no package of the build; a typo, or it moved: mend the row", r.At, pat)
			}
		}
		from := matcher{g, r.From, r.FromBut}
		to := matcher{g, r.To, r.ToBut}
		for _, p := range g.Own() {
			if !from.match(p) {
				continue
			}
			forbidden := to.match
			if r.EachOther {
				forbidden = func(q *Package) bool { return q != p && from.match(q) }
			}
			out = append(out, g.violations(r, p, forbidden)...)
		}
	}
	return out, nil
}

func (g *Graph) matchesSome(pat string) bool {
	for _, p := range g.Packages {
		if g.match(pat, p) {
			return true
		}
	}
	return false
}

// violations finds what p imports (or reaches through the module's
// packages) that forbidden matches, each with one shortest path.
func (g *Graph) violations(r *Rule, p *Package, forbidden func(*Package) bool) []Violation {
	var out []Violation
	found := make(map[string]bool)
	parent := map[string]string{p.ImportPath: ""}
	path := func(end string) []string {
		var names []string
		for at := end; at != ""; at = parent[at] {
			names = append([]string{g.Packages[at].Name}, names...)
		}
		return names
	}
	queue := []*Package{p}
	for len(queue) > 0 {
		q := queue[0]
		queue = queue[1:]
		for _, imp := range q.Imports {
			d := g.Packages[imp]
			if d == nil {
				continue
			}
			if _, seen := parent[imp]; !seen {
				parent[imp] = q.ImportPath
				if d.InModule && !r.Import {
					queue = append(queue, d)
				}
			}
			if d != p && forbidden(d) && !found[imp] {
				found[imp] = true
				pp := path(q.ImportPath)
				out = append(out, Violation{Rule: r, From: p.Name, To: d.Name, Path: append(pp, d.Name)})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].To < out[j].To })
	return out
}

// Apply splits violations into those no exception covers, and returns
// the exceptions that cover none (they no longer hold: delete them).
func Apply(vs []Violation, exs []Exception) (left []Violation, stale []Exception) {
	used := make([]bool, len(exs))
	for _, v := range vs {
		covered := false
		for i, e := range exs {
			if e.From == v.From && e.To == v.To {
				used[i], covered = true, true
			}
		}
		if !covered {
			left = append(left, v)
		}
	}
	for i, e := range exs {
		if !used[i] {
			stale = append(stale, e)
		}
	}
	return left, stale
}

// The package map is a table of the page with the header
//
//	| package | what it holds |
//
// whose first cell lists patterns in backquotes (as the rules do, "but"
// aside). Every package of the module must match a row, and every
// pattern a package: a new package gets its line, a moved one its line
// mended.

// MapRow is one row of the package map.
type MapRow struct {
	Patterns []string
	At       string
}

// ParseMap reads the package map of a Markdown page.
func ParseMap(page []byte, name string) ([]MapRow, error) {
	var rows []MapRow
	in := false
	sc := bufio.NewScanner(bytes.NewReader(page))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") {
			in = false
			continue
		}
		cells := splitRow(line)
		if !in {
			in = len(cells) == 2 && cells[0] == "package" && cells[1] == "what it holds"
			continue
		}
		if strings.Trim(strings.Join(cells, ""), "-: ") == "" {
			continue
		}
		pats, err := list(cells[0])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		rows = append(rows, MapRow{Patterns: pats, At: fmt.Sprintf("%s:%d", name, n)})
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s has no package map (| package | what it holds |)", name)
	}
	return rows, sc.Err()
}

// CheckMap says what the package map misses: packages no row names, and
// patterns that name no package.
func (g *Graph) CheckMap(rows []MapRow) []string {
	var problems []string
	for _, r := range rows {
		for _, pat := range r.Patterns {
			if !g.ownPattern(pat) && pat != "*" {
				problems = append(problems, fmt.Sprintf("%s: the package map names %s, which is no package of the module: mend or delete the row", r.At, pat))
			}
		}
	}
	for _, p := range g.Own() {
		named := false
		for _, r := range rows {
			named = named || g.matchAny(r.Patterns, p)
		}
		if !named {
			problems = append(problems, fmt.Sprintf("package %s is not in the package map: give it a row (what it holds)", p.Name))
		}
	}
	return problems
}
