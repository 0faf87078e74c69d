package etcd

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hearth-dev/hearth/host/cluster"
)

var errReregistered = errors.New("registered again")

// list reads the whole cluster at one revision into the view, and returns
// that revision and the registration it belongs to.
func (n *Node) list(ctx context.Context) (int64, uint64, error) {
	n.viewMu.Lock()
	gen := n.gen
	n.viewMu.Unlock()
	resp, err := n.client.Get(ctx, cluster.Prefix, clientv3.WithPrefix())
	if err != nil {
		return 0, 0, err
	}
	changes := make([]cluster.Change, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if c, ok := n.change(mvccpb.PUT, kv); ok {
			changes = append(changes, c)
		}
	}
	n.viewMu.Lock()
	defer n.viewMu.Unlock()
	if n.gen != gen || n.lost {
		return 0, 0, errReregistered
	}
	n.view.Reset(resp.Header.Revision, changes)
	n.stats.lists.Add(1)
	return resp.Header.Revision, gen, nil
}

// watchLoop keeps the view current: a watch from the revision after the
// last listing (or, unless listed, a listing first); on compaction, a lost watch or a new registration, a new
// listing and a new watch. While the host is not registered, the view
// stays empty.
func (n *Node) watchLoop(rev int64, gen uint64, listed bool) {
	defer n.wg.Done()
	b := minBackoff
	for {
		if listed {
			err := n.watch(rev, gen)
			if n.ctx.Err() != nil {
				return
			}
			if err != errReregistered {
				n.log.Debug("watch ended; listing the cluster again", "error", err)
			}
		}
		listed = true
		for {
			n.mu.Lock()
			epoch, registered := n.epoch, n.sess != nil
			n.mu.Unlock()
			if !registered {
				select {
				case <-n.ctx.Done():
					return
				case <-epoch:
				}
				continue
			}
			ctx, cancel := context.WithTimeout(n.ctx, n.cfg.DialTimeout)
			var err error
			rev, gen, err = n.list(ctx)
			cancel()
			if err == nil {
				b = minBackoff
				break
			}
			if n.ctx.Err() != nil {
				return
			}
			if !sleep(n.ctx, b) {
				return
			}
			b = min(2*b, maxBackoff)
		}
	}
}

// watch applies the cluster's changes after rev to the view until the
// watch fails or the registration gen ends.
func (n *Node) watch(rev int64, gen uint64) error {
	n.mu.Lock()
	epoch := n.epoch
	n.mu.Unlock()
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(n.ctx))
	defer cancel()
	wch := n.client.Watch(ctx, cluster.Prefix, clientv3.WithPrefix(), clientv3.WithRev(rev+1), clientv3.WithProgressNotify())
	for {
		select {
		case <-epoch:
			return errReregistered
		case wr, ok := <-wch:
			if !ok {
				return errors.New("watch channel closed")
			}
			if err := wr.Err(); err != nil {
				if wr.CompactRevision != 0 {
					n.stats.compactions.Add(1)
				}
				return fmt.Errorf("watching from revision %d: %w", rev+1, err)
			}
			if wr.IsProgressNotify() || len(wr.Events) == 0 {
				continue
			}
			changes := make([]cluster.Change, 0, len(wr.Events))
			for _, ev := range wr.Events {
				if c, ok := n.change(ev.Type, ev.Kv); ok {
					changes = append(changes, c)
				}
			}
			n.viewMu.Lock()
			if n.gen != gen || n.lost {
				n.viewMu.Unlock()
				return errReregistered
			}
			n.view.Apply(wr.Header.Revision, changes)
			rev = wr.Header.Revision
			n.viewMu.Unlock()
		}
	}
}

// change decodes one key's put or delete. A record that does not decode
// is logged and treated as deleted, so that what it replaced is not kept.
func (n *Node) change(typ mvccpb.Event_EventType, kv *mvccpb.KeyValue) (cluster.Change, bool) {
	kind, host, session, err := cluster.ParseKey(string(kv.Key))
	if err != nil {
		n.log.Warn("ignoring a key", "error", err)
		return cluster.Change{}, false
	}
	c := cluster.Change{Kind: kind, Host: host, Delete: typ == mvccpb.DELETE}
	c.Summary.Session = session
	if kind == cluster.KeyDrain && host == n.id {
		// This host's record says whether it drains: publish it again.
		n.HostChanged()
	}
	if c.Delete || kind == cluster.KeyDrain {
		// A drain mark is its key; its value only says who set it.
		return c, true
	}
	switch kind {
	case cluster.KeyHost:
		var rec cluster.HostRecord
		rec, err = cluster.DecodeHost(host, kv.Value)
		c.Info = rec.Member
	case cluster.KeySession:
		c.Summary, err = cluster.DecodeSummary(session, kv.Value)
		c.Summary.Session = session
	}
	if err != nil {
		n.log.Warn("ignoring a record", "key", string(kv.Key), "error", err)
		c.Delete = true
	}
	return c, true
}
