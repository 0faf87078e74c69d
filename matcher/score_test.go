package matcher

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"testing"
	"time"
)

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// decide runs Scan and an Index built from cands, fails the test if they
// disagree, and returns the decision.
func decide(t *testing.T, cfg Config, cands []Candidate, h Hints, exclude ...string) Decision {
	t.Helper()
	want := Scan(cfg, cands, h, now, exclude...)
	ix, err := NewIndex(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cands {
		ix.Put(c)
	}
	if got := ix.Decide(h, now, exclude...); !reflect.DeepEqual(got, want) {
		t.Fatalf("Index.Decide differs from Scan\n got %s\nwant %s", dump(got), dump(want))
	}
	checkShares(t, want)
	return want
}

// live returns an idle-free session with spare capacity.
func live(id string) Candidate {
	return Candidate{ID: id, State: State{Capacity: 1, LastActivity: now}}
}

func TestNormalizePath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "."},
		{".", "."},
		{"/", "."},
		{"./", "."},
		{"src", "src"},
		{"src/", "src"},
		{"./src/a.go", "src/a.go"},
		{"src//a.go", "src/a.go"},
		{"src/./models/../a.go", "src/a.go"},
		{"../shared", "../shared"},
		{"/abs/dir/", "/abs/dir"},
	} {
		if got := NormalizePath(tc.in); got != tc.want {
			t.Errorf("NormalizePath(%q): got %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestDepth(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		want int
	}{
		{".", 0}, {"src", 1}, {"src/models", 2}, {"/abs", 1}, {"/abs/dir", 2}, {"../x", 2},
	} {
		if got := depth(tc.dir); got != tc.want {
			t.Errorf("depth(%q): got %d, want %d", tc.dir, got, tc.want)
		}
	}
}

// TestDirectoryFactor pins m(d) and the weighted mean: the session under
// test is "s"; the others only change the counts N and n(x).
func TestDirectoryFactor(t *testing.T) {
	for _, tc := range []struct {
		name    string
		session []string
		others  [][]string // the other sessions' directories
		task    Hints
		want    float64
	}{
		{"worked in d", []string{"src/models"}, nil, Hints{Dirs: []string{"src/models"}}, 1},
		{"worked in d among others", []string{"src/models"}, [][]string{{"src/models"}, {"src"}}, Hints{Dirs: []string{"src/models"}}, 1},
		// Rule 2: someone worked in d, so nothing less counts.
		{"sibling of a known directory", []string{"a/b/c/e"}, [][]string{{"a/b/c/d"}}, Hints{Dirs: []string{"a/b/c/d"}}, 0},
		{"under a known directory", []string{"src/models/user"}, [][]string{{"src/models"}}, Hints{Dirs: []string{"src/models"}}, 0},
		{"above a known directory", []string{"src"}, [][]string{{"src/models"}}, Hints{Dirs: []string{"src/models"}}, 0},
		// Rule 3: under d, when nobody worked in it: dd/(dd+1).
		{"under d", []string{"src/models/user"}, nil, Hints{Dirs: []string{"src/models"}}, 2.0 / 3},
		{"far under d", []string{"src/models/user/a/b"}, [][]string{{"src/models/x"}}, Hints{Dirs: []string{"src/models"}}, 2.0 / 3},
		{"under d at depth 1", []string{"src/models"}, nil, Hints{Dirs: []string{"src"}}, 0.5},
		{"under the root says nothing of it", []string{"src"}, nil, Hints{Dirs: []string{"."}}, 0},
		// Rule 4: beside or above d: depth(c)/dd · (1 − n(c)/(N+1)).
		{"sibling, alone", []string{"a/b/c/e"}, nil, Hints{Dirs: []string{"a/b/c/d"}}, 3.0 / 4 * (1 - 1.0/2)},
		{"sibling, a rare parent", []string{"a/b/c/e"}, [][]string{{"a/b/c/f"}, {"x"}, {"y"}, {"z"}}, Hints{Dirs: []string{"a/b/c/d"}}, 3.0 / 4 * (1 - 2.0/6)},
		{"sibling, a parent everyone knows", []string{"a/b/c/e"}, [][]string{{"a/b/c/f"}, {"a/b/c/g/h"}, {"a/b/c"}, {"a/b/c/i"}}, Hints{Dirs: []string{"a/b/c/d"}}, 3.0 / 4 * (1 - 5.0/6)},
		{"cousin: the deepest ancestor known", []string{"a/b/x/y"}, [][]string{{"a/q"}}, Hints{Dirs: []string{"a/b/c/d"}}, 2.0 / 4 * (1 - 1.0/3)},
		{"above", []string{"src"}, nil, Hints{Dirs: []string{"src/models"}}, 1.0 / 2 * (1 - 1.0/2)},
		{"string prefix is no ancestor", []string{"src/mod"}, nil, Hints{Dirs: []string{"src/models/user"}}, 1.0 / 3 * (1 - 1.0/2)},
		{"absolute paths", []string{"/repo"}, nil, Hints{Dirs: []string{"/repo/src"}}, 1.0 / 2 * (1 - 1.0/2)},
		{"absolute is not relative", []string{"repo"}, nil, Hints{Dirs: []string{"/repo"}}, 0},
		// Rule 5: only the root in common.
		{"unrelated", []string{"docs"}, nil, Hints{Dirs: []string{"src"}}, 0},
		{"root session, task below", []string{"."}, nil, Hints{Dirs: []string{"src"}}, 0},
		{"session with empty context", nil, nil, Hints{Dirs: []string{"src"}}, 0},
		// The root is a directory like any other.
		{"root and root", []string{"."}, [][]string{{"src"}}, Hints{Dirs: []string{""}}, 1},
		{"a root file's directory is the root", []string{"."}, nil, Hints{Files: []string{"main.go"}}, 1},
		{"another worked in the root", []string{"src"}, [][]string{{"."}}, Hints{Files: []string{"main.go"}}, 0},
		// Spellings and hints.
		{"./ and trailing slash", []string{"./src/models/"}, nil, Hints{Dirs: []string{"src//models"}}, 1},
		{"a directory listed twice", []string{"src/models", "src/models/"}, [][]string{{"src/x"}}, Hints{Dirs: []string{"src/y"}}, 1.0 / 2 * (1 - 2.0/3)},
		{"file hints add their dirs", []string{"src/models"}, nil, Hints{Files: []string{"src/models/user.go"}}, 1},
		// The mean over T_d, weighted by r(d) = 1 − n(d)/(N+1).
		{"mean over task dirs", []string{"src/models"}, nil, Hints{Dirs: []string{"src/models", "docs"}}, (1 - 1.0/2) / ((1 - 1.0/2) + 1)},
		{"a task dir everyone knows weighs little", []string{"."}, [][]string{{"."}, {"."}, {"."}, {"host"}},
			Hints{Files: []string{"go.mod", "host/pool.go"}}, (1.0 / 6) / (1.0/6 + 5.0/6)},
		{"file and dir hints merge", []string{"src"}, nil, Hints{Dirs: []string{"src"}, Files: []string{"src/models/user.go"}},
			(1.0/2*1 + 1*(1.0/2*(1-1.0/2))) / (1.0/2 + 1)}, // src: 1; src/models: above, through src
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := live("s")
			c.Dirs = tc.session
			cands := []Candidate{c}
			for i, dirs := range tc.others {
				o := live(fmt.Sprintf("o-%d", i))
				o.Dirs = dirs
				cands = append(cands, o)
			}
			d := decide(t, DefaultConfig(), cands, tc.task)
			r := find(t, d, "s")
			if !r.Applied.Directory {
				t.Fatalf("directory factor does not apply, want it to")
			}
			if math.Abs(r.Scores.Directory-tc.want) > 1e-15 {
				t.Errorf("directory: got %v, want %v", r.Scores.Directory, tc.want)
			}
		})
	}
}

