package cluster

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/matcher"
)

// View is one host's picture of the cluster: its members and the sessions
// the other hosts published, with one matcher index per agent over those
// remote sessions, keyed [RemoteID] ("host/session"). The host's own
// sessions are left out of the indexes (its pools hold them, fresher) but
// listed by [View.Sessions].
//
// A watch on etcd feeds it with [View.Reset] and [View.Apply]; a host
// keeps the remote sessions in its own pools' indexes from
// [View.SetSink], so that one policy decides over every host's sessions
// in one index, and asks [View.SpawnHost] where to spawn. [View.Decide]
// decides over the remote sessions alone. A View is safe for concurrent
// use.
type View struct {
	self   string
	cfgFor func(agent string) matcher.Config

	mu       sync.Mutex
	rev      int64
	hosts    map[string]hearth.Member
	sessions map[string]map[string]Summary // by host, by session
	agents   map[string]*agentIndex
	drained  map[string]bool // the hosts whose drain key is set
	changed  chan struct{}
	sink     func(Update)
	// last are the members as they were before the latest Reset that
	// dropped some: what a host out of the cluster lists (Last).
	last []hearth.Member
}

// Update is what one change of the view did to one agent's remote
// sessions, for a host that keeps them in its own pools' indexes
// ([View.SetSink]). Reset drops every remote session of every agent
// first (Agent is then empty).
type Update struct {
	Reset   bool
	Agent   string
	Puts    []matcher.Candidate // named by RemoteID, owned by their host
	Removes []string            // RemoteIDs
}

// SetSink makes fn receive every change of the remote sessions, in
// order, starting with a reset and the sessions the view holds now. fn
// is called with the view locked: it must not call the view back, and
// must be quick.
func (v *View) SetSink(fn func(Update)) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.sink = fn
	if fn == nil {
		return
	}
	fn(Update{Reset: true})
	for agent, a := range v.agents {
		a.mu.Lock()
		puts := a.ix.Candidates()
		a.mu.Unlock()
		fn(Update{Agent: agent, Puts: puts})
	}
}

// agentIndex is one agent's remote sessions. Its lock is taken after the
// View's, or alone by Decide, so that a decision does not hold up the
// watch for other agents.
type agentIndex struct {
	mu sync.Mutex
	ix *matcher.Index
}

// NewView returns an empty view for host self. cfgFor gives the matcher
// configuration of each agent (this host's own, so that remote sessions
// are scored as local ones are); an agent this host does not run should
// get the defaults. cfgFor's configurations must be valid.
func NewView(self string, cfgFor func(agent string) matcher.Config) *View {
	return &View{
		self:     self,
		cfgFor:   cfgFor,
		hosts:    make(map[string]hearth.Member),
		sessions: make(map[string]map[string]Summary),
		agents:   make(map[string]*agentIndex),
		drained:  make(map[string]bool),
		changed:  make(chan struct{}),
	}
}

// Self is the ID of the host the view belongs to.
func (v *View) Self() string { return v.self }

// Change is one update of the view: a member's record, a session's
// summary or a host's drain mark put or deleted.
type Change struct {
	Kind    KeyKind // KeyHost, KeySession or KeyDrain
	Host    string
	Delete  bool
	Info    hearth.Member // for a put of KeyHost: the member's record (HostRecord.Member)
	Summary Summary       // for a put of KeySession; Summary.Session names the session in both cases
}

// Reset replaces the whole view with what etcd held at revision rev.
func (v *View) Reset(rev int64, changes []Change) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.hosts) > 0 {
		v.last = v.membersLocked()
	}
	v.hosts = make(map[string]hearth.Member)
	v.sessions = make(map[string]map[string]Summary)
	v.agents = make(map[string]*agentIndex)
	v.drained = make(map[string]bool)
	if v.sink != nil {
		v.sink(Update{Reset: true})
	}
	v.applyLocked(rev, changes)
}

