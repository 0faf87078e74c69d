package pool

import (
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/matcher"
)

// Cluster placement: a host of a cluster keeps the other hosts' sessions
// of this agent in the pool's matcher index, named "host/session" and
// owned by their host, so that one index decides over every host's
// sessions (a score depends on every session in the index: the directory
// factor weighs a directory by how rare it is among them). Local
// decisions leave them out, all at once: they decide among the sessions
// of owner localOwner (matcher.Index.DecideOwned), at about the cost of a
// decision with no other host, where excluding 9,900 of them by ID cost
// hundreds of times that (BENCHMARKS.md). PlaceAcross includes them.

// localOwner owns this host's sessions in the index; another host's are
// owned by that host's ID.
const localOwner = ""

// acrossHosts is a decision over every host's sessions.
type acrossHosts struct {
	// exclude are RemoteIDs ("host/session") to leave out.
	exclude []string
}

// ApplyRemote updates the other hosts' sessions in the index: with reset,
// every one of them is dropped first; then removes are dropped and puts
// added or replaced. IDs are RemoteIDs ("host/session"), which never
// collide with this host's own session IDs.
func (p *Pool) ApplyRemote(reset bool, puts []matcher.Candidate, removes []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.remote == nil {
		p.remote = make(map[string]struct{})
	}
	if reset {
		for id := range p.remote {
			p.index.Remove(id)
		}
		clear(p.remote)
	}
	for _, id := range removes {
		if _, ok := p.remote[id]; ok {
			p.index.Remove(id)
			delete(p.remote, id)
		}
	}
	kept := puts[:0:0]
	for _, c := range puts {
		owner, _, ok := cluster.SplitRemoteID(c.ID)
		if !ok {
			continue // never a local session's slot
		}
		p.remote[c.ID] = struct{}{}
		c.Owner = owner
		kept = append(kept, c)
	}
	p.index.PutAll(kept)
}

// ExpectRemote records t's hints against another host's session id (a
// RemoteID) in the index, at once, as Execute does for a session here:
// this host forwarded t there, and its next decision should see that
// session as knowing what t is about, not wait for the owner's next
// summary (which then replaces the entry, hints included, as the owner
// recorded them too).
func (p *Pool) ExpectRemote(id string, t hearth.Task) {
	c := newFingerprint(p.cfg().Fingerprint).expect(normalizeHints(t.Hints, p.cfg().Workspace))
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.remote[id]; !ok {
		return
	}
	p.index.AddFiles(id, c.addFiles...)
	p.index.AddDirs(id, c.addDirs...)
	p.index.AddTechs(id, c.addTechs...)
}

// Remote counts the other hosts' sessions in the index.
func (p *Pool) Remote() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.remote)
}

// decideIndexLocked is the matcher's decision over this host's sessions
// (local) or every host's, leaving out exclude. p.mu must be held.
func (p *Pool) decideIndexLocked(local bool, hints matcher.Hints, now time.Time, exclude []string) matcher.Decision {
	if local {
		return p.index.DecideOwned(localOwner, hints, now, exclude...)
	}
	return p.index.Decide(hints, now, exclude...)
}

// AcrossHosts says whether the pool's tasks are placed over every host's
// sessions in a cluster: those of a matcher-placed agent that is not
// external. A run's tasks never are: a run's state is its host's.
func (p *Pool) AcrossHosts() bool {
	c := p.cfg()
	return c.External == "" && c.Placement != hearth.PlacementFresh && c.Placement != hearth.PlacementRoundRobin
}

// PlaceAcross decides t over every host's sessions with the pool's
// policy, leaving out the RemoteIDs in exclude, without acting on it.
// When neither Remote nor Spawn is set, the task stays on this host (a
// session here, or a wait for one); for a spawn, the cluster chooses the
// host (cluster.View.Target).
func (p *Pool) PlaceAcross(t hearth.Task, exclude []string, now time.Time) cluster.Placement {
	hints := normalizeHints(t.Hints, p.cfg().Workspace)
	p.mu.Lock()
	defer p.mu.Unlock()
	pl := p.decideLocked(t, hints, now, &acrossHosts{exclude: exclude})
	a := cluster.Placement{Decision: finish(p.decisionLocked(t, pl, true), true)}
	switch pl.kind {
	case planRemote:
		a.Remote = pl.remote
	case planSpawn, planRetire:
		a.Spawn = true
	case planReuse:
		// Below the threshold only because this pool is full: a host
		// with room should spawn instead.
		a.Spawn = pl.below
	case planWait:
		// A full pool whose best session is busy waits for it; with no
		// session worth waiting for, a host with room should spawn.
		a.Spawn = pl.s == nil && pl.d.Choice != matcher.Reuse
	}
	return a
}

// Summary is what this host publishes about session id for the other
// hosts' placement: its most recent files, directories and technologies,
// its state. ok is false when the session is no placement candidate here
// (gone, lost, starting, dormant without state) or belongs to an
// external agent, whose tasks are not placed: its key is then deleted.
func (p *Pool) Summary(id string) (cluster.Summary, bool) {
	if p.cfg().External != "" {
		return cluster.Summary{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.sessions[id]
	if s == nil || s.stale || (s.status != statusLive && s.status != statusDormant) {
		return cluster.Summary{}, false
	}
	c, ok := p.index.Candidate(id)
	if !ok {
		return cluster.Summary{}, false
	}
	return p.summaryLocked(s, c), true
}

// Summaries returns the summaries of every session Summary would
// publish.
func (p *Pool) Summaries() []cluster.Summary {
	if p.cfg().External != "" {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []cluster.Summary
	for id, s := range p.sessions {
		if s.stale || (s.status != statusLive && s.status != statusDormant) {
			continue
		}
		if c, ok := p.index.Candidate(id); ok {
			out = append(out, p.summaryLocked(s, c))
		}
	}
	return out
}

func (p *Pool) summaryLocked(s *session, c matcher.Candidate) cluster.Summary {
	sum := cluster.Summary{
		Session: s.id, Agent: p.cfg().Agent, LastActivity: s.lastActivity,
		Load: s.load, Capacity: s.capacity, Dormant: s.status == statusDormant,
		// The index's lists, in no particular order, for a dormant
		// session; a live one's fingerprint has them most recent first.
		Files: c.Files, Dirs: c.Dirs, Techs: c.Techs,
	}
	if s.fp != nil {
		sum.Files = newestFirst(s.fp.files.keys())
		sum.Dirs = newestFirst(s.fp.dirs.keys())
		sum.Techs = newestFirst(s.fp.techs.keys())
	}
	return sum
}

// newestFirst reverses a least-recently-used-first list.
func newestFirst(lru []string) []string {
	out := make([]string, len(lru))
	for i, v := range lru {
		out[len(lru)-1-i] = v
	}
	return out
}

// Load is the agent's load on this host, for its cluster record.
func (p *Pool) Load() hearth.AgentLoad {
	a := hearth.AgentLoad{Name: p.cfg().Agent, External: p.cfg().External != "", MaxSessions: p.cfg().MaxSessions}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.sessions {
		switch s.status {
		case statusLive, statusStarting, statusRetiring:
			a.Live++
			a.Load += s.load
			a.Capacity += s.capacity
		case statusDormant:
			a.Dormant++
		}
	}
	return a
}
