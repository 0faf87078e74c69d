package etcd

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/cluster"
)

// Batch bounds of one publishing transaction. etcd refuses a transaction
// of more than --max-txn-ops operations (128 by default) or of a request
// larger than --max-request-bytes (1.5 MiB by default).
const (
	maxTxnOps   = 128
	maxTxnBytes = 1 << 20
)

// activityResolution is how far a session's published last activity may
// lag when nothing else about it changed: freshness moves by 1/1800 a
// second with a 30-minute idle timeout, so 10 s stale weighs 0.0008 in a
// total, and a session that keeps working on the files it already knows
// costs no write per interval.
const activityResolution = 10 * time.Second

// retryBackoff bounds the wait between attempts to reach etcd again.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 2 * time.Second
)

// Source is what the node publishes (host/cluster/member implements it
// over the host's pools): this host's record and its sessions'
// summaries, read at publishing time, at most once per publish interval,
// so that a tool use only marks a session changed.
type Source interface {
	// Host returns this host as a member now: address, agents and their
	// load, config hash, start time. The node sets its ID, and adds its
	// identity and incarnation to the record (cluster.HostRecord).
	Host() hearth.Member
	// Session returns session id's summary as it is now; ok is false once
	// the session is gone (its key is then deleted).
	Session(id string) (s cluster.Summary, ok bool)
	// Sessions returns every session to publish, for the first
	// registration and for each re-registration after a lost lease.
	Sessions() []cluster.Summary
}

// Options configure a Node.
type Options struct {
	// Config is the cluster block, with defaults applied and validated.
	Config cluster.Config
	// Identity tells this host's restarts from another host claiming its
	// ID: cluster.Identity(hostname, dataDir).
	Identity string
	Source   Source
	// View receives the cluster's members and sessions; its Self must be
	// Config.HostID.
	View   *cluster.View
	Logger hclog.Logger
}

// Stats counts what a node wrote to etcd.
type Stats struct {
	// Txns are the write transactions: registrations and publishing
	// batches. Each is one etcd revision.
	Txns int64
	// Puts and Deletes are the keys written and deleted in them.
	Puts, Deletes int64
	// Registrations counts the leases the node registered under: 1, plus
	// one for each lost lease it recovered from. LeaseLosses counts the
	// leases it lost (recovered from or not).
	Registrations, LeaseLosses int64
	// Listings counts the times the node read the whole cluster: at
	// start, after each registration, and when a watch failed;
	// Compactions, the watches that failed because etcd had compacted
	// the revisions they resumed from.
	Listings, Compactions int64
}

// Node is one host's membership of the cluster: it registers the host
// under a lease and keeps the lease alive, publishes its sessions'
// summaries in batches, and keeps the View current from a watch. When the
// lease is lost (etcd down or unreachable for longer than its TTL), the
// node empties the view, so that placement stays local, and registers
// again as soon as etcd answers, republishing everything.
//
// Start it with [Start]; stop it with [Node.Close], which leaves the
// cluster at once by revoking the lease.
type Node struct {
	cfg    cluster.Config
	id     string
	ident  string
	incarn string
	src    Source
	view   *cluster.View
	log    hclog.Logger
	client *clientv3.Client

	ctx    context.Context // ends with Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// pubMu serializes registering and publishing, which both write
	// under the current lease.
	pubMu    sync.Mutex
	last     map[string]published // what etcd holds for our sessions
	lastHost []byte

	// mu guards the current session and what is waiting to be published.
	mu        sync.Mutex
	sess      *lease        // nil while unregistered
	epoch     chan struct{} // closed and replaced at each registration
	dirty     map[string]struct{}
	hostDirty bool
	state     chan struct{} // closed and replaced when the lease is lost or taken
	lostSince time.Time     // when the lease was lost; zero while registered
	lastErr   error         // the last failed registration's error

	// viewMu orders the watch's updates of the view with emptying it
	// when the lease is lost; gen counts registrations and losses, so
	// that a watch started under one registration applies nothing after
	// it ended.
	viewMu sync.Mutex
	gen    uint64
	lost   bool

	// compactMu guards the revision the next compaction goes to.
	compactMu  sync.Mutex
	compactRev int64
	// complMu guards the lease completions are written under.
	complMu      sync.Mutex
	complLease   clientv3.LeaseID
	complGranted time.Time

	stats   struct{ txns, puts, deletes, regs, lists, compactions, losses atomic.Int64 }
	crashed atomic.Bool

	// nowLimit bounds the flushes PublishNow makes.
	nowLimit *rate.Limiter
}