// Apply applies the changes of one watch response, at revision rev.
func (v *View) Apply(rev int64, changes []Change) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.applyLocked(rev, changes)
}

func (v *View) applyLocked(rev int64, changes []Change) {
	// Index updates are gathered by agent and session and made at the
	// end, puts oldest first (PutAll): a listing of thousands of sessions
	// in arbitrary order would otherwise walk the index's recency list
	// for each.
	type change struct {
		host string
		s    *Summary // nil: remove
	}
	pend := make(map[string]map[string]change) // agent, RemoteID
	set := func(host string, s *Summary, put bool) {
		if host == v.self {
			return
		}
		byID := pend[s.Agent]
		if byID == nil {
			byID = make(map[string]change)
			pend[s.Agent] = byID
		}
		c := change{host: host}
		if put {
			c.s = s
		}
		byID[RemoteID(host, s.Session)] = c
	}
	for i := range changes {
		c := &changes[i]
		switch c.Kind {
		case KeyDrain:
			if c.Delete {
				delete(v.drained, c.Host)
			} else {
				v.drained[c.Host] = true
			}
		case KeyHost:
			_, known := v.hosts[c.Host]
			switch {
			case c.Delete && known:
				delete(v.hosts, c.Host)
				for _, s := range v.sessions[c.Host] {
					set(c.Host, &s, false)
				}
			case !c.Delete:
				info := c.Info
				info.ID = c.Host
				v.hosts[c.Host] = info
				if !known {
					for _, s := range v.sessions[c.Host] {
						set(c.Host, &s, true)
					}
				}
			}
		case KeySession:
			byHost := v.sessions[c.Host]
			old, had := byHost[c.Summary.Session]
			if had && (c.Delete || old.Agent != c.Summary.Agent) {
				set(c.Host, &old, false)
			}
			if c.Delete {
				delete(byHost, c.Summary.Session)
				if len(byHost) == 0 {
					delete(v.sessions, c.Host)
				}
				continue
			}
			if byHost == nil {
				byHost = make(map[string]Summary)
				v.sessions[c.Host] = byHost
			}
			byHost[c.Summary.Session] = c.Summary
			if _, member := v.hosts[c.Host]; member {
				set(c.Host, &c.Summary, true)
			}
		}
	}
	for agent, byID := range pend {
		a := v.agents[agent]
		if a == nil {
			ix, err := matcher.NewIndex(v.cfgFor(agent))
			if err != nil {
				// cfgFor's configurations are validated with the host's
				// config; fall back rather than lose the sessions.
				ix, _ = matcher.NewIndex(matcher.DefaultConfig())
			}
			a = &agentIndex{ix: ix}
			v.agents[agent] = a
		}
		puts := make([]matcher.Candidate, 0, len(byID))
		var removes []string
		a.mu.Lock()
		for id, c := range byID {
			if c.s == nil {
				a.ix.Remove(id)
				removes = append(removes, id)
			} else {
				puts = append(puts, c.s.Candidate(c.host))
			}
		}
		a.ix.PutAll(puts)
		a.mu.Unlock()
		if v.sink != nil {
			v.sink(Update{Agent: agent, Puts: puts, Removes: removes})
		}
	}
	v.rev = max(v.rev, rev)
	close(v.changed)
	v.changed = make(chan struct{})
}

// Revision is the etcd revision the view reflects.
func (v *View) Revision() int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.rev
}

// Changed returns a channel closed at the view's next change.
func (v *View) Changed() <-chan struct{} {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.changed
}

// Members returns the members, this host included once it registered,
// by ID, as their records say: Sessions counts the summaries each
// published, Self marks this host.
func (v *View) Members() []hearth.Member {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.membersLocked()
}

// Last returns the members as they were before the view was last reset
// (a lost lease empties it): the cluster as this host last saw it, which
// a host out of the cluster lists, saying that it may be stale.
func (v *View) Last() []hearth.Member {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.last)
}

