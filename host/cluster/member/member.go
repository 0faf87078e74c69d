// Package member is a host's membership of its cluster, in one place:
// the shell around host/cluster's rules. A Member registers the host in
// etcd and keeps its view of the others (host/cluster/etcd), places each
// task over every host's sessions with the host's one placement policy
// and forwards it where it belongs (cluster.Forward's steps, over
// host/cluster/peer), runs what other hosts forward here once per
// idempotency key (cluster.Accepted, kept in the host's store) and
// completes each by writing its completion to etcd under the host's
// lease, which etcd refuses once the lease is lost (fencing:
// docs/cluster.md), serves
// the hosts' API (peer.Register) and lists the cluster's members and
// runs (a hearth.ClusterReader).
//
// # Lifecycle
//
// A Member is made, handed to the engine, joined and left, in that
// order:
//
//	m, err := member.New(member.Options{Cluster: *cfg.Cluster, Listen: cfg.Server.Listen, TLS: ..., DataDir: cfg.DataDir, ...})
//	e, err := engine.New(engine.Options{Config: cfg, Cluster: m}) // the engine attaches its parts (Attach)
//	srv := api.NewServer(api.Options{Engine: e, Register: m.Register})
//	l, err := srv.Listen(cfg.Server, cfg.DataDir)
//	err = m.Join(ctx) // registers in etcd: the others place here from now on
//	...
//	m.Leave() // before the engine closes: the others stop placing here at once
//
// New does no I/O but reading the hosts' certificates: a config that
// cannot work (no mutual TLS, a bad cluster block) fails there, before
// anything starts. Join comes after the listeners are open, because the
// other hosts forward tasks as soon as this one is listed. Until Join,
// and for tasks the cluster does not place across hosts (a run's tasks,
// external agents, fresh and round-robin pools), the member runs every
// task here as a host without a cluster would.
//
// The engine keeps composition only: it gives the member its pools (the
// one placement policy, host/pool) and the means to run a task here
// (cluster.Deps, the contract package cluster holds, so that the engine
// imports no package of the cluster but that one), and tells it what
// changed; everything the cluster decides is decided here and in package
// cluster.
package member

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

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/host/cluster/etcd"
	"github.com/hearth-dev/hearth/host/cluster/peer"
	"github.com/hearth-dev/hearth/matcher"
)

// Options configure a Member.
type Options struct {
	// Cluster is the config's cluster block. New applies its defaults
	// (the host ID from the machine's name and DataDir) and, when
	// Advertise is empty, advertises Listen; then validates it.
	Cluster cluster.Config
	// Listen is the host's TCP API (the server block's listen), which
	// the other hosts reach it at; TLS is how the hosts authenticate one
	// another (the server block's tls); Token, when set, the token of its
	// token_file. Cluster mode needs all but the token.
	Listen string
	TLS    *peer.TLS
	Token  string
	// DataDir is the host's data directory: with the machine's name it
	// makes the default host ID and the host's identity
	// (cluster.Identity).
	DataDir string
	// Version is the hearth release; ConfigHash a digest of what the
	// host decides with (SetConfigHash after a reload). Both are in the
	// host's record.
	Version, ConfigHash string
	Logger              hclog.Logger
	// Membership, when set, is what Join uses instead of registering
	// with etcd: for tests, which then feed the view (View) as etcd's
	// watch would.
	Membership Membership
	// Tracer makes the forward's spans (trace.go): the host's tracing
	// (internal/telemetry); nil for none.
	Tracer trace.TracerProvider
	// ProbeEvery is how often the host probes the other members' API to
	// tell the unhealthy ones (health.go): DefaultProbeEvery when zero,
	// except with Membership set, where it probes only when set (a
	// test's hosts without daemons have no API to probe).
	ProbeEvery time.Duration
}

// Membership is a host's registration in the cluster: host/cluster/etcd's
// Node.
type Membership interface {
	// Changed marks a session's summary as changed; HostChanged, the
	// host's record. They go out with the next batch.
	Changed(session string)
	HostChanged()
	// PublishNow sends what changed now rather than with the next
	// batch, as often as the membership's rate limit allows, and
	// returns once it is sent.
	PublishNow()
	// Fence ends when the host's lease is lost: a task forwarded here
	// runs under it. It carries the lease (cluster.Held).
	Fence() context.Context
	// Complete writes that a task forwarded here completed, with its
	// result, under the lease fence was made under: refused with an
	// error wrapping cluster.ErrFenced once that lease is not held;
	// any other error leaves the write unknown, and calling again says.
	Complete(ctx, fence context.Context, c cluster.Completion) error
	// Completion reads whether the forwarded task key completed, on any
	// host.
	Completion(ctx context.Context, key string) (cluster.Completion, bool, error)
	// Close leaves the cluster.
	Close() error
}