// TestExcludedSessionsCount checks that excluding a session changes no
// other session's score: the counts cover every session.
func TestExcludedSessionsCount(t *testing.T) {
	s, o := live("s"), live("o")
	s.Dirs, o.Dirs = []string{"a/b/e"}, []string{"a/b/f"}
	h := Hints{Dirs: []string{"a/b/d"}}
	all := decide(t, DefaultConfig(), []Candidate{s, o}, h)
	without := decide(t, DefaultConfig(), []Candidate{s, o}, h, "o")
	if got, want := find(t, without, "s").Scores, find(t, all, "s").Scores; got != want {
		t.Errorf("scores with o excluded: got %+v, want %+v", got, want)
	}
	if got, want := find(t, all, "s").Scores.Directory, 2.0/3*(1-2.0/3); math.Abs(got-want) > 1e-15 {
		t.Errorf("directory: got %v, want %v", got, want)
	}
}

// find returns the ranked candidate id of d.
func find(t *testing.T, d Decision, id string) Ranked {
	t.Helper()
	for _, r := range d.Ranked {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("%s is not ranked in %s", id, dump(d))
	return Ranked{}
}

// TestContextAgreement pins the total of sessions that know all, some or
// none of a task's context: freshness and load count in proportion to A,
// so they never lift a session that knows none of it over the threshold.
func TestContextAgreement(t *testing.T) {
	type session struct {
		dirs, files, techs []string
		idle               time.Duration
		load, capacity     int
	}
	holder := session{dirs: []string{"net/http"}, files: []string{"net/http/server.go"}, techs: []string{"go"}, capacity: 1}
	stranger := session{dirs: []string{"net/url"}, files: []string{"net/url/url.go"}, techs: []string{"go"}, capacity: 1}
	for _, tc := range []struct {
		name   string
		s      session
		others []session
		task   Hints
		want   float64
		reuse  bool
	}{
		{
			name: "stranger, fresh and idle, knows only the technology", s: stranger, others: []session{holder},
			task: Hints{Dirs: []string{"net/http"}, Techs: []string{"go"}},
			want: 0.20 / 0.75,
		},
		{
			name: "stranger, no technology hint", s: stranger, others: []session{holder},
			task: Hints{Dirs: []string{"net/http"}},
			want: 0,
		},
		{
			name: "stranger, file hints too", s: stranger, others: []session{holder},
			task: Hints{Files: []string{"net/http/server.go"}, Techs: []string{"go"}},
			want: 0.20 / 1.0,
		},
		{
			name: "sibling of a directory nobody knows: A is its directory credit", s: stranger,
			task: Hints{Dirs: []string{"net/http"}, Techs: []string{"go"}},
			want: (0.30*0.25 + 0.20 + 0.15*0.25 + 0.10*0.25) / 0.75, // m = 1/2 · (1 − 1/2)
		},
		{
			name: "holder, idle for the whole timeout", s: session{dirs: holder.dirs, techs: holder.techs, idle: 30 * time.Minute, capacity: 1},
			others: []session{stranger},
			task:   Hints{Dirs: []string{"net/http"}, Techs: []string{"go"}},
			want:   (0.30 + 0.20 + 0.10) / 0.75, reuse: true,
		},
		{
			name: "holder, directory hint only, idle for the whole timeout", s: session{dirs: holder.dirs, idle: 30 * time.Minute, capacity: 1},
			task: Hints{Dirs: []string{"net/http"}},
			want: (0.30 + 0.10) / 0.55, reuse: true,
		},
		{
			name: "holder of the directory, not of the file", s: session{dirs: holder.dirs, techs: holder.techs, idle: 15 * time.Minute, capacity: 1},
			task: Hints{Files: []string{"net/http/new.go"}, Techs: []string{"go"}},
			want: 0.30 + 0 + 0.20 + 0.15*0.5 + 0.10, reuse: true, // A = max(1, 0)
		},
		{
			name: "half busy holder", s: session{dirs: holder.dirs, techs: holder.techs, load: 1, capacity: 2},
			task: Hints{Dirs: []string{"net/http"}, Techs: []string{"go"}},
			want: (0.30 + 0.20 + 0.15 + 0.10*0.5) / 0.75, reuse: true,
		},
		{
			name: "tech only, right technology: A = 1", s: stranger,
			task: Hints{Techs: []string{"go"}},
			want: 1, reuse: true,
		},
		{
			name: "tech only, another technology", s: session{techs: []string{"python"}, capacity: 1},
			task: Hints{Techs: []string{"go"}},
			want: (0.15 + 0.10) / 0.45,
		},
		{
			name: "no hints: freshness and load", s: session{idle: 15 * time.Minute, capacity: 1},
			task: Hints{},
			want: (0.15*0.5 + 0.10) / 0.25, reuse: true,
		},
		{
			name: "the root task keeps its session: wordcount 25 minutes later", s: session{dirs: []string{"."}, files: []string{"main.go"}, techs: []string{"text"}, idle: 25 * time.Minute, capacity: 1},
			task: Hints{Files: []string{"main.go"}},
			want: (0.30 + 0.25 + 0.15/6 + 0.10) / 0.80, reuse: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mk := func(id string, s session) Candidate {
				return Candidate{ID: id, Dirs: s.dirs, Files: s.files, Techs: s.techs,
					State: State{Capacity: s.capacity, Load: s.load, LastActivity: now.Add(-s.idle)}}
			}
			cands := []Candidate{mk("s", tc.s)}
			for i, o := range tc.others {
				c := mk(fmt.Sprintf("o-%d", i), o)
				c.Load = c.Capacity // busy: s is the only eligible candidate
				cands = append(cands, c)
			}
			d := decide(t, DefaultConfig(), cands, tc.task)
			r := find(t, d, "s")
			if math.Abs(r.Total-tc.want) > 1e-12 {
				t.Errorf("total: got %v, want %v (%s)", r.Total, tc.want, d)
			}
			if got := d.Choice == Reuse; got != tc.reuse {
				t.Errorf("reuse: got %t, want %t (%s)", got, tc.reuse, d)
			}
		})
	}
}