// PublishNowBurst is how many flushes PublishNow makes at once; after
// them, one a publish interval. With the interval's own, a host writes
// at most (ceil(changed/128) + 1) transactions per publish interval,
// after a burst of PublishNowBurst (the write-rate bound in package
// cluster's documentation).
const PublishNowBurst = 16

// publishNowTimeout bounds how long PublishNow holds up its caller (a
// task about to start or just finished) when etcd is slow.
const publishNowTimeout = cluster.MinPublishInterval

// PublishNow publishes what changed now rather than at the next tick,
// and returns once it is written (or after publishNowTimeout): a
// placement taught a session something, or the session it made busy is
// free again, and the other hosts' next decisions should see it (issue
// 26: tasks that come faster than the publish interval were placed by
// hosts that could not see where the previous ones went). Past the rate
// PublishNowBurst sets, the change waits for the tick like any other.
func (n *Node) PublishNow() {
	// Out of the cluster there is no one to publish to, and the attempt
	// to register again holds pubMu for as long as etcd does not answer
	// (up to its dial timeout): waiting on it held every task that
	// started or ended on this host by seconds while etcd was down (a
	// spawn took 2-8 s instead of 0.2 s when issue 26 was walked
	// through). A loss right after this check still waits, once: the
	// lease is lost at most once per registration.
	n.mu.Lock()
	out := n.sess == nil
	n.mu.Unlock()
	if out || !n.nowLimit.Allow() {
		return
	}
	ctx, cancel := context.WithTimeout(n.ctx, publishNowTimeout)
	defer cancel()
	if err := n.Flush(ctx); err != nil && n.ctx.Err() == nil {
		n.log.Debug("publishing a placement failed; it goes out with the next batch", "error", err)
	}
}

// published is what etcd holds for one session: its value without the
// last activity, and that activity.
type published struct {
	body []byte
	at   time.Time
}

