package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/host/pool"
	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/matcher"
	"github.com/hearth-dev/hearth/sdk"
)

// Cluster mode (the config's cluster block; docs/cluster.md). The engine
// is the cluster node's Source (Host, Session, Sessions: what it
// publishes), tells the node what changed (ToolUse and Append in
// events.go), keeps the other hosts' sessions in its pools' indexes from
// the node's view (so that one index per agent decides over every host's
// sessions), and forwards tasks placed on other hosts through Peers,
// running cluster.Forward's steps.

// Membership is what the engine needs of its cluster membership;
// host/cluster/etcd's Node implements it.
type Membership interface {
	View() *cluster.View
	// Changed marks a session's summary as changed; HostChanged, the
	// host's record.
	Changed(session string)
	HostChanged()
	// Fence ends when the host's lease is lost: a task forwarded here
	// runs under it.
	Fence() context.Context
}

// Peers reaches the other hosts' APIs; host/api's peer client
// implements it over mutually authenticated gRPC.
type Peers interface {
	// Forward runs t on member m (on session, or a new session when
	// session is empty) under idempotency key key and returns its
	// result. Its error wraps cluster.ErrRefused when m did not start
	// the task, cluster.ErrUnreachable when the request never reached
	// m; any other error leaves the outcome unknown.
	Forward(ctx context.Context, m cluster.HostInfo, session, key string, t hearth.Task) (Result, error)
	// Status asks m what became of key; the Result is m's for
	// cluster.TaskDone.
	Status(ctx context.Context, m cluster.HostInfo, key string) (cluster.TaskStatus, Result, error)
	// ListRuns lists the runs m owns.
	ListRuns(ctx context.Context, m cluster.HostInfo) ([]hearth.RunInfo, error)
}

// Result is a task's result as a host returns it: its outcome, or the
// error it failed with there.
type Result struct {
	Outcome *hearth.Outcome
	Err     error
}

// ClusterInfo is what the host publishes about itself besides its
// sessions; the rest of its record is computed.
type ClusterInfo struct {
	// ID is the host's cluster ID; Addr its API address as others dial
	// it (the cluster block's advertise).
	ID, Addr string
	// ConfigHash is a digest of the host's configuration; Version the
	// hearth release.
	ConfigHash, Version string
}

// keptResults bounds the idempotency keys of forwarded tasks a host
// keeps the results of: a forward is retried within a task's deadline,
// so an hour is ample. The same bounds hold for their records in the
// store (forwards.go), across restarts.
const (
	keptResults   = 10000
	keptResultAge = time.Hour
)

// clusterState is the engine's cluster wiring; nil fields until
// ClusterView and JoinCluster set them.
type clusterState struct {
	info     ClusterInfo
	hostname string
	view     *cluster.View
	joined   atomic.Pointer[joined]
	started  time.Time
	runDir   *cluster.RunDirectory[hearth.RunInfo]

	mu       sync.Mutex
	accepted map[string]*acceptedTask
	// finished are the keys of accepted tasks in the order they
	// finished, oldest first: what pruning drops first.
	finished []string
	// loaded says the keys kept in the store were read (JoinCluster).
	loaded bool
	// memoryOnly keeps accepted keys in memory only, as before they
	// were stored: for the benchmark that measures what storing costs.
	memoryOnly bool
}

// joined is what JoinCluster set: read on every tool use, so swapped
// whole.
type joined struct {
	node  Membership
	peers Peers
}

func (cs *clusterState) node() Membership {
	if j := cs.joined.Load(); j != nil {
		return j.node
	}
	return nil
}

func (cs *clusterState) peers() Peers {
	if j := cs.joined.Load(); j != nil {
		return j.peers
	}
	return nil
}

// acceptedTask is a task forwarded here, by its idempotency key.
type acceptedTask struct {
	done chan struct{}
	res  Result
	// err, when set, is the answer instead of res: a refusal (the
	// acceptance could not be stored; the key is forgotten), or the
	// task was interrupted by a restart (cluster.ErrInterrupted).
	err      error
	finished time.Time
}

func (e *Engine) cl() *clusterState { return e.clusterP.Load() }

