// Command architecture prints the structural figures docs/architecture.md
// reports, for the module checked out in a directory (default: here):
// packages, floors of the import graph and its longest chain, the types
// with the most methods, the largest hand-written files, and test lines
// per package, all from `go list` and the files it names. With -suite it
// also runs the test suite there (go test -race -count=1 ./...) and
// prints its wall time with the machine's load before and after.
//
//	go run ./bench/architecture                 # this checkout
//	go run ./bench/architecture -suite /tmp/old # another one, suite timed
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/hearth-dev/hearth/internal/depgraph"
)

func main() {
	suite := flag.Bool("suite", false, "also time the test suite (go test -race -count=1 -timeout 30m ./...)")
	top := flag.Int("top", 8, "how many types and files to list")
	flag.Parse()
	dir := "."
	if flag.NArg() > 0 {
		dir = flag.Arg(0)
	}
	if err := run(dir, *top, *suite); err != nil {
		fmt.Fprintln(os.Stderr, "architecture:", err)
		os.Exit(1)
	}
}

func run(dir string, top int, suite bool) error {
	ctx := context.Background()
	g, err := depgraph.Load(ctx, dir)
	if err != nil {
		return err
	}
	f, err := g.Measure(top)
	if err != nil {
		return err
	}
	rev := dir
	if out, err := exec.Command("git", "-C", dir, "rev-parse", "--short", "HEAD").Output(); err == nil {
		rev = "commit " + strings.TrimSpace(string(out))
	}
	fmt.Printf("%s: %d packages, %d floors, %d non-test lines, %d test lines\n\n", rev, f.Packages, f.Floors, f.Lines, f.TestLinesTotal)
	fmt.Printf("longest import chain: %s\n\n", strings.Join(f.Chain, " -> "))
	table("type", "methods", f.Types)
	table("file", "lines", f.Files)
	table("package", "test lines", f.TestLines)
	if suite {
		return timeSuite(ctx, dir)
	}
	return nil
}

func table(what, figure string, cs []depgraph.Count) {
	fmt.Printf("| %s | %s |\n| --- | ---: |\n", what, figure)
	for _, c := range cs {
		fmt.Printf("| `%s` | %d |\n", c.Name, c.N)
	}
	fmt.Println()
}

// timeSuite runs the suite in dir and prints its wall time and the load
// around it: on a shared machine the figure means little without it.
func timeSuite(ctx context.Context, dir string) error {
	before := loadavg()
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", "test", "-race", "-count=1", "-timeout", "30m", "./...")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err != nil {
		os.Stderr.Write(out)
		return fmt.Errorf("the suite failed after %s: %w", took.Round(time.Second), err)
	}
	fmt.Printf("suite: %s wall on %d cores (go test -race -count=1 ./...); load average before %s, after %s\n",
		took.Round(time.Second), runtime.NumCPU(), before, loadavg())
	return nil
}

// loadavg is the 1, 5 and 15 minute load averages, where the system says.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