// Member is a host's membership of its cluster. Its methods are safe
// for concurrent use once the engine attached it.
type Member struct {
	cfg      cluster.Config
	identity string
	hostname string
	version  string
	log      hclog.Logger
	tracer   trace.Tracer
	view     *cluster.View
	peers    *peer.Client
	static   Membership

	// d, started and runs are set once, by Attach, before any other
	// use.
	d        cluster.Deps
	attached atomic.Bool
	// registered says the peer service is served (Register).
	registered atomic.Bool
	started    time.Time
	runs       *cluster.RunDirectory

	// node is set by Join: nil until then.
	node atomic.Pointer[joined]

	mu         sync.Mutex
	configHash string
	keys       *cluster.Accepted
	// flights are the accepted keys whose tasks have not finished: what
	// a second forward of the key waits on.
	flights map[string]*flight
	// sending are the forwards this host sends now (inflight.go).
	sending sending
	// loaded says the keys kept in the store were read (Join).
	loaded bool
	// stopping says the host is shutting down: it drains.
	stopping atomic.Bool
	// health is what the probes found of the other hosts; probeEvery
	// how often they run (0: never); stopProbes ends them (Join starts
	// them) and waits for them to return.
	health     health
	stats      stats
	probeEvery time.Duration
	stopProbes func()
	// memoryOnly keeps accepted keys in memory only, as before they
	// were stored: for the benchmark that measures what storing costs.
	memoryOnly bool
}

// joined is the membership Join started.
type joined struct{ node Membership }

// The member's use of its parts.
var (
	_ peer.Handler         = (*Member)(nil)
	_ hearth.ClusterReader = (*Member)(nil)
	_ etcd.Source          = source{}
	_ Membership           = (*etcd.Node)(nil)
)

// The package's sentinel errors.
var (
	// ErrNoTLS: cluster mode needs the hosts' TCP API with mutual TLS.
	ErrNoTLS = errors.New("cluster mode needs the hosts' API over mutual TLS")
)

// New makes the member of the cluster o.Cluster names, for the host on
// o.DataDir. It validates the cluster block and reads the hosts'
// certificates; it starts nothing (Join does).
func New(o Options) (*Member, error) {
	hostname, _ := os.Hostname()
	cc := o.Cluster.WithDefaults(hostname, o.DataDir)
	if cc.Advertise == "" {
		// The TCP API's address, unless it is a wildcard (Validate says
		// so).
		cc.Advertise = o.Listen
	}
	if err := cc.Validate(); err != nil {
		return nil, err
	}
	if o.Listen == "" || o.TLS == nil || o.TLS.CAFile == "" {
		return nil, fmt.Errorf("%w: set server { listen = \"<addr:port>\"  tls { cert_file, key_file, client_ca_file } }, with a certificate for both server and client use signed by the CA every host trusts (see the README's cluster section)", ErrNoTLS)
	}
	peers, err := peer.NewClient(cc.HostID, *o.TLS, o.Token, cc.DialTimeout)
	if err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	m := &Member{
		cfg: cc, identity: cluster.Identity(hostname, o.DataDir), hostname: hostname, version: o.Version,
		log: o.Logger, tracer: tracer(o.Tracer), peers: peers, static: o.Membership, configHash: o.ConfigHash,
		keys: cluster.NewAccepted(0, 0), flights: make(map[string]*flight),
	}
	m.probeEvery = o.ProbeEvery
	if m.probeEvery == 0 && o.Membership == nil {
		m.probeEvery = DefaultProbeEvery
	}
	m.view = cluster.NewView(cc.HostID, m.matcherConfig)
	return m, nil
}