// ClusterView prepares the host for cluster mode: it returns the view
// its node is to keep current (cluster.NewView with this host's matcher
// configuration per agent), with the view's changes to other hosts'
// sessions flowing into the pools' indexes. Call it before starting the
// node, then JoinCluster.
func (e *Engine) ClusterView(info ClusterInfo) *cluster.View {
	v := cluster.NewView(info.ID, e.matcherConfig)
	name, _ := os.Hostname()
	cs := &clusterState{info: info, hostname: name, view: v, started: e.now(), accepted: make(map[string]*acceptedTask)}
	e.clusterP.Store(cs)
	v.SetSink(e.applyRemote)
	return v
}

// JoinCluster starts placing across hosts: node is this host's
// membership (started over ClusterView's view), peers reaches the other
// hosts.
func (e *Engine) JoinCluster(node Membership, peers Peers) error {
	cs := e.cl()
	if cs == nil {
		return errors.New("engine: JoinCluster before ClusterView; the node's view must be the host's")
	}
	cs.mu.Lock()
	if cs.runDir == nil {
		cs.runDir = cluster.NewRunDirectory[hearth.RunInfo](runLister{e}, 5*time.Second, e.now)
	}
	cs.mu.Unlock()
	if err := e.loadForwards(cs); err != nil {
		return err
	}
	cs.joined.Store(&joined{node: node, peers: peers})
	return nil
}

// SetClusterConfigHash updates the config hash the host publishes, after
// a reload.
func (e *Engine) SetClusterConfigHash(hash string) {
	cs := e.cl()
	if cs == nil {
		return
	}
	cs.mu.Lock()
	cs.info.ConfigHash = hash
	cs.mu.Unlock()
	e.changed("", true)
}

// Clustered reports whether the host places across a cluster.
func (e *Engine) Clustered() bool {
	cs := e.cl()
	return cs != nil && cs.node() != nil
}

// matcherConfig is the matcher configuration the host scores agent's
// sessions with: remote sessions are scored as local ones.
func (e *Engine) matcherConfig(agent string) matcher.Config {
	cfg := e.config()
	if a := cfg.Agent(agent); a != nil {
		return cfg.Matcher.For(a)
	}
	return matcher.DefaultConfig()
}

// applyRemote takes one change of the view's remote sessions into the
// pools' indexes. Called with the view locked.
func (e *Engine) applyRemote(u cluster.Update) {
	if u.Reset {
		for _, p := range e.poolList() {
			p.ApplyRemote(true, nil, nil)
		}
		return
	}
	e.mu.RLock()
	p := e.pools[u.Agent]
	e.mu.RUnlock()
	if p != nil {
		p.ApplyRemote(false, u.Puts, u.Removes)
	}
}

// ClusterSource is what the host's cluster node publishes: it
// implements host/cluster/etcd's Source. Call ClusterView first.
func (e *Engine) ClusterSource() ClusterSource { return ClusterSource{e} }

// ClusterSource is the host as its cluster node's Source.
type ClusterSource struct{ h *Engine }

// Host is this host's cluster record as it is now.
func (c ClusterSource) Host() cluster.HostInfo { return c.h.clusterRecord() }

// Session is session id's summary, and false once it is no placement
// candidate here.
func (c ClusterSource) Session(id string) (cluster.Summary, bool) { return c.h.summary(id) }

// Sessions are every session this host publishes.
func (c ClusterSource) Sessions() []cluster.Summary { return c.h.summaries() }

func (e *Engine) clusterRecord() cluster.HostInfo {
	cs := e.cl()
	cs.mu.Lock()
	hash := cs.info.ConfigHash
	cs.mu.Unlock()
	hi := cluster.HostInfo{ID: cs.info.ID, Addr: cs.info.Addr, Hostname: cs.hostname, Started: cs.started,
		ConfigHash: hash, Version: cs.info.Version}
	for _, a := range e.config().Agents {
		if p, err := e.pool(a.Name); err == nil {
			hi.Agents = append(hi.Agents, p.Load())
		}
	}
	return hi
}

func (e *Engine) summary(id string) (cluster.Summary, bool) {
	for _, p := range e.poolList() {
		if s, ok := p.Summary(id); ok {
			return s, true
		}
	}
	return cluster.Summary{}, false
}

func (e *Engine) summaries() []cluster.Summary {
	var out []cluster.Summary
	for _, p := range e.poolList() {
		out = append(out, p.Summaries()...)
	}
	return out
}

// changed tells the node that a session (and the host's load) changed.
func (e *Engine) changed(session string, hostToo bool) {
	cs := e.cl()
	if cs == nil {
		return
	}
	node := cs.node()
	if node == nil {
		return
	}
	if session != "" {
		node.Changed(session)
	}
	if hostToo {
		node.HostChanged()
	}
}