func TestFileAndTechFactors(t *testing.T) {
	for _, tc := range []struct {
		name           string
		files, techs   []string
		task           Hints
		wantF, wantT   float64
		appliesF, tech bool
	}{
		{
			name: "half the files", files: []string{"a.go", "b.go"},
			task:  Hints{Files: []string{"a.go", "b.go", "c.go", "d.go"}},
			wantF: 0.5, appliesF: true,
		},
		{
			name: "a superset is full coverage", files: []string{"a.go", "b.go", "c.go", "z.go"},
			task:  Hints{Files: []string{"a.go", "b.go"}},
			wantF: 1, appliesF: true,
		},
		{
			name: "spellings of one file", files: []string{"./src/a.go", "src//a.go"},
			task:  Hints{Files: []string{"src/a.go", "./src/a.go", "src/b.go"}},
			wantF: 0.5, appliesF: true,
		},
		{
			name: "empty file names name nothing", files: []string{"", "a.go"},
			task:  Hints{Files: []string{"a.go", "", "/"}},
			wantF: 1, appliesF: true,
		},
		{
			name: "techs ignore case and space", techs: []string{"Go", "SQL"},
			task:  Hints{Techs: []string{" go", "sql "}},
			wantT: 1, tech: true,
		},
		{
			name: "half the techs", techs: []string{"go"},
			task:  Hints{Techs: []string{"go", "react"}},
			wantT: 0.5, tech: true,
		},
		{
			name: "blank techs are no hint", techs: []string{"go"},
			task: Hints{Techs: []string{" ", ""}},
		},
		{
			name: "session with empty context", task: Hints{Files: []string{"a.go"}, Techs: []string{"go"}},
			appliesF: true, tech: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := live("s-1")
			c.Files, c.Techs = tc.files, tc.techs
			r := decide(t, DefaultConfig(), []Candidate{c}, tc.task).Ranked[0]
			if r.Applied.File != tc.appliesF || r.Applied.Tech != tc.tech {
				t.Fatalf("applied file, tech: got %t, %t, want %t, %t", r.Applied.File, r.Applied.Tech, tc.appliesF, tc.tech)
			}
			if r.Scores.File != tc.wantF || r.Scores.Tech != tc.wantT {
				t.Errorf("file, tech: got %v, %v, want %v, %v", r.Scores.File, r.Scores.Tech, tc.wantF, tc.wantT)
			}
		})
	}
}

