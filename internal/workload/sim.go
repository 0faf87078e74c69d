package workload

import (
	"container/heap"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/hearth-dev/hearth/matcher"
)

// Pool is the model of one agent's pool that [Simulate] places questions
// on. Every session runs one question at a time (capacity 1).
type Pool struct {
	// MaxSessions bounds the sessions alive at once (the pool's
	// max_sessions); Parallel, the questions in flight (a pipeline's
	// parallel).
	MaxSessions, Parallel int
	// The modeled time: starting a session, reading a file the session has
	// not read before (the gotour agent parses it), and the rest of a
	// question's cost (placing it, answering once the package is read).
	Spawn, Read, Answer time.Duration
}

// DefaultPool is five sessions and three questions in flight, with costs
// fitted to the code tour as the host ran it (BENCHMARKS.md, 4 sessions, 2
// in flight: hearth 325 ms, a new session per task 1435 ms, round robin
// 464 ms): a spawn (and, for the naive placer, the stop) 37 ms, a file
// read for the first time 2.2 ms (parsed, and put to and reported to the
// host), and 6.1 ms a question besides (the decision, events, the answer).
// Three measured times fix the three costs, so the tour's modeled times
// are no evidence of the model; the other workloads' are predictions.
var DefaultPool = Pool{MaxSessions: 5, Parallel: 3, Spawn: 37 * time.Millisecond, Read: 2200 * time.Microsecond, Answer: 6100 * time.Microsecond}

// Placer is a placement policy.
type Placer int

// The placers.
const (
	// Hearth asks the matcher, then acts as the host's pool does: reuse
	// the winner above the threshold; otherwise spawn if the pool has
	// room; otherwise wait for a busy session that would win, or take the
	// best idle session below the threshold (when_full = "wait").
	Hearth Placer = iota + 1
	// Naive starts a new session for every question and stops it after.
	Naive
	// RoundRobin fills the pool, then hands questions to its sessions in
	// turn, skipping busy ones, whatever they know.
	RoundRobin
)

func (p Placer) String() string {
	switch p {
	case Hearth:
		return "hearth"
	case Naive:
		return "naive"
	case RoundRobin:
		return "round-robin"
	}
	return fmt.Sprintf("Placer(%d)", int(p))
}

// Matcher is what the Hearth placer decides with: a *matcher.Index, or a
// reference implementation of another definition.
type Matcher interface {
	// Put replaces a session's fingerprint.
	Put(c matcher.Candidate)
	// Decide places a task among the sessions put, leaving out exclude.
	Decide(h matcher.Hints, now time.Time, exclude ...string) matcher.Decision
}

// Result is what one simulated run of a workload did.
type Result struct {
	Workload string
	Placer   string
	// Questions placed; Repeats, those about a package an earlier question
	// was about; Hits, the repeats placed on a session that had already
	// worked in their package.
	Questions, Repeats, Hits int
	// Spawns and Reuses count placements; Waits, placements that waited
	// for a session to free up; Below, reuses below the threshold because
	// the pool was full (Hearth only).
	Spawns, Reuses, Waits, Below int
	// FilesRead counts files sessions read for the first time: the work a
	// warm session saves.
	FilesRead int
	// Elapsed is the modeled time of the whole workload.
	Elapsed time.Duration
	// MostFiles and MostDirs are the largest fingerprint any session had,
	// to compare with the host's bounds, past which it evicts.
	MostFiles, MostDirs int
	// MostSessions and MostInFlight are the most sessions started and not
	// stopped, and questions in flight, at any time.
	MostSessions, MostInFlight int
	// Misses describes the repeats that missed, in order; Starting counts
	// those that came while the session started for their package's first
	// question was still starting: the index knew nothing of it yet, in
	// the model as in the host.
	Misses   []string
	Starting int
}

// Precision is Hits/Repeats, or 1 when there are no repeats.
func (r Result) Precision() float64 {
	if r.Repeats == 0 {
		return 1
	}
	return float64(r.Hits) / float64(r.Repeats)
}

// Simulate places the questions of w on pool with placer, deciding with m
// for Hearth (m is unused by the others and may be nil; it must start
// empty). Questions start in order, up to pool.Parallel at once, each as
// soon as one before it finishes, like the tasks of a pipeline with no
// dependencies. The model differs from the host in ways the package tests
// name; it is the matcher's precision it measures, not the host's speed.
func Simulate(w Workload, pool Pool, placer Placer, m Matcher) (Result, error) {
	if err := w.Validate(); err != nil {
		return Result{}, err
	}
	if pool.MaxSessions < 1 || pool.Parallel < 1 {
		return Result{}, fmt.Errorf("pool of %d sessions, %d in flight: both must be at least 1", pool.MaxSessions, pool.Parallel)
	}
	if placer == Hearth && m == nil {
		return Result{}, fmt.Errorf("the hearth placer needs a matcher; pass matcher.NewIndex(matcher.DefaultConfig())")
	}
	s := &sim{w: w, pool: pool, placer: placer, m: m, t0: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC), seen: map[string]bool{}, waited: map[int]bool{}}
	s.res = Result{Workload: w.Name, Placer: placer.String()}
	s.run()
	return s.res, nil
}