// forwardable says whether tasks of pool p are placed across hosts: a
// matcher-placed agent that runs tasks. Runs' tasks are not: a run's
// state is its owner's.
func forwardable(p *pool.Pool) bool {
	c := p.Spec()
	return c.External == "" && c.Placement != pool.PlacementFresh && c.Placement != pool.PlacementRoundRobin
}

// placeAcross decides t over every host's sessions, leaving out what f
// excludes: a remote session, a spawn on another host, or here (target
// empty).
func (e *Engine) placeAcross(p *pool.Pool, t hearth.Task, f *cluster.Forward) (cluster.Target, hearth.Decision) {
	cs := e.cl()
	exclude := f.Excluded()
	for _, hid := range f.ExcludedHosts() {
		for _, s := range cs.view.Sessions(hid) {
			if s.Agent == t.Agent {
				exclude = append(exclude, cluster.RemoteID(hid, s.Session))
			}
		}
	}
	a := p.PlaceAcross(t, exclude, e.now())
	d := a.Decision
	switch {
	case a.Remote != "":
		owner, session, _ := cluster.SplitRemoteID(a.Remote)
		return cluster.Target{Host: owner, Session: session}, d
	case a.Spawn:
		m, ok := cs.view.SpawnHost(t.Agent, f.ExcludedHosts()...)
		if ok && m.ID != cs.info.ID {
			d.Host, d.Session, d.Action = m.ID, "", hearth.ActionSpawned
			d.Reason = fmt.Sprintf("would spawn on host %s, the least loaded member that runs %s (here: %s)", m.ID, t.Agent, d.Reason)
			return cluster.Target{Host: m.ID}, d
		}
	}
	return cluster.Target{}, d
}

// submitAcross places t over every host's sessions and runs it where it
// belongs: here, or forwarded to another host under its ID as
// idempotency key, with cluster.Forward's retries.
func (e *Engine) submitAcross(ctx context.Context, p *pool.Pool, t hearth.Task) (*hearth.Outcome, error) {
	cs := e.cl()
	f := cluster.NewForward(t.ID, 0)
	var (
		res Result
		dec hearth.Decision
	)
	for s := f.Start(); ; {
		switch s.Kind {
		case cluster.StepPlace:
			var target cluster.Target
			target, dec = e.placeAcross(p, t, f)
			if target.Host == "" {
				if hist := f.History(); len(hist) > 0 {
					e.logger.Info("forward gave up on other hosts; running the task here", "task", t.ID, "attempts", strings.Join(hist, "; "))
				}
				return e.execute(ctx, p, t, nil)
			}
			e.emit(hearth.Event{Kind: hearth.EventDecision, Agent: t.Agent, Task: t.ID, Session: target.Session,
				Message: "forwarded to host " + target.Host + ": " + dec.Reason, Decision: &dec})
			s = f.Placed(target)
		case cluster.StepSend:
			m, ok := cs.view.Member(s.Target.Host)
			if !ok {
				s = f.Sent(fmt.Errorf("%w: host %s left the cluster", cluster.ErrUnreachable, s.Target.Host))
				continue
			}
			r, err := cs.peers().Forward(ctx, m, s.Target.Session, t.ID, t)
			if err == nil {
				res = r
			}
			e.noteInterrupted(t, s.Target.Host, err)
			s = f.Sent(err)
		case cluster.StepAsk:
			m, ok := cs.view.Member(s.Target.Host)
			if !ok {
				s = f.Asked(cluster.TaskUnknown, fmt.Errorf("host %s is no member", s.Target.Host))
				continue
			}
			st, r, err := cs.peers().Status(ctx, m, t.ID)
			if err == nil && st == cluster.TaskDone {
				res = r
			}
			if st == cluster.TaskInterrupted {
				e.noteInterrupted(t, s.Target.Host, r.Err)
			}
			s = f.Asked(st, err)
		case cluster.StepWait:
			changed := cs.view.Changed()
			tm := time.NewTimer(time.Second)
			select {
			case <-ctx.Done():
			case <-changed:
			case <-tm.C:
			}
			tm.Stop()
			_, member := cs.view.Member(s.Target.Host)
			s = f.Waited(member)
		case cluster.StepDone:
			if res.Err != nil {
				return nil, res.Err
			}
			out := res.Outcome
			if out == nil {
				return nil, fmt.Errorf("task %s: host %s returned no outcome", t.ID, s.Target.Host)
			}
			// The decision that counts is the receiving host's, on its
			// own sessions; say where it was.
			out.Decision.Host = s.Target.Host
			out.Decision.Reason = fmt.Sprintf("on host %s (%s): %s", s.Target.Host, dec.Reason, out.Decision.Reason)
			return out, nil
		case cluster.StepFail:
			e.emit(hearth.Event{Kind: hearth.EventTaskFailed, Agent: t.Agent, Task: t.ID, Err: s.Err.Error(), Message: t.ID + " could not be placed on any host"})
			return nil, s.Err
		}
	}
}