// Start connects to etcd, registers the host and publishes its sessions,
// lists the cluster into the view, and returns once all that is done, or
// with an error when ctx ends first (etcd unreachable) or another host
// holds this host's ID (cluster.ErrHostIDInUse).
func Start(ctx context.Context, o Options) (*Node, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	switch {
	case o.View == nil || o.View.Self() != o.Config.HostID:
		return nil, fmt.Errorf("cluster node %s: the view must belong to the same host (cluster.NewView(%q, ...))", o.Config.HostID, o.Config.HostID)
	case o.Source == nil:
		return nil, fmt.Errorf("cluster node %s: no Source of sessions to publish", o.Config.HostID)
	case o.Identity == "":
		// An empty identity would let any host take this one's place.
		return nil, fmt.Errorf("cluster node %s: no identity; pass cluster.Identity(hostname, dataDir)", o.Config.HostID)
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	ccfg := clientv3.Config{
		Endpoints:   o.Config.Endpoints,
		DialTimeout: o.Config.DialTimeout,
		// Detect a dead connection well within the lease TTL.
		DialKeepAliveTime:    o.Config.LeaseTTL / 3,
		DialKeepAliveTimeout: o.Config.LeaseTTL / 3,
		Logger:               zap.NewNop(),
		MaxCallSendMsgSize:   maxTxnBytes + 64<<10,
		// gRPC's default reconnection backoff grows to 2 minutes: a host
		// would rejoin that long after etcd came back. Retry at least
		// every maxBackoff instead.
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: minBackoff, Multiplier: 1.6, Jitter: 0.2, MaxDelay: maxBackoff},
			MinConnectTimeout: o.Config.DialTimeout,
		})},
	}
	if t := o.Config.TLS; t != nil {
		tc, err := transport.TLSInfo{CertFile: t.CertFile, KeyFile: t.KeyFile, TrustedCAFile: t.CAFile}.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("cluster tls: %w; check cert_file, key_file and ca_file", err)
		}
		ccfg.TLS = tc
	}
	client, err := clientv3.New(ccfg)
	if err != nil {
		return nil, fmt.Errorf("cluster: connecting to etcd at %v: %w", o.Config.Endpoints, err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	n := &Node{
		cfg:    o.Config,
		id:     o.Config.HostID,
		ident:  o.Identity,
		incarn: hex.EncodeToString(b[:]),
		src:    o.Source,
		view:   o.View,
		log:    o.Logger.Named("cluster"),
		client: client,
		last:   make(map[string]published),
		epoch:  make(chan struct{}),
		state:  make(chan struct{}),
		dirty:  make(map[string]struct{}),
		// Full at start: the first placements go out at once.
		nowLimit: rate.NewLimiter(rate.Every(o.Config.PublishInterval), PublishNowBurst),
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	if err := n.register(ctx); err != nil {
		if errors.Is(err, cluster.ErrHostIDInUse) || ctx.Err() == nil {
			// etcd answered, and said no: another host has this ID, or
			// ctx was cancelled (the host is stopping).
			n.cancel()
			client.Close()
			return nil, err
		}
		// etcd did not answer within ctx: the host serves locally, as
		// after a lost lease, and joins as soon as etcd answers.
		n.setErr(err)
		n.mu.Lock()
		n.lostSince = time.Now()
		n.mu.Unlock()
		n.log.Warn("etcd does not answer; serving locally and joining when it does", "endpoints", fmt.Sprint(o.Config.Endpoints), "error", err)
		n.wg.Add(4)
		go n.keepMembership()
		go n.publishLoop()
		go n.watchLoop(0, 0, false)
		go n.compactLoop()
		return n, nil
	}
	rev, gen, err := n.list(ctx)
	if err != nil {
		n.Close()
		return nil, fmt.Errorf("cluster: listing the cluster from etcd at %v: %w", o.Config.Endpoints, err)
	}
	n.wg.Add(4)
	go n.keepMembership()
	go n.publishLoop()
	go n.watchLoop(rev, gen, true)
	go n.compactLoop()
	return n, nil
}

// Err returns why the host is not registered now: the last attempt's
// error while etcd does not answer (or refuses it), nil while it is
// registered.
func (n *Node) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.sess != nil {
		return nil
	}
	return n.lastErr
}

func (n *Node) setErr(err error) {
	n.mu.Lock()
	n.lastErr = err
	n.mu.Unlock()
}

// View is the node's view of the cluster.
func (n *Node) View() *cluster.View { return n.view }

// ID is the host's ID.
func (n *Node) ID() string { return n.id }

// Stats returns what the node wrote so far.
func (n *Node) Stats() Stats {
	return Stats{
		Txns: n.stats.txns.Load(), Puts: n.stats.puts.Load(), Deletes: n.stats.deletes.Load(),
		Registrations: n.stats.regs.Load(), Listings: n.stats.lists.Load(), Compactions: n.stats.compactions.Load(),
		LeaseLosses: n.stats.losses.Load(),
	}
}

// Lease returns the lease the host is registered under, and false while
// it is not registered.
func (n *Node) Lease() (int64, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.sess == nil {
		return 0, false
	}
	return int64(n.sess.Lease()), true
}

// StateChanged returns a channel closed when the host next loses its
// lease or registers again; Lease tells which.
func (n *Node) StateChanged() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.state
}