type sim struct {
	w      Workload
	pool   Pool
	placer Placer
	m      Matcher
	t0     time.Time
	now    time.Duration
	res    Result

	sessions []*simSession
	procs    int // sessions starting or live
	next     int // the next question to start
	inflight int
	waiting  []int // questions started but not placed, in order
	waited   map[int]bool
	seen     map[string]bool
	events   eventQueue
	turn     int // round robin's next session
}

type simSession struct {
	id      string
	live    bool // started; false while starting, or once stopped
	stopped bool
	load    int
	last    time.Time
	pkgs    map[string]bool // packages it worked in
	// startingFor is the package of the question it was started for.
	startingFor string
	files       map[string]bool // files it read
	fileList    []string
	dirList     []string
}

func (s *sim) at() time.Time { return s.t0.Add(s.now) }

func (s *sim) run() {
	s.startQuestions()
	for s.events.Len() > 0 {
		e := heap.Pop(&s.events).(event)
		s.now = e.at
		switch e.kind {
		case spawned:
			e.sess.live = true
			s.work(e.sess, e.q)
		case answered:
			ss := e.sess
			ss.load--
			ss.last = s.at()
			s.inflight--
			if s.placer == Naive {
				ss.live, ss.stopped = false, true
				s.procs--
			} else {
				s.put(ss)
			}
			// Waiting questions try again first: the pool tells them
			// something changed before the run starts the next task.
			waiting := s.waiting
			s.waiting = nil
			for _, q := range waiting {
				if !s.place(q) {
					s.waiting = append(s.waiting, q)
				}
			}
			s.startQuestions()
		}
	}
	s.res.Elapsed = s.now
}

func (s *sim) startQuestions() {
	for s.inflight < s.pool.Parallel && s.next < len(s.w.Questions) {
		q := s.next
		s.next++
		s.inflight++
		s.res.MostInFlight = max(s.res.MostInFlight, s.inflight)
		s.res.Questions++
		if !s.place(q) {
			s.waiting = append(s.waiting, q)
		}
	}
}

// place puts question q on a session, or reports false if it must wait.
func (s *sim) place(q int) bool {
	switch s.placer {
	case Naive:
		s.spawn(q)
		return true
	case RoundRobin:
		if s.procs < s.pool.MaxSessions {
			s.spawn(q)
			return true
		}
		for range s.sessions {
			ss := s.sessions[s.turn%len(s.sessions)]
			s.turn++
			if ss.live && ss.load < 1 {
				s.reuse(q, ss, "")
				return true
			}
		}
		s.noteWait(q)
		return false
	}
	return s.placeHearth(q)
}

// placeHearth is the host pool's acquire: decide, then act.
func (s *sim) placeHearth(q int) bool {
	h := s.w.Questions[q].Hints
	var starting []string
	for _, ss := range s.sessions {
		if !ss.live && !ss.stopped {
			starting = append(starting, ss.id)
		}
	}
	d := s.m.Decide(h, s.at(), starting...)
	if d.Choice == matcher.Reuse {
		s.reuse(q, s.byID(d.Winner), fmt.Sprintf("reused %s at %.3f", d.Winner, d.Ranked[0].Total))
		return true
	}
	if s.procs < s.pool.MaxSessions {
		s.spawn(q)
		return true
	}
	// The pool is full. A busy session that would win is worth waiting
	// for; otherwise the best idle session takes it.
	if s.busyWinner(h, starting) {
		s.noteWait(q)
		return false
	}
	for _, r := range d.Ranked {
		if ss := s.byID(r.ID); r.Eligible && ss != nil && ss.live && ss.load < 1 {
			s.res.Below++
			s.reuse(q, ss, fmt.Sprintf("reused %s below the threshold at %.3f", ss.id, r.Total))
			return true
		}
	}
	var best *simSession
	for _, ss := range s.sessions {
		if ss.live && ss.load < 1 && (best == nil || ss.last.After(best.last)) {
			best = ss
		}
	}
	if best != nil {
		s.res.Below++
		s.reuse(q, best, "reused "+best.id+", the most recent idle session, below the threshold")
		return true
	}
	s.noteWait(q)
	return false
}

// busyWinner reports whether a busy session would win the task above the
// threshold: the decision again without the sessions free now.
func (s *sim) busyWinner(h matcher.Hints, starting []string) bool {
	exclude := slices.Clone(starting)
	for _, ss := range s.sessions {
		if ss.live && ss.load < 1 {
			exclude = append(exclude, ss.id)
		}
	}
	b := s.m.Decide(h, s.at(), exclude...)
	return b.Choice == matcher.SpawnAllBusy && len(b.Ranked) > 0 && b.Ranked[0].Total > b.Threshold
}

// noteWait counts a question's first wait.
func (s *sim) noteWait(q int) {
	if !s.waited[q] {
		s.waited[q] = true
		s.res.Waits++
	}
}