func TestFreshness(t *testing.T) {
	for _, tc := range []struct {
		name    string
		last    time.Time
		timeout time.Duration
		want    float64
	}{
		{"active now", now, 30 * time.Minute, 1},
		{"half the timeout", now.Add(-15 * time.Minute), 30 * time.Minute, 0.5},
		{"exactly the timeout", now.Add(-30 * time.Minute), 30 * time.Minute, 0},
		{"beyond the timeout", now.Add(-45 * time.Minute), 30 * time.Minute, 0},
		{"days ago", now.Add(-72 * time.Hour), 30 * time.Minute, 0},
		{"activity after now (skew)", now.Add(5 * time.Minute), 30 * time.Minute, 1},
		{"never active", time.Time{}, 30 * time.Minute, 0},
		{"custom timeout", now.Add(-15 * time.Minute), time.Hour, 0.75},
		{"monotonic reading ignored", time.Now(), 30 * time.Minute, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.IdleTimeout = tc.timeout
			c := live("s-1")
			c.LastActivity = tc.last
			if tc.name == "monotonic reading ignored" {
				n := time.Now() // now and last both carry monotonic readings
				c.LastActivity = n.Add(-15 * time.Minute)
				d := Scan(cfg, []Candidate{c}, Hints{}, n)
				if got := d.Ranked[0].Scores.Freshness; got != 0.5 {
					t.Errorf("freshness: got %v, want 0.5", got)
				}
				return
			}
			if got := decide(t, cfg, []Candidate{c}, Hints{}).Ranked[0].Scores.Freshness; got != tc.want {
				t.Errorf("freshness: got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	for _, tc := range []struct {
		name           string
		load, capacity int
		want           float64
		eligible       bool
	}{
		{"idle", 0, 2, 1, true},
		{"half busy", 1, 2, 0.5, true},
		{"full", 2, 2, 0, false},
		{"over capacity", 3, 2, 0, false},
		{"capacity 0 counts as 1", 0, 0, 1, true},
		{"capacity 0 with a task is full", 1, 0, 0, false},
		{"negative load counts as 0", -1, 1, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := live("s-1")
			c.Load, c.Capacity = tc.load, tc.capacity
			r := decide(t, DefaultConfig(), []Candidate{c}, Hints{}).Ranked[0]
			if r.Scores.Load != tc.want || r.Eligible != tc.eligible {
				t.Errorf("load, eligible: got %v, %t, want %v, %t", r.Scores.Load, r.Eligible, tc.want, tc.eligible)
			}
		})
	}
}

// TestRenormalization pins the total when only some factors apply.
func TestRenormalization(t *testing.T) {
	c := live("s-1")
	c.Capacity, c.Load = 2, 1 // load 0.5
	c.LastActivity = now.Add(-15 * time.Minute)
	c.Dirs, c.Files, c.Techs = []string{"src"}, []string{"src/a.go"}, []string{"go"}
	above := 1.0 / 2 * (1 - 1.0/2) // "src" for a task in "src/models", one session: A
	for _, tc := range []struct {
		name string
		h    Hints
		want float64
	}{
		{"no hints: freshness and load", Hints{}, (0.15*0.5 + 0.10*0.5) / 0.25},
		{"tech only", Hints{Techs: []string{"go"}}, (0.20*1 + 0.15*0.5 + 0.10*0.5) / 0.45},
		{"dir only", Hints{Dirs: []string{"src/models"}}, (0.30*above + 0.15*above*0.5 + 0.10*above*0.5) / 0.55},
		{"files (and so dirs)", Hints{Files: []string{"src/a.go", "src/b.go"}}, (0.30*1 + 0.25*0.5 + 0.15*0.5 + 0.10*0.5) / 0.80},
		{"everything", Hints{Files: []string{"src/a.go"}, Techs: []string{"go", "sql"}}, 0.30 + 0.25 + 0.20*0.5 + 0.15*0.5 + 0.10*0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decide(t, DefaultConfig(), []Candidate{c}, tc.h).Ranked[0].Total; math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("total: got %v, want %v", got, tc.want)
			}
		})
	}

	// Weights whose applicable sum is 0 total 0 rather than NaN.
	cfg := DefaultConfig()
	cfg.Weights = Weights{Directory: 0.5, File: 0.5}
	if got := decide(t, cfg, []Candidate{c}, Hints{}).Ranked[0].Total; got != 0 {
		t.Errorf("no applicable weight: got total %v, want 0", got)
	}
}