// Fence returns a context that ends when the lease the host is
// registered under now is lost, or at once if it is not registered. The
// member runs each task forwarded from another host under it: once the
// lease is gone, other hosts see this one leave and may place the task
// elsewhere, so it must stop. It carries the lease (cluster.WithLease):
// cluster.Held says, at the moment work completes, whether the lease is
// still held for certain, even before the context ends.
func (n *Node) Fence() context.Context {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.sess == nil {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx
	}
	return cluster.WithLease(n.sess.Ctx(), n.sess)
}

// Changed marks session id as changed: its summary (or its deletion, if
// Source.Session no longer has it) goes out with the next batch. It
// costs a map insertion, whatever the rate of tool uses.
func (n *Node) Changed(id string) {
	n.mu.Lock()
	n.dirty[id] = struct{}{}
	n.mu.Unlock()
}

// HostChanged marks this host's record (its load, agents or config hash)
// as changed.
func (n *Node) HostChanged() {
	n.mu.Lock()
	n.hostDirty = true
	n.mu.Unlock()
}

// SetDrain marks host id drained for maintenance (drain true), or takes
// the mark away: a key under no lease, which every host's view reads
// (cluster.View.Draining), so that it outlives the host's restarts. It
// needs etcd to answer; by says which host wrote it.
func (n *Node) SetDrain(ctx context.Context, id string, drain bool) error {
	if err := cluster.CheckHostID(id); err != nil {
		return fmt.Errorf("draining host %q: %w", id, err)
	}
	var err error
	if drain {
		val := fmt.Sprintf(`{"v":1,"by":%q,"at":%q}`, n.id, time.Now().UTC().Format(time.RFC3339))
		_, err = n.client.Put(ctx, cluster.DrainKey(id), val)
	} else {
		_, err = n.client.Delete(ctx, cluster.DrainKey(id))
	}
	if err != nil {
		return fmt.Errorf("cluster: writing host %s's drain mark in etcd at %v: %w; try again once etcd answers", id, n.cfg.Endpoints, err)
	}
	n.stats.txns.Add(1)
	return nil
}

// Close leaves the cluster: it stops publishing and watching and revokes
// the lease, so that the other hosts drop this one and its sessions at
// once rather than after the TTL.
func (n *Node) Close() error {
	n.cancel()
	n.wg.Wait()
	var err error
	n.mu.Lock()
	sess := n.sess
	n.sess = nil
	n.mu.Unlock()
	if sess != nil && !n.crashed.Load() {
		// Session.Close revokes with a context of the TTL; n.ctx is
		// cancelled, so revoke with a fresh one.
		sess.Orphan()
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.DialTimeout)
		_, err = n.client.Revoke(ctx, sess.Lease())
		cancel()
		if err != nil {
			err = fmt.Errorf("cluster: leaving (revoking lease %x): %w; the other hosts drop this one within %s", sess.Lease(), err, n.cfg.LeaseTTL)
		}
	} else if sess != nil {
		sess.Orphan()
	}
	return errors.Join(err, n.client.Close())
}