func (s *sim) byID(id string) *simSession {
	for _, ss := range s.sessions {
		if ss.id == id {
			return ss
		}
	}
	return nil
}

// count records a placement of question q on ss for precision.
func (s *sim) count(q int, ss *simSession, how string) {
	pkg := s.w.Questions[q].Package
	if s.seen[pkg] {
		s.res.Repeats++
		if ss.pkgs[pkg] {
			s.res.Hits++
		} else {
			why := ""
			for _, o := range s.sessions {
				if !o.live && !o.stopped && o.startingFor == pkg {
					why = "; " + o.id + ", started for it, was still starting, so no index knew"
				}
			}
			if why != "" {
				s.res.Starting++
			}
			s.res.Misses = append(s.res.Misses, fmt.Sprintf("question %d (%s): %s, which had not worked in %s%s", q+1, s.w.Questions[q].Prompt, how, pkg, why))
		}
	}
	s.seen[pkg] = true
}

func (s *sim) spawn(q int) {
	ss := &simSession{id: fmt.Sprintf("s-%02d", len(s.sessions)+1), load: 1, pkgs: map[string]bool{}, files: map[string]bool{},
		startingFor: s.w.Questions[q].Package}
	s.sessions = append(s.sessions, ss)
	s.procs++
	s.res.MostSessions = max(s.res.MostSessions, s.procs)
	s.res.Spawns++
	s.count(q, ss, "spawned "+ss.id)
	heap.Push(&s.events, event{at: s.now + s.pool.Spawn, kind: spawned, sess: ss, q: q})
}

func (s *sim) reuse(q int, ss *simSession, how string) {
	ss.load++
	s.res.Reuses++
	s.count(q, ss, how)
	if s.placer == Hearth {
		s.put(ss)
	}
	s.work(ss, q)
}

// work runs question q on ss from now: the agent lists the package and
// reads the files it has not read yet, reporting each, then answers.
func (s *sim) work(ss *simSession, q int) {
	pkg := s.w.Questions[q].Package
	cold := 0
	for _, f := range s.w.Packages[pkg] {
		if !ss.files[f] {
			ss.files[f] = true
			ss.fileList = append(ss.fileList, f)
			cold++
		}
	}
	if !ss.pkgs[pkg] {
		ss.pkgs[pkg] = true
		ss.dirList = append(ss.dirList, pkg)
	}
	s.res.FilesRead += cold
	s.res.MostFiles = max(s.res.MostFiles, len(ss.fileList))
	s.res.MostDirs = max(s.res.MostDirs, len(ss.dirList))
	ss.last = s.at()
	if s.placer == Hearth {
		s.put(ss)
	}
	heap.Push(&s.events, event{at: s.now + time.Duration(cold)*s.pool.Read + s.pool.Answer, kind: answered, sess: ss, q: q})
}

// put gives the matcher ss's fingerprint as the host records it: the files
// read, the package directories worked in, Go.
func (s *sim) put(ss *simSession) {
	if s.m == nil {
		return
	}
	c := matcher.Candidate{ID: ss.id, State: matcher.State{Capacity: 1, Load: ss.load, LastActivity: ss.last},
		Files: ss.fileList, Dirs: ss.dirList}
	if len(ss.fileList) > 0 {
		c.Techs = []string{"go"}
	}
	s.m.Put(c)
}

type eventKind int

const (
	spawned eventKind = iota
	answered
)

type event struct {
	at   time.Duration
	seq  int
	kind eventKind
	sess *simSession
	q    int
}

// eventQueue orders events by time, then by the order they were pushed.
type eventQueue struct {
	ev  []event
	seq int
}

func (e *eventQueue) Len() int { return len(e.ev) }
func (e *eventQueue) Less(i, j int) bool {
	if e.ev[i].at != e.ev[j].at {
		return e.ev[i].at < e.ev[j].at
	}
	return e.ev[i].seq < e.ev[j].seq
}
func (e *eventQueue) Swap(i, j int) { e.ev[i], e.ev[j] = e.ev[j], e.ev[i] }
func (e *eventQueue) Push(x any) {
	ev := x.(event)
	ev.seq = e.seq
	e.seq++
	e.ev = append(e.ev, ev)
}
func (e *eventQueue) Pop() any {
	ev := e.ev[len(e.ev)-1]
	e.ev = e.ev[:len(e.ev)-1]
	return ev
}

// WriteTable writes results as a Markdown table: per workload and placer,
// precision, spawns, reuses, files read and modeled time.
func WriteTable(out io.Writer, results []Result) error {
	var b strings.Builder
	b.WriteString("| workload | placer | precision | spawns | reuses | below threshold | waits | files read | modeled time |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %s | %d/%d = %.1f%% | %d | %d | %d | %d | %d | %s |\n", r.Workload, r.Placer, r.Hits, r.Repeats, 100*r.Precision(),
			r.Spawns, r.Reuses, r.Below, r.Waits, r.FilesRead, r.Elapsed.Round(100*time.Microsecond))
	}
	_, err := io.WriteString(out, b.String())
	return err
}