// TestTechOnlyTask shows why unhinted factors do not count as 1: a task
// that only says "go" goes to the Go session, not to a fresher Python one.
func TestTechOnlyTask(t *testing.T) {
	py, golang := live("python"), live("go")
	py.Techs = []string{"python"}
	golang.Techs = []string{"go"}
	golang.LastActivity = now.Add(-10 * time.Minute)
	d := decide(t, DefaultConfig(), []Candidate{py, golang}, Hints{Techs: []string{"Go"}})
	if d.Choice != Reuse || d.Winner != "go" {
		t.Fatalf("got %s, want reuse of go", d)
	}
}

func TestNoHintsReusesIdleWarmSession(t *testing.T) {
	d := decide(t, DefaultConfig(), []Candidate{live("s-1")}, Hints{})
	if d.Choice != Reuse || d.Winner != "s-1" {
		t.Fatalf("got %s, want reuse of s-1", d)
	}
}

func TestLoadGate(t *testing.T) {
	best := live("best")
	best.Dirs, best.Files, best.Techs = []string{"src"}, []string{"src/a.go"}, []string{"go"}
	best.Capacity, best.Load = 2, 2
	other := live("other")
	other.Dirs, other.Techs = []string{"src"}, []string{"go"}
	h := Hints{Files: []string{"src/a.go"}, Techs: []string{"go"}}
	d := decide(t, DefaultConfig(), []Candidate{best, other}, h)
	if d.Choice != Reuse || d.Winner != "other" {
		t.Fatalf("got %s, want reuse of other", d)
	}
	if len(d.Ranked) != 2 || d.Ranked[1].ID != "best" || d.Ranked[1].Eligible || d.Ranked[1].Total <= d.Ranked[0].Total {
		t.Errorf("ranked: got %s, want other, then the full best with a higher total", dump(d))
	}
	if d.Considered != 2 || d.Eligible != 1 {
		t.Errorf("considered, eligible: got %d, %d, want 2, 1", d.Considered, d.Eligible)
	}
}