// register grants a lease, puts the host's record under it (taking the
// place of an earlier start of this host, refusing another host's),
// publishes every session, and drops what an earlier lease left behind.
func (n *Node) register(ctx context.Context) error {
	n.pubMu.Lock()
	defer n.pubMu.Unlock()
	// Grant under ctx, which bounds the attempt; keep the lease alive
	// under n.ctx, which lasts until Close.
	sent := time.Now()
	g, err := n.client.Grant(ctx, int64(n.cfg.LeaseTTL/time.Second))
	if err != nil {
		return fmt.Errorf("cluster: registering host %s with etcd at %v: %w", n.id, n.cfg.Endpoints, err)
	}
	lease := g.ID
	ttl := time.Duration(g.TTL) * time.Second
	if time.Since(sent) > ttl/3 {
		// The Grant waited, most likely for the connection to etcd
		// (after an outage, until gRPC's reconnection backoff fires),
		// and its send time, the only moment known to precede etcd's
		// grant, may be most of the TTL ago or all of it: the lease
		// would be taken for lost at birth, and the host register once
		// more (issue 26's flakes of TestPartition and
		// TestClusterEtcdDownAndBack). A renewal sent now, on the
		// connection that answered, bounds it afresh. If it fails, the
		// Grant's bound stands.
		again := time.Now()
		if r, err := n.client.KeepAliveOnce(ctx, lease); err == nil && r.TTL > 0 {
			sent, ttl = again, time.Duration(r.TTL)*time.Second
		}
	}
	sess := keepLease(n.ctx, n.client, lease, ttl, sent)
	fail := func(err error) error {
		sess.Orphan()
		rctx, cancel := context.WithTimeout(context.Background(), n.cfg.DialTimeout)
		_, _ = n.client.Revoke(rctx, lease)
		cancel()
		return err
	}

	// Take what is to be published now; what changes from here on is
	// marked again and goes out with the next batch.
	n.mu.Lock()
	clear(n.dirty)
	n.hostDirty = false
	n.mu.Unlock()
	hostVal, err := n.hostValue()
	if err != nil {
		return fail(err)
	}
	key := cluster.HostKey(n.id)
	resp, err := n.client.Txn(ctx).
		If(clientv3.Compare(clientv3.Version(key), "=", 0)).
		Then(clientv3.OpPut(key, string(hostVal), clientv3.WithLease(lease))).
		Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		return fail(fmt.Errorf("cluster: registering host %s: %w", n.id, err))
	}
	n.stats.txns.Add(1)
	var oldLease clientv3.LeaseID
	if !resp.Succeeded {
		kv := resp.Responses[0].GetResponseRange().Kvs[0]
		prev, derr := cluster.DecodeHost(n.id, kv.Value)
		if derr != nil || prev.Identity != n.ident {
			where := "an unreadable record"
			if derr == nil {
				where = fmt.Sprintf("host %s at %s (identity %.8s, started %s)", prev.Hostname, prev.Addr, prev.Identity, prev.Started.Format(time.RFC3339))
			}
			return fail(fmt.Errorf("%w: %q is registered by %s; give this host another cluster host_id, or wait %s for a dead host's lease to expire",
				cluster.ErrHostIDInUse, n.id, where, n.cfg.LeaseTTL))
		}
		// An earlier start of this host, or this one before it lost its
		// lease: take the place, guarded against a concurrent change.
		oldLease = clientv3.LeaseID(kv.Lease)
		r, err := n.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)).
			Then(clientv3.OpPut(key, string(hostVal), clientv3.WithLease(lease))).Commit()
		if err != nil || !r.Succeeded {
			return fail(fmt.Errorf("cluster: registering host %s: its record changed while taking it over (%v); retrying", n.id, err))
		}
		n.stats.txns.Add(1)
	}
	n.stats.puts.Add(1)
	n.lastHost = hostVal

	// Publish every session, then delete the keys of sessions that are
	// gone (left by an earlier lease, or removed while unregistered).
	var ops []clientv3.Op
	var sizes []int
	current := make(map[string]published)
	for _, s := range n.src.Sessions() {
		val, pub, err := encode(s)
		if err != nil {
			n.log.Warn("session not published", "error", err)
			continue
		}
		ops = append(ops, clientv3.OpPut(cluster.SessionKey(n.id, s.Session), string(val), clientv3.WithLease(lease)))
		sizes = append(sizes, len(val))
		current[s.Session] = pub
	}
	existing, err := n.client.Get(ctx, cluster.HostSessionsPrefix(n.id), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return fail(fmt.Errorf("cluster: listing host %s's sessions: %w", n.id, err))
	}
	for _, kv := range existing.Kvs {
		if _, _, session, err := cluster.ParseKey(string(kv.Key)); err == nil {
			if _, ok := current[session]; !ok {
				ops = append(ops, clientv3.OpDelete(string(kv.Key)))
				sizes = append(sizes, len(kv.Key))
			}
		}
	}
	if _, err := n.commit(ctx, ops, sizes); err != nil {
		return fail(fmt.Errorf("cluster: publishing host %s's sessions: %w", n.id, err))
	}
	n.last = current
	if oldLease != 0 && oldLease != lease {
		// Whatever it still holds is stale: everything current is now
		// under the new lease.
		rctx, cancel := context.WithTimeout(ctx, n.cfg.DialTimeout)
		if _, err := n.client.Revoke(rctx, oldLease); err != nil {
			n.log.Debug("revoking the previous lease", "lease", fmt.Sprintf("%x", oldLease), "error", err)
		}
		cancel()
	}

	n.stats.regs.Add(1)
	n.viewMu.Lock()
	n.gen++
	n.lost = false
	n.viewMu.Unlock()
	n.mu.Lock()
	n.sess = sess
	close(n.epoch)
	n.epoch = make(chan struct{})
	close(n.state)
	n.state = make(chan struct{})
	lost := n.lostSince
	n.lostSince = time.Time{}
	n.lastErr = nil
	n.mu.Unlock()
	if !lost.IsZero() {
		n.log.Info("registered again", "lease", fmt.Sprintf("%x", lease), "unregistered_for", time.Since(lost).Round(time.Millisecond), "sessions", len(current))
	} else {
		n.log.Info("registered", "lease", fmt.Sprintf("%x", lease), "ttl", n.cfg.LeaseTTL, "sessions", len(current))
	}
	return nil
}

