package matcher

import (
	"math"
	"reflect"
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

func TestDirectoryFactor(t *testing.T) {
	for _, tc := range []struct {
		name    string
		session []string
		task    Hints
		want    float64
	}{
		{"same directory", []string{"src/models"}, Hints{Dirs: []string{"src/models"}}, 1},
		{"ancestor covers half", []string{"src"}, Hints{Dirs: []string{"src/models"}}, 0.5},
		{"ancestor two levels up", []string{"src"}, Hints{Dirs: []string{"src/models/user"}}, 1.0 / 3},
		{"descendant knows a corner", []string{"src/models/user"}, Hints{Dirs: []string{"src/models"}}, 2.0 / 3},
		{"shallowest descendant counts", []string{"src/a/b/c", "src/a/b"}, Hints{Dirs: []string{"src"}}, 1.0 / 3},
		{"siblings", []string{"src/views"}, Hints{Dirs: []string{"src/models"}}, 0},
		{"string prefix is no ancestor", []string{"src/mod"}, Hints{Dirs: []string{"src/models"}}, 0},
		{"unrelated", []string{"docs"}, Hints{Dirs: []string{"src"}}, 0},
		{"root session, task below", []string{"."}, Hints{Dirs: []string{"src"}}, 0},
		{"session below, root task", []string{"src"}, Hints{Dirs: []string{"."}}, 0},
		{"root and root", []string{"."}, Hints{Dirs: []string{""}}, 1},
		{"./ and trailing slash", []string{"./src/models/"}, Hints{Dirs: []string{"src//models"}}, 1},
		{"best session dir wins", []string{"src", "src/models"}, Hints{Dirs: []string{"src/models"}}, 1},
		{"mean over task dirs", []string{"src/models"}, Hints{Dirs: []string{"src/models", "docs"}}, 0.5},
		{"file hints add their dirs", []string{"src/models"}, Hints{Files: []string{"src/models/user.go"}}, 1},
		{"file and dir hints merge", []string{"src"}, Hints{Dirs: []string{"src"}, Files: []string{"src/models/user.go"}}, 0.75},
		{"absolute paths", []string{"/repo"}, Hints{Dirs: []string{"/repo/src"}}, 0.5},
		{"absolute is not relative", []string{"repo"}, Hints{Dirs: []string{"/repo"}}, 0},
		{"session with empty context", nil, Hints{Dirs: []string{"src"}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := live("s-1")
			c.Dirs = tc.session
			d := decide(t, DefaultConfig(), []Candidate{c}, tc.task)
			r := d.Ranked[0]
			if !r.Applied.Directory {
				t.Fatalf("directory factor does not apply, want it to")
			}
			if math.Abs(r.Scores.Directory-tc.want) > 1e-15 {
				t.Errorf("directory: got %v, want %v", r.Scores.Directory, tc.want)
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
	for _, tc := range []struct {
		name string
		h    Hints
		want float64
	}{
		{"no hints: freshness and load", Hints{}, (0.15*0.5 + 0.10*0.5) / 0.25},
		{"tech only", Hints{Techs: []string{"go"}}, (0.20*1 + 0.15*0.5 + 0.10*0.5) / 0.45},
		{"dir only", Hints{Dirs: []string{"src/models"}}, (0.30*0.5 + 0.15*0.5 + 0.10*0.5) / 0.55},
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
	if d.Outcome != Reuse || d.Winner != "go" {
		t.Fatalf("got %s, want reuse of go", d)
	}
}

func TestNoHintsReusesIdleWarmSession(t *testing.T) {
	d := decide(t, DefaultConfig(), []Candidate{live("s-1")}, Hints{})
	if d.Outcome != Reuse || d.Winner != "s-1" {
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
	if d.Outcome != Reuse || d.Winner != "other" {
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
		want    Outcome
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
			if d.Outcome != tc.want {
				t.Errorf("outcome: got %s, want %s", d.Outcome, tc.want)
			}
			if got := d.String(); got != tc.text {
				t.Errorf("String: got %q, want %q", got, tc.text)
			}
			if (d.Winner != "") != (tc.want == Reuse) {
				t.Errorf("winner: got %q for outcome %s", d.Winner, d.Outcome)
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
		want  Outcome
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
		if d.Outcome != tc.want {
			t.Errorf("files %q: got %s (total %v), want %s", tc.files, d.Outcome, d.Ranked[0].Total, tc.want)
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
	if d.Outcome != Reuse || d.Winner != "b" {
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

func TestOutcomeString(t *testing.T) {
	for o, want := range map[Outcome]string{
		Reuse:               "reuse",
		SpawnNoCandidates:   "spawn-no-candidates",
		SpawnAllBusy:        "spawn-all-busy",
		SpawnBelowThreshold: "spawn-below-threshold",
		0:                   "Outcome(0)",
		9:                   "Outcome(9)",
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
	if got, want := (Decision{}).String(), "Outcome(0)"; got != want {
		t.Errorf("zero Decision: got %q, want %q", got, want)
	}
}