// Attach hands the member the host's parts; engine.New calls it, once.
func (m *Member) Attach(d cluster.Deps) error {
	var missing []string
	for name, ok := range map[string]bool{
		"Pools": d.Pools != nil, "Pool": d.Pool != nil, "MatcherConfig": d.MatcherConfig != nil, "Runnable": d.Runnable != nil,
		"Enter": d.Enter != nil, "Admit": d.Admit != nil, "Execute": d.Execute != nil, "Emit": d.Emit != nil,
		"Runs": d.Runs != nil, "Run": d.Run != nil, "Keys": d.Keys != nil, "Closing": d.Closing != nil, "Now": d.Now != nil,
	} {
		if !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("cluster member %s: Deps lack %s", m.cfg.HostID, strings.Join(missing, ", "))
	}
	if m.attached.Load() {
		return fmt.Errorf("cluster member %s is attached to an engine already; make one member per engine", m.cfg.HostID)
	}
	m.d, m.started = d, d.Now()
	m.runs = cluster.NewRunDirectory(runLister{m}, 5*time.Second, d.Now)
	// Set once the fields above are: what reads them checks it first.
	m.attached.Store(true)
	// The other hosts' sessions flow into the pools' indexes, so that one
	// index per agent decides over every host's sessions.
	m.view.SetSink(m.applyRemote)
	return nil
}

// Register serves the hosts' API (peer.proto) on srv, answered by this
// member: what the daemon's listeners carry beside its own API
// (api.Options.Register).
func (m *Member) Register(srv grpc.ServiceRegistrar) {
	peer.Register(srv, m)
	m.registered.Store(true)
}

// Join makes the host a member: it reads the idempotency keys kept in
// the store, registers the host in etcd and publishes its sessions,
// lists the cluster into the view, and from then on places across the
// hosts. Call it once the daemon serves the peer service (Register) on
// open listeners: the other hosts forward tasks as soon as this one is
// listed. When etcd does not answer within twice the dial timeout, Join
// returns with the host out of the cluster (Err says why): it serves
// locally, as after a lost lease, and joins as soon as etcd answers. It
// fails when another host holds this host's ID (cluster.ErrHostIDInUse).
func (m *Member) Join(ctx context.Context) error {
	if !m.attached.Load() {
		return fmt.Errorf("cluster member %s: Join before an engine took it; pass it as engine.Options.Cluster first", m.cfg.HostID)
	}
	if m.node.Load() != nil {
		return fmt.Errorf("cluster member %s joined already", m.cfg.HostID)
	}
	if m.static == nil && !m.registered.Load() {
		// Listed in etcd, the host would be sent tasks it cannot take.
		return fmt.Errorf("cluster member %s: Join before the daemon serves its peer service; pass Member.Register as api.Options.Register and open the listeners first", m.cfg.HostID)
	}
	if err := m.loadKeys(); err != nil {
		return err
	}
	node := m.static
	if node == nil {
		sctx, cancel := context.WithTimeout(ctx, 2*m.cfg.DialTimeout)
		defer cancel()
		n, err := etcd.Start(sctx, etcd.Options{Config: m.cfg, Identity: m.identity, Source: source{m}, View: m.view, Logger: m.log})
		if err != nil {
			return err
		}
		node = n
	}
	m.node.Store(&joined{node: node})
	if m.probeEvery > 0 {
		pctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			m.probeLoop(pctx, m.probeEvery)
		}()
		m.stopProbes = func() { cancel(); <-done }
	}
	return nil
}

// Err says why the host is not in its cluster now (etcd does not
// answer, or refuses it), nil while it is, or before Join.
func (m *Member) Err() error {
	if n, ok := m.membership().(interface{ Err() error }); ok {
		if err := n.Err(); err != nil {
			return fmt.Errorf("host %s is out of its cluster, serving locally until etcd at %v answers: %w", m.cfg.HostID, m.cfg.Endpoints, err)
		}
	}
	return nil
}

// draining says why this host takes no new work from the others, empty
// while it does.
func (m *Member) draining() string {
	switch {
	case m.stopping.Load():
		return hearth.DrainShutdown
	case m.view.Drained(m.cfg.HostID):
		return hearth.DrainMaintenance
	}
	return ""
}