func (n *Node) hostValue() ([]byte, error) {
	h := cluster.HostRecord{Member: n.src.Host(), Identity: n.ident, Incarnation: n.incarn}
	h.ID = n.id
	if h.Addr == "" {
		h.Addr = n.cfg.Advertise
	}
	return cluster.EncodeHost(h)
}

// encode returns a summary's value and what the node remembers of it.
func encode(s cluster.Summary) ([]byte, published, error) {
	at := s.LastActivity.Round(0).UTC()
	s.LastActivity = time.Time{}
	body, err := cluster.EncodeSummary(s)
	if err != nil {
		return nil, published{}, err
	}
	s.LastActivity = at
	val, err := cluster.EncodeSummary(s)
	return val, published{body: body, at: at}, err
}

// commit writes ops in as few transactions as etcd's limits allow, and
// returns how many of ops were written.
func (n *Node) commit(ctx context.Context, ops []clientv3.Op, sizes []int) (int, error) {
	done := 0
	for done < len(ops) {
		end, bytes := done, 0
		for end < len(ops) && end-done < maxTxnOps && (end == done || bytes+sizes[end] <= maxTxnBytes) {
			bytes += sizes[end] + 64 // key and framing
			end++
		}
		if _, err := n.client.Txn(ctx).Then(ops[done:end]...).Commit(); err != nil {
			return done, err
		}
		n.stats.txns.Add(1)
		for _, op := range ops[done:end] {
			if op.IsDelete() {
				n.stats.deletes.Add(1)
			} else {
				n.stats.puts.Add(1)
			}
		}
		done = end
	}
	return done, nil
}