func TestOutcomes(t *testing.T) {
	busy := func(id string) Candidate {
		c := live(id)
		c.Load = 1
		return c
	}
	stale := live("stale")
	stale.LastActivity = now.Add(-time.Hour)
	stale.Capacity, stale.Load = 2, 1
	for _, tc := range []struct {
		name    string
		cands   []Candidate
		exclude []string
		want    Choice
		text    string
	}{
		{"no candidates", nil, nil, SpawnNoCandidates, "spawn: no candidates"},
		{"all excluded", []Candidate{live("s-1")}, []string{"s-1"}, SpawnNoCandidates, "spawn: no candidates (1 excluded)"},
		{"all busy", []Candidate{busy("s-1"), busy("s-2"), busy("s-3"), busy("s-4")}, nil, SpawnAllBusy, "spawn: all 4 candidates busy"},
		{"the only one busy", []Candidate{busy("s-1")}, nil, SpawnAllBusy, "spawn: the only candidate is busy"},
		{"below threshold", []Candidate{stale}, nil, SpawnBelowThreshold,
			"spawn: best stale scored 0.20, not above 0.60: dir - file - tech - fresh 0.00 load 0.50"},
		{"reuse", []Candidate{live("s-12")}, nil, Reuse, "reuse s-12 (1.00 > 0.60): dir - file - tech - fresh 1.00 load 1.00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decide(t, DefaultConfig(), tc.cands, Hints{}, tc.exclude...)
			if d.Choice != tc.want {
				t.Errorf("outcome: got %s, want %s", d.Choice, tc.want)
			}
			if got := d.String(); got != tc.text {
				t.Errorf("String: got %q, want %q", got, tc.text)
			}
			if (d.Winner != "") != (tc.want == Reuse) {
				t.Errorf("winner: got %q for outcome %s", d.Winner, d.Choice)
			}
		})
	}
}

func TestDecisionStringFactors(t *testing.T) {
	c := live("s-12")
	c.Dormant = true
	c.Dirs, c.Files, c.Techs = []string{"src"}, []string{"src/a.go"}, []string{"go"}
	d := decide(t, DefaultConfig(), []Candidate{c}, Hints{Files: []string{"src/a.go", "src/b.go"}, Techs: []string{"go"}})
	want := "reuse dormant s-12 (0.88 > 0.60): dir 1.00 file 0.50 tech 1.00 fresh 1.00 load 1.00"
	if got := d.String(); got != want || !d.Dormant {
		t.Errorf("got %q (dormant %t), want %q (dormant)", got, d.Dormant, want)
	}
}