// Drain begins the host's shutdown: it publishes at once that it drains
// (the others place nothing new here and spawn nothing here) and refuses
// forwards it has not accepted yet (they go elsewhere), while the tasks
// it runs finish. Leave, after the engine closed, ends its membership.
func (m *Member) Drain(ctx context.Context) {
	m.stopping.Store(true)
	m.Changed("", true)
	if n, ok := m.membership().(interface{ Flush(context.Context) error }); ok {
		if err := n.Flush(ctx); err != nil {
			m.log.Warn("publishing that the host drains; the others learn it with the next batch", "error", err)
		}
	}
}

// DrainHost marks member host drained for maintenance (drain true), or
// takes the mark away: a mark in etcd that outlives the host's restarts,
// which every host reads. The others place nothing new on a drained host
// and it refuses forwards; what it runs finishes. It needs etcd.
func (m *Member) DrainHost(ctx context.Context, host string, drain bool) (hearth.Member, error) {
	n, ok := m.membership().(interface {
		SetDrain(ctx context.Context, id string, drain bool) error
	})
	if !ok {
		return hearth.Member{}, fmt.Errorf("host %s has not joined its cluster: draining needs the cluster's etcd", m.cfg.HostID)
	}
	if err := n.SetDrain(ctx, host, drain); err != nil {
		return hearth.Member{}, err
	}
	mm, ok := m.view.Member(host)
	if !ok {
		mm = hearth.Member{ID: host}
	}
	mm.Draining = ""
	if drain {
		mm.Draining = hearth.DrainMaintenance
	}
	return mm, nil
}

// Leave leaves the cluster at once (the lease is revoked: the others
// stop placing here) and closes the connections to the other hosts.
// Call it before the engine closes.
func (m *Member) Leave() error {
	var err error
	if m.stopProbes != nil {
		m.stopProbes()
	}
	if j := m.node.Load(); j != nil {
		err = j.node.Close()
	}
	m.peers.Close()
	return err
}

// Source is what the member publishes, and Join registers with etcd:
// this host's record and its sessions' summaries, read from its pools.
// Another membership (a test's) publishes it in its own way.
func (m *Member) Source() etcd.Source { return source{m} }

// Config is the cluster block in force: defaults applied, validated.
func (m *Member) Config() cluster.Config { return m.cfg }

// View is the member's picture of the cluster, which its membership
// keeps current.
func (m *Member) View() *cluster.View { return m.view }

// SetConfigHash updates the config hash the host publishes, after a
// reload.
func (m *Member) SetConfigHash(hash string) {
	m.mu.Lock()
	m.configHash = hash
	m.mu.Unlock()
	m.Changed("", true)
}

// membership is the membership Join started, nil before.
func (m *Member) membership() Membership {
	if j := m.node.Load(); j != nil {
		return j.node
	}
	return nil
}