// Flush publishes what changed since the last batch now, in as few
// transactions as etcd's limits allow (one, unless more than 128 sessions
// changed or their summaries pass 1 MiB). While the host is not
// registered it does nothing: registering publishes everything.
func (n *Node) Flush(ctx context.Context) error {
	n.pubMu.Lock()
	defer n.pubMu.Unlock()
	n.mu.Lock()
	sess := n.sess
	if sess == nil || (len(n.dirty) == 0 && !n.hostDirty) {
		n.mu.Unlock()
		return nil
	}
	dirty := make([]string, 0, len(n.dirty))
	for id := range n.dirty {
		dirty = append(dirty, id)
	}
	clear(n.dirty)
	hostDirty := n.hostDirty
	n.hostDirty = false
	n.mu.Unlock()
	slices.Sort(dirty)

	lease := sess.Lease()
	// Writing under a lost lease is pointless: registering again
	// publishes everything.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(sess.Ctx(), cancel)()
	var (
		ops   []clientv3.Op
		sizes []int
		ids   []string // by op: the session, or "" for the host record
		pubs  []published
	)
	if hostDirty {
		val, err := n.hostValue()
		if err != nil {
			n.log.Warn("host record not published", "error", err)
		} else if !bytes.Equal(val, n.lastHost) {
			ops = append(ops, clientv3.OpPut(cluster.HostKey(n.id), string(val), clientv3.WithLease(lease)))
			sizes, ids, pubs = append(sizes, len(val)), append(ids, ""), append(pubs, published{body: val})
		}
	}
	for _, id := range dirty {
		prev, had := n.last[id]
		s, ok := n.src.Session(id)
		if !ok {
			if had {
				ops = append(ops, clientv3.OpDelete(cluster.SessionKey(n.id, id)))
				sizes, ids, pubs = append(sizes, len(id)), append(ids, id), append(pubs, published{})
			}
			continue
		}
		s.Session = id
		val, pub, err := encode(s)
		if err != nil {
			n.log.Warn("session not published", "error", err)
			continue
		}
		if had && bytes.Equal(pub.body, prev.body) && pub.at.Sub(prev.at).Abs() < activityResolution {
			continue
		}
		ops = append(ops, clientv3.OpPut(cluster.SessionKey(n.id, id), string(val), clientv3.WithLease(lease)))
		sizes, ids, pubs = append(sizes, len(val)), append(ids, id), append(pubs, pub)
	}
	written, err := n.commit(ctx, ops, sizes)
	for i := range written {
		switch {
		case ids[i] == "":
			n.lastHost = pubs[i].body
		case pubs[i].body == nil:
			delete(n.last, ids[i])
		default:
			n.last[ids[i]] = pubs[i]
		}
	}
	if err != nil {
		// Mark what did not go out again, for the next batch or the next
		// registration.
		n.mu.Lock()
		for _, id := range ids[written:] {
			if id == "" {
				n.hostDirty = true
			} else {
				n.dirty[id] = struct{}{}
			}
		}
		n.mu.Unlock()
		return fmt.Errorf("cluster: publishing %d changes of host %s: %w", len(ops)-written, n.id, err)
	}
	return nil
}

// publishLoop flushes once per publish interval.
func (n *Node) publishLoop() {
	defer n.wg.Done()
	t := time.NewTicker(n.cfg.PublishInterval)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(n.ctx, max(n.cfg.PublishInterval, n.cfg.DialTimeout))
		if err := n.Flush(ctx); err != nil && n.ctx.Err() == nil {
			n.log.Debug("publishing failed; retrying with the next batch", "error", err)
		}
		cancel()
	}
}

// Compact compacts etcd's history to the revision etcd was at when
// Compact was last called (nothing the first time), and remembers the
// revision now for the next call. Compaction is etcd-wide; only the
// member with the lowest ID among those this host sees does it (each
// host decides alone; two hosts that disagree briefly compact twice,
// which is harmless), so that N hosts do not compact N times. It
// returns the revision compacted to, 0 when it did nothing.
func (n *Node) Compact(ctx context.Context) (int64, error) {
	if ms := n.view.Members(); len(ms) == 0 || ms[0].ID != n.id {
		return 0, nil
	}
	resp, err := n.client.Get(ctx, cluster.HostKey(n.id), clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("cluster: reading etcd's revision to compact: %w", err)
	}
	n.compactMu.Lock()
	to := n.compactRev
	n.compactRev = resp.Header.Revision
	n.compactMu.Unlock()
	if to == 0 {
		return 0, nil
	}
	if _, err := n.client.Compact(ctx, to); err != nil {
		if errors.Is(err, rpctypes.ErrCompacted) {
			return 0, nil // another host, or etcd's own auto-compaction, did it
		}
		return 0, fmt.Errorf("cluster: compacting etcd to revision %d: %w", to, err)
	}
	return to, nil
}