// TestThresholdStrictlyAbove pins that a total equal to the threshold
// spawns.
func TestThresholdStrictlyAbove(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Weights = Weights{File: 1} // the total is the file coverage
	h := Hints{Files: []string{"a", "b", "c", "d", "e"}}
	for _, tc := range []struct {
		files []string
		want  Choice
	}{
		{[]string{"a", "b", "c"}, SpawnBelowThreshold},           // 3/5 == 0.6
		{[]string{"a", "b", "c", "d"}, Reuse},                    // 0.8
		{[]string{"a", "b"}, SpawnBelowThreshold},                // 0.4
		{[]string{"a", "b", "c", "d", "e", "f"}, Reuse},          // 1
		{[]string{"./a", "b/", "c", "./c"}, SpawnBelowThreshold}, // still 3/5
	} {
		c := live("s-1")
		c.Files = tc.files
		d := decide(t, cfg, []Candidate{c}, h)
		if d.Choice != tc.want {
			t.Errorf("files %q: got %s (total %v), want %s", tc.files, d.Choice, d.Ranked[0].Total, tc.want)
		}
	}
}

func TestTies(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Weights = Weights{Tech: 1} // equal totals whatever load and recency
	mk := func(id string, load int, ago time.Duration, dormant bool) Candidate {
		return Candidate{ID: id, Techs: []string{"go"}, State: State{
			Capacity: 4, Load: load, LastActivity: now.Add(-ago), Dormant: dormant,
		}}
	}
	h := Hints{Techs: []string{"go"}}
	for _, tc := range []struct {
		name  string
		cands []Candidate
		want  []string
	}{
		{"lower load first", []Candidate{mk("a", 2, 0, false), mk("b", 1, 0, false)}, []string{"b", "a"}},
		{"then more recent", []Candidate{mk("a", 1, time.Hour, false), mk("b", 1, time.Minute, false)}, []string{"b", "a"}},
		{"then live before dormant", []Candidate{mk("a", 1, 0, true), mk("b", 1, 0, false)}, []string{"b", "a"}},
		{"then smaller ID", []Candidate{mk("b", 1, 0, false), mk("a", 1, 0, false), mk("c", 1, 0, false)}, []string{"a", "b", "c"}},
		{"load ratio, not load", []Candidate{
			{ID: "a", Techs: []string{"go"}, State: State{Capacity: 2, Load: 1, LastActivity: now}},
			{ID: "b", Techs: []string{"go"}, State: State{Capacity: 4, Load: 1, LastActivity: now}},
		}, []string{"b", "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decide(t, cfg, tc.cands, h)
			var got []string
			for _, r := range d.Ranked {
				got = append(got, r.ID)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ranking: got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestExclude(t *testing.T) {
	a, b, c := live("a"), live("b"), live("c")
	a.Techs, b.Techs = []string{"go"}, []string{"go"}
	c.Load = 1 // full
	h := Hints{Techs: []string{"go"}}
	d := decide(t, DefaultConfig(), []Candidate{a, b, c}, h, "a", "a", "c", "nobody")
	if d.Choice != Reuse || d.Winner != "b" {
		t.Fatalf("got %s, want reuse of b", d)
	}
	if d.Considered != 1 || d.Eligible != 1 || d.Excluded != 2 || len(d.Ranked) != 1 {
		t.Errorf("considered, eligible, excluded, ranked: got %d, %d, %d, %d, want 1, 1, 2, 1",
			d.Considered, d.Eligible, d.Excluded, len(d.Ranked))
	}
}

func TestTopK(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TopK = 3
	var cands []Candidate
	for i, id := range []string{"f1", "f2", "f3", "e1", "e2"} {
		c := live(id)
		c.LastActivity = now.Add(-time.Duration(i) * time.Minute)
		if id[0] == 'f' {
			c.Load = 1
		}
		cands = append(cands, c)
	}
	d := decide(t, cfg, cands, Hints{})
	var got []string
	for _, r := range d.Ranked {
		got = append(got, r.ID)
	}
	// The full sessions are fresher than the eligible ones, yet rank after
	// them; only TopK are reported.
	if want := []string{"e1", "e2", "f1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ranked: got %q, want %q", got, want)
	}
	if d.Considered != 5 || d.Eligible != 2 {
		t.Errorf("considered, eligible: got %d, %d, want 5, 2", d.Considered, d.Eligible)
	}
}

func TestChoiceString(t *testing.T) {
	for o, want := range map[Choice]string{
		Reuse:               "reuse",
		SpawnNoCandidates:   "spawn-no-candidates",
		SpawnAllBusy:        "spawn-all-busy",
		SpawnBelowThreshold: "spawn-below-threshold",
		0:                   "Choice(0)",
		9:                   "Choice(9)",
	} {
		if got := o.String(); got != want {
			t.Errorf("Outcome(%d).String(): got %q, want %q", int(o), got, want)
		}
		if spawn := o >= SpawnNoCandidates && o <= SpawnBelowThreshold; o.Spawn() != spawn {
			t.Errorf("Outcome(%d).Spawn(): got %t, want %t", int(o), o.Spawn(), spawn)
		}
	}
}

// TestScanInvalidConfig checks that Scan, which does not validate its
// Config, still returns.
func TestScanInvalidConfig(t *testing.T) {
	c := live("s-1")
	c.Files = []string{"a.go"}
	d := Scan(Config{}, []Candidate{c}, Hints{Files: []string{"a.go"}}, now)
	if len(d.Ranked) != 1 || d.Ranked[0].Scores.Freshness != 0 {
		t.Errorf("got %s, want one candidate with freshness 0", dump(d))
	}
	if got, want := (Decision{}).String(), "Choice(0)"; got != want {
		t.Errorf("zero Decision: got %q, want %q", got, want)
	}
}

func TestFormatScore(t *testing.T) {
	for _, tc := range []struct {
		total, threshold float64
		want, wantTh     string
	}{
		{0.83, 0.6, "0.83", "0.60"},
		{0.6, 0.6, "0.60", "0.60"},
		{0.6004, 0.6, "0.6004", "0.6000"},
		{0.5996, 0.6, "0.5996", "0.6000"},
		{0.604, 0.6, "0.604", "0.600"},
		{0.623, 0.625, "0.623", "0.625"}, // "0.62" both, at two decimals
		{math.Nextafter(0.6, 1), 0.6, "0.6000000000000001", "0.6000000000000000"},
		{1e-300, 0, "1e-300", "0"},
	} {
		got, gotTh := FormatScore(tc.total, tc.threshold)
		if got != tc.want || gotTh != tc.wantTh {
			t.Errorf("FormatScore(%v, %v): got %q, %q, want %q, %q", tc.total, tc.threshold, got, gotTh, tc.want, tc.wantTh)
		}
		// The printed values compare as the values do.
		p, _ := strconv.ParseFloat(got, 64)
		q, _ := strconv.ParseFloat(gotTh, 64)
		if (p > q) != (tc.total > tc.threshold) || (p == q) != (tc.total == tc.threshold) {
			t.Errorf("FormatScore(%v, %v) = %q, %q reads on the wrong side", tc.total, tc.threshold, got, gotTh)
		}
	}
	// A decision never reads "0.60 > 0.60".
	d := Decision{Choice: Reuse, Winner: "s-1", Threshold: 0.6, Ranked: []Ranked{{ID: "s-1", Total: 0.6004, Applied: Applied{Freshness: true, Load: true}}}}
	if got, want := d.String(), "reuse s-1 (0.6004 > 0.6000): dir - file - tech - fresh 0.00 load 0.00"; got != want {
		t.Errorf("String: got %q, want %q", got, want)
	}
	d = Decision{Choice: SpawnBelowThreshold, Threshold: 0.6, Ranked: []Ranked{{ID: "s-1", Total: 0.5996}}}
	if got, want := d.String(), "spawn: best s-1 scored 0.5996, not above 0.6000: dir - file - tech - fresh - load -"; got != want {
		t.Errorf("String: got %q, want %q", got, want)
	}
}
