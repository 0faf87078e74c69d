package workload

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// DeepOptions shapes a generated tree of deep packages.
type DeepOptions struct {
	Seed uint64
	// Prefix is the path every package is under, such as
	// "github.com/acme/mono": an ancestor every session shares.
	Prefix string
	// Areas under the prefix, Groups per area, Packages per group: the
	// packages are Prefix/area/group/package, siblings under common
	// parents.
	Areas, Groups, Packages int
	// Nested packages are below other packages (Prefix/area/group/pkg/sub),
	// and Interior groups are packages themselves, with the packages of the
	// group below them.
	Nested, Interior int
	// MaxFiles per package; each has 2 to MaxFiles.
	MaxFiles int
}

// DefaultDeep is the generated tree precision is measured on: 17 packages
// at depths 5 to 7 under "github.com/acme/mono", 4 questions each.
var DefaultDeep = DeepOptions{
	Seed: 1, Prefix: "github.com/acme/mono",
	Areas: 2, Groups: 2, Packages: 3, Nested: 3, Interior: 2, MaxFiles: 10,
}

var deepWords = []string{
	"api", "auth", "billing", "cache", "client", "codec", "config", "core", "events", "gateway",
	"index", "ledger", "metrics", "orders", "payments", "queue", "search", "server", "session",
	"store", "stream", "tax", "users", "worker",
}

// Deep generates a workload of four questions about each package of a
// tree of deep packages under common parents, as o shapes it. The tree
// exists in memory (Root is empty) until [WriteDeep] writes it. File k of
// a package, fNN.go, declares type TNN and func FNN, which the questions
// name.
func Deep(o DeepOptions) Workload {
	rng := rand.New(rand.NewPCG(o.Seed, 0x64656570))
	names := func(n int) []string {
		ws := slices.Clone(deepWords)
		rng.Shuffle(len(ws), func(i, j int) { ws[i], ws[j] = ws[j], ws[i] })
		return ws[:min(n, len(ws))]
	}
	var groups, pkgs []string
	for _, a := range names(o.Areas) {
		for _, g := range names(o.Groups) {
			group := path.Join(o.Prefix, a, g)
			groups = append(groups, group)
			for _, p := range names(o.Packages) {
				pkgs = append(pkgs, path.Join(group, p))
			}
		}
	}
	leaves := slices.Clone(pkgs)
	for _, i := range rng.Perm(len(leaves))[:min(o.Nested, len(leaves))] {
		pkgs = append(pkgs, path.Join(leaves[i], names(1)[0]))
	}
	for _, i := range rng.Perm(len(groups))[:min(o.Interior, len(groups))] {
		pkgs = append(pkgs, groups[i])
	}
	slices.Sort(pkgs)

	w := Workload{Name: "deep", Packages: map[string][]string{}}
	for _, pkg := range pkgs {
		n := 2 + rng.IntN(max(o.MaxFiles-1, 1))
		var files []string
		for k := range n {
			files = append(files, path.Join(pkg, fmt.Sprintf("f%02d.go", k)))
		}
		w.Packages[pkg] = files
		sym, callee := rng.IntN(n), rng.IntN(n)
		w.Questions = append(w.Questions, gotourQuestions(pkg,
			decl{fmt.Sprintf("T%02d", sym), files[sym]},
			decl{fmt.Sprintf("F%02d", callee), files[callee]}, rng)...)
	}
	return w
}

// WriteDeep writes the files of a generated workload under dir, each a
// small Go file declaring what the questions ask about, so that an agent
// can answer them, and returns w rooted there.
func WriteDeep(w Workload, dir string) (Workload, error) {
	for pkg, files := range w.Packages {
		name := strings.ReplaceAll(path.Base(pkg), "-", "")
		for _, f := range files {
			k := strings.TrimSuffix(strings.TrimPrefix(path.Base(f), "f"), ".go")
			src := fmt.Sprintf("// Package %[1]s is generated.\npackage %[1]s\n\n// T%[2]s is a type.\ntype T%[2]s struct{ n int }\n\n// F%[2]s is a function.\nfunc F%[2]s() int { return helper%[2]s() + 1 }\n\nfunc helper%[2]s() int { return len(%[3]q) }\n",
				name, k, f)
			p := filepath.Join(dir, filepath.FromSlash(f))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return Workload{}, err
			}
			if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
				return Workload{}, err
			}
		}
	}
	w.Root = dir
	return w, nil
}