// Changed tells the membership that a session's summary (and, with
// hostToo, the host's load) may have changed: what the engine says on
// every event of a session and every tool use.
func (m *Member) Changed(session string, hostToo bool) {
	node := m.membership()
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

// Learned tells the membership that a placement here taught session
// something its published summary does not say (the task's hints, which
// the pool recorded against it): the summary goes out now, not with the
// next batch, so that the next decision on any host sees the session as
// knowing them. Tasks that come faster than the publish interval would
// otherwise be placed by hosts that cannot see where the previous ones
// went (issue 26: 0.60 precision at the default interval).
func (m *Member) Learned(session string) {
	node := m.membership()
	if node == nil {
		return
	}
	node.Changed(session)
	node.HostChanged()
	node.PublishNow()
}

// Reloaded is told that the engine reloaded its config; added says it
// made new pools, which learn the other hosts' sessions of their agents
// (the view sends them all again).
func (m *Member) Reloaded(added bool) {
	if added && m.attached.Load() {
		m.view.SetSink(m.applyRemote)
	}
	// Agents, and the config's hash in the listing, may differ.
	m.Changed("", true)
}

// matcherConfig is the view's configuration of agent's matcher: this
// host's, so that remote sessions are scored as local ones are.
func (m *Member) matcherConfig(agent string) matcher.Config {
	if !m.attached.Load() {
		return matcher.DefaultConfig()
	}
	return m.d.MatcherConfig(agent)
}

// applyRemote takes one change of the view's remote sessions into the
// pools' indexes. Called with the view locked.
func (m *Member) applyRemote(u cluster.Update) {
	if u.Reset {
		for _, p := range m.d.Pools() {
			p.ApplyRemote(true, nil, nil)
		}
		return
	}
	if p, ok := m.d.Pool(u.Agent); ok {
		p.ApplyRemote(false, u.Puts, u.Removes)
	}
}

// source is the member as its etcd node's Source: what the host
// publishes.
type source struct{ m *Member }

// Host is this host as a member now.
func (s source) Host() hearth.Member { return s.m.record() }

// Session is session id's summary, and false once it is no placement
// candidate here.
func (s source) Session(id string) (cluster.Summary, bool) {
	for _, p := range s.m.d.Pools() {
		if sum, ok := p.Summary(id); ok {
			return sum, true
		}
	}
	return cluster.Summary{}, false
}

// Sessions are every session this host publishes.
func (s source) Sessions() []cluster.Summary { return s.m.summaries() }

func (m *Member) summaries() []cluster.Summary {
	var out []cluster.Summary
	for _, p := range m.d.Pools() {
		out = append(out, p.Summaries()...)
	}
	return out
}

// record is this host as a member now: the record it publishes.
func (m *Member) record() hearth.Member {
	m.mu.Lock()
	hash := m.configHash
	m.mu.Unlock()
	// What the settings say is host/cluster's (a setting the others see
	// needs no line here); what the host knows running is added.
	rec := m.cfg.Member()
	rec.Hostname, rec.Started, rec.ConfigHash, rec.Version, rec.Draining = m.hostname, m.started, hash, m.version, m.draining()
	for _, p := range m.d.Pools() {
		rec.Agents = append(rec.Agents, p.Load())
	}
	return rec
}

// Members lists the cluster's members as this host sees them, itself
// included; Clustered is false until the host joined.
func (m *Member) Members(context.Context) (hearth.Members, error) {
	if m.membership() == nil {
		return hearth.Members{}, nil
	}
	own := func() hearth.Member {
		// Its own record as it is now, not as last published.
		rec := m.record()
		rec.Sessions, rec.Self = len(m.summaries()), true
		return rec
	}
	var members []hearth.Member
	seen := false
	listed := m.view.Members()
	etcdErr := m.Err()
	if etcdErr != nil && len(listed) == 0 {
		// Out of the cluster the view is empty (placement is local):
		// list the cluster as it was last seen, which the listing says
		// may be stale, rather than a cluster of one.
		listed = m.view.Last()
	}
	for _, mm := range listed {
		if mm.ID == m.cfg.HostID {
			mm, seen = own(), true
		} else {
			mm.Unhealthy = m.health.unhealthy(mm.ID)
		}
		members = append(members, mm)
	}
	if !seen {
		// Not registered now (etcd unreachable): list itself anyway.
		members = append(members, own())
		slices.SortFunc(members, func(a, b hearth.Member) int { return strings.Compare(a.ID, b.ID) })
	}
	out := hearth.Members{Self: m.cfg.HostID, Clustered: true, Hosts: members}
	if etcdErr != nil {
		out.EtcdErr = etcdErr.Error()
	}
	return out, nil
}

// ClusterRuns lists the runs of every member, with their owners; a
// member that does not answer is listed as unreachable, one that left as
// gone, each with the runs this host last saw it list. Clustered is
// false until the host joined.
func (m *Member) ClusterRuns(ctx context.Context) (hearth.ClusterRuns, error) {
	if m.membership() == nil {
		return hearth.ClusterRuns{}, nil
	}
	members := m.view.Members()
	if !slices.ContainsFunc(members, func(mm hearth.Member) bool { return mm.ID == m.cfg.HostID }) {
		members = append(members, m.record())
	}
	return hearth.ClusterRuns{Self: m.cfg.HostID, Clustered: true, Hosts: m.runs.List(ctx, members)}, nil
}

// OwnRuns lists the runs this host owns.
func (m *Member) OwnRuns(ctx context.Context) ([]hearth.RunInfo, error) { return m.d.Runs(ctx) }

// runLister lists a member's runs: this host's from its store, the
// others' through their APIs.
type runLister struct{ m *Member }

func (l runLister) ListRuns(ctx context.Context, mm hearth.Member) ([]hearth.RunInfo, error) {
	if mm.ID == l.m.cfg.HostID {
		return l.m.d.Runs(ctx)
	}
	return l.m.peers.ListRuns(ctx, mm)
}