// compactLoop compacts once per compact_interval: each time, to the
// revision etcd was at the time before, so that watches that resume
// within the interval find their revision, and etcd keeps at most two
// intervals of hearth's writes (about 600 revisions per host at the
// default publish interval and 5 minutes) besides the current values. A
// watch that falls further behind lists again (TestWatchCompacted).
func (n *Node) compactLoop() {
	defer n.wg.Done()
	t := time.NewTicker(n.cfg.CompactInterval)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(n.ctx, n.cfg.DialTimeout)
		if rev, err := n.Compact(ctx); err != nil && n.ctx.Err() == nil {
			n.log.Warn("compacting etcd's history failed; retrying in "+n.cfg.CompactInterval.String(), "error", err)
		} else if rev > 0 {
			n.log.Debug("compacted etcd's history", "revision", rev)
		}
		cancel()
	}
}

// keepMembership waits for the lease to be lost and registers again.
func (n *Node) keepMembership() {
	defer n.wg.Done()
	for {
		n.mu.Lock()
		sess := n.sess
		n.mu.Unlock()
		if sess != nil && !n.lose(sess) {
			return
		}
		var logged string
		for b := minBackoff; ; b = min(2*b, maxBackoff) {
			ctx, cancel := context.WithTimeout(n.ctx, n.cfg.DialTimeout)
			err := n.register(ctx)
			cancel()
			if err == nil {
				break
			}
			if n.ctx.Err() != nil {
				return
			}
			n.setErr(err)
			// Once per kind of failure at warning level: a host whose ID
			// is taken, or whose certificate etcd refuses, says so without
			// filling the log every two seconds.
			if msg := errors.Unwrap(err); msg != nil && msg.Error() != logged {
				logged = msg.Error()
				n.log.Warn("registering with etcd failed; retrying", "error", err)
			} else {
				n.log.Debug("registering again failed", "error", err)
			}
			if !sleep(n.ctx, b) {
				return
			}
		}
	}
}

// lose waits until the lease of sess is lost, then takes the host out
// of the cluster; false when the node closed first.
func (n *Node) lose(sess *lease) bool {
	select {
	case <-n.ctx.Done():
		return false
	case <-sess.Done():
	}
	if n.ctx.Err() != nil {
		return false
	}
	// The keep-alive stopped: etcd did not answer for the TTL, or
	// the lease is gone (etcd restarted without it). The other hosts
	// see this one leave; it sees them no more either, and places
	// locally until it is back.
	n.viewMu.Lock()
	n.gen++
	n.lost = true
	n.view.Reset(0, nil)
	n.viewMu.Unlock()
	n.mu.Lock()
	n.lostSince = time.Now()
	n.sess = nil
	// Err says why from now on, not only after the next attempt to
	// register fails: a listing meanwhile says the view is stale.
	n.stats.losses.Add(1)
	n.lastErr = fmt.Errorf("lost the cluster lease %x: etcd did not renew it within the TTL (%s)", sess.Lease(), n.cfg.LeaseTTL)
	close(n.state)
	n.state = make(chan struct{})
	n.mu.Unlock()
	n.log.Warn("lost the cluster lease; placing locally until etcd answers again", "lease", fmt.Sprintf("%x", sess.Lease()), "ttl", n.cfg.LeaseTTL, "why", sess.Why())
	return true
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