func (v *View) membersLocked() []hearth.Member {
	out := make([]hearth.Member, 0, len(v.hosts))
	for _, h := range v.hosts {
		h.Sessions, h.Self = len(v.sessions[h.ID]), h.ID == v.self
		h.Draining = v.drainingLocked(h)
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b hearth.Member) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Member returns member id's record.
func (v *View) Member(id string) (hearth.Member, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	h, ok := v.hosts[id]
	h.Draining = v.drainingLocked(h)
	return h, ok
}

// Drained says whether host id's drain key is set (hearth hosts drain):
// what the host itself reads to know it is drained.
func (v *View) Drained(id string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.drained[id]
}

// Draining returns the members that take no new work, by ID: drained
// for maintenance, or saying in their record that they drain (shutting
// down).
func (v *View) Draining() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	for id, h := range v.hosts {
		if v.drainingLocked(h) != "" {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// drainingLocked is why member h takes no new work: what its record
// says, or maintenance when its drain key is set and its record does
// not say so yet.
func (v *View) drainingLocked(h hearth.Member) string {
	if h.Draining == "" && v.drained[h.ID] {
		return hearth.DrainMaintenance
	}
	return h.Draining
}

// Sessions returns the summaries host published, by session ID.
func (v *View) Sessions(host string) []Summary {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]Summary, 0, len(v.sessions[host]))
	for _, s := range v.sessions[host] {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Summary) int { return cmp.Compare(a.Session, b.Session) })
	return out
}

// Remote returns how many remote sessions of agent are placement
// candidates.
func (v *View) Remote(agent string) int {
	v.mu.Lock()
	a := v.agents[agent]
	v.mu.Unlock()
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ix.Len()
}

// Decide decides the task for agent over the other hosts' sessions, as
// [matcher.Index.Decide] does, leaving out the sessions of excludeHosts
// and the candidates named in exclude (RemoteIDs). Candidates are named
// by [RemoteID].
func (v *View) Decide(agent string, h matcher.Hints, now time.Time, excludeHosts []string, exclude ...string) matcher.Decision {
	v.mu.Lock()
	a := v.agents[agent]
	if a != nil {
		for _, host := range excludeHosts {
			for id, s := range v.sessions[host] {
				if s.Agent == agent {
					exclude = append(exclude, RemoteID(host, id))
				}
			}
		}
	}
	v.mu.Unlock()
	if a == nil {
		return matcher.Scan(v.cfgFor(agent), nil, h, now)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ix.Decide(h, now, exclude...)
}

// SpawnHost chooses the member that spawns a new session of agent when
// placement decided to spawn: among the members that run agent (not as
// an external agent), are not draining and are not in exclude, the first by: room for
// another session (live below max_sessions), then fewest running tasks of
// the agent, then fewest live sessions of it, then this host (no forward), then ID. This host is a
// member like the others, as of its last published record. ok is false
// when no member runs the agent.
func (v *View) SpawnHost(agent string, exclude ...string) (hearth.Member, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	var (
		best  hearth.Member
		bestA hearth.AgentLoad
		found bool
	)
	for id, h := range v.hosts {
		a, ok := h.Agent(agent)
		if !ok || a.External || slices.Contains(exclude, id) || v.drainingLocked(h) != "" {
			continue
		}
		if !found || v.spawnsBefore(id, a, best.ID, bestA) {
			best, bestA, found = h, a, true
		}
	}
	return best, found
}

func (v *View) spawnsBefore(id string, a hearth.AgentLoad, bid string, b hearth.AgentLoad) bool {
	if ra, rb := a.Live < a.MaxSessions, b.Live < b.MaxSessions; ra != rb {
		return ra
	}
	if a.Load != b.Load {
		return a.Load < b.Load
	}
	if a.Live != b.Live {
		return a.Live < b.Live
	}
	// Between equals this host spawns: no forward.
	if id == v.self || bid == v.self {
		return id == v.self
	}
	return id < bid
}