// noteInterrupted says, when err says so, that the host the task was
// forwarded to stopped the task before it finished (it restarted, or
// lost its lease): the task is placed again without that host, and may
// have done part of its work there.
func (e *Engine) noteInterrupted(t hearth.Task, target string, err error) {
	if errors.Is(err, cluster.ErrInterrupted) {
		e.logger.Warn("a host stopped a forwarded task before it finished; placing the task again without it", "task", t.ID, "host", target, "error", err)
	}
}

// placeAcrossDecision is Place in cluster mode.
func (e *Engine) placeAcrossDecision(p *pool.Pool, agent string, hints sdk.Hints) hearth.Decision {
	_, d := e.placeAcross(p, hearth.Task{Agent: agent, Hints: hints}, cluster.NewForward("", 0))
	return d
}

// RunForwarded runs a task another host placed on this one, under its
// idempotency key: a key accepted before is not run again (the call
// waits for, or returns, its kept result). session is the session the
// other host chose, empty for a new one; this host places the task over
// its own sessions, with its own guards. The task runs under the
// cluster fence (it stops if this host loses its lease), not under ctx:
// a caller that lost its connection finds it by its key. Errors
// wrapping cluster.ErrRefused mean the task did not start here. Keys and
// results are kept in the store too (forwards.go), durably before the
// task starts and before its result is returned, so that the promise
// holds across a restart: a key whose task a restart interrupted is
// answered with an error wrapping cluster.ErrInterrupted, never run
// again.
func (e *Engine) RunForwarded(ctx context.Context, from, key, session string, t hearth.Task) (Result, error) {
	cs := e.cl()
	if cs == nil || cs.node() == nil {
		return Result{}, fmt.Errorf("%w: host is not in a cluster (no cluster block)", cluster.ErrRefused)
	}
	if key == "" {
		return Result{}, fmt.Errorf("%w: a forwarded task needs an idempotency key", cluster.ErrRefused)
	}
	cs.mu.Lock()
	a := cs.accepted[key]
	if a == nil {
		p, err := e.pool(t.Agent)
		if err == nil {
			err = p.Runnable()
		}
		if err != nil {
			cs.mu.Unlock()
			return Result{}, fmt.Errorf("%w: %v", cluster.ErrRefused, err)
		}
		fence := cs.node().Fence()
		if fence.Err() != nil {
			cs.mu.Unlock()
			return Result{}, fmt.Errorf("%w: host %s is not registered in the cluster now (its lease is lost)", cluster.ErrRefused, cs.info.ID)
		}
		done, err := e.enter()
		if err != nil {
			cs.mu.Unlock()
			return Result{}, fmt.Errorf("%w: %v", cluster.ErrRefused, err)
		}
		a = &acceptedTask{done: make(chan struct{})}
		cs.accepted[key] = a
		drop := e.pruneAcceptedLocked(cs)
		rec := store.ForwardRecord{Key: key, From: from, Agent: t.Agent, Accepted: e.now()}
		t.ID = key
		// The acceptance is durable before the task starts, so that a
		// restart never forgets a key whose task may have run; written
		// outside cs.mu, so that concurrent forwards share an fsync (a
		// forward of the same key meanwhile waits on a.done).
		cs.mu.Unlock()
		if err := e.keepForward(cs, rec, drop); err != nil {
			cs.mu.Lock()
			delete(cs.accepted, key)
			a.err = fmt.Errorf("%w: host %s cannot store that it accepted task %s: %v", cluster.ErrRefused, cs.info.ID, key, err)
			cs.mu.Unlock()
			close(a.done)
			done()
			return Result{}, a.err
		}
		go func() {
			defer done()
			var r Result
			if err := e.admit(t, guard.Run{}); err != nil {
				r.Err = err
			} else {
				e.logger.Debug("running a forwarded task", "task", key, "from", from, "session", session)
				r.Outcome, r.Err = e.execute(fence, p, t, nil)
			}
			now := e.now()
			var stopped error
			if r.Err != nil {
				stopped = e.stoppedForward(cs, fence, rec, r.Err)
			}
			if stopped == nil {
				e.keepResult(cs, rec, r, now)
			}
			cs.mu.Lock()
			if stopped != nil {
				a.err = stopped
			} else {
				a.res = r
			}
			a.finished = now
			cs.finished = append(cs.finished, key)
			cs.mu.Unlock()
			close(a.done)
		}()
	} else {
		cs.mu.Unlock()
	}
	select {
	case <-a.done:
		return a.res, a.err
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
}

// pruneAcceptedLocked drops kept results older than keptResultAge, and
// the oldest beyond keptResults, and returns their keys, for the store.
// Tasks finish in time order, so both are at the front of cs.finished.
// cs.mu must be held.
func (e *Engine) pruneAcceptedLocked(cs *clusterState) []string {
	now := e.now()
	n := 0
	for _, k := range cs.finished {
		if now.Sub(cs.accepted[k].finished) <= keptResultAge && len(cs.accepted) <= keptResults {
			break
		}
		delete(cs.accepted, k)
		n++
	}
	dropped := slices.Clone(cs.finished[:n])
	cs.finished = slices.Delete(cs.finished, 0, n)
	return dropped
}

// ForwardedStatus says what this host knows of a forwarded task's key.
func (e *Engine) ForwardedStatus(key string) (cluster.TaskStatus, Result) {
	cs := e.cl()
	if cs == nil {
		return cluster.TaskUnknown, Result{}
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	a := cs.accepted[key]
	switch {
	case a == nil:
		return cluster.TaskUnknown, Result{}
	case errors.Is(a.err, cluster.ErrInterrupted):
		return cluster.TaskInterrupted, Result{Err: a.err}
	case a.finished.IsZero():
		return cluster.TaskRunning, Result{}
	}
	return cluster.TaskDone, a.res
}

// Member is one host of a cluster listing.
type Member struct {
	cluster.HostInfo
	// Sessions counts the sessions it publishes.
	Sessions int
	Self     bool
}

// Members lists the cluster's members as this host sees them, itself
// included; ok is false without a cluster block.
func (e *Engine) Members() (self string, members []Member, ok bool) {
	cs := e.cl()
	if cs == nil || cs.node() == nil {
		return "", nil, false
	}
	seen := false
	for _, m := range cs.view.Members() {
		mm := Member{HostInfo: m, Sessions: len(cs.view.Sessions(m.ID)), Self: m.ID == cs.info.ID}
		if mm.Self {
			// Its own record as it is now, not as last published.
			mm.HostInfo, mm.Sessions, seen = e.clusterRecord(), len(e.summaries()), true
		}
		members = append(members, mm)
	}
	if !seen {
		// Not registered now (etcd unreachable): list itself anyway.
		members = append(members, Member{HostInfo: e.clusterRecord(), Sessions: len(e.summaries()), Self: true})
		slices.SortFunc(members, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	}
	return cs.info.ID, members, true
}

// ClusterRuns lists the runs of every member, with their owners; a
// member that does not answer is listed as unreachable, one that left as
// gone, each with the runs this host last saw it list.
func (e *Engine) ClusterRuns(ctx context.Context) (self string, runs []cluster.HostRuns[hearth.RunInfo], err error) {
	cs := e.cl()
	if cs == nil || cs.node() == nil {
		return "", nil, errors.New("this host is not in a cluster: add a cluster block to its config")
	}
	members := cs.view.Members()
	if !slices.ContainsFunc(members, func(m cluster.HostInfo) bool { return m.ID == cs.info.ID }) {
		members = append(members, e.clusterRecord())
	}
	cs.mu.Lock()
	dir := cs.runDir
	cs.mu.Unlock()
	return cs.info.ID, dir.List(ctx, members), nil
}

// runLister lists a member's runs: this host's from its store, the
// others' through their APIs.
type runLister struct{ h *Engine }

func (l runLister) ListRuns(ctx context.Context, m cluster.HostInfo) ([]hearth.RunInfo, error) {
	cs := l.h.cl()
	if m.ID == cs.info.ID {
		return l.h.Runs(ctx)
	}
	return cs.peers().ListRuns(ctx, m)
}
