package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/hashicorp/go-hclog"

	"github.com/hearth-dev/hearth/host/api"
	"github.com/hearth-dev/hearth/host/cluster"
	"github.com/hearth-dev/hearth/host/cluster/etcd"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/host/engine"
)

// clusterMember is a serving host's membership of a cluster: its etcd
// node and its client of the other hosts' APIs.
type clusterMember struct {
	cfg   cluster.Config
	node  *etcd.Node
	peers *api.PeerHosts
}

// joinCluster makes h a member of the cluster its config's cluster block
// names: it applies the host ID's default (the host name and a hash of
// the data directory), registers with etcd and starts placing across the
// hosts. It returns nil, nil without a cluster block. The listeners must
// be open: other hosts forward tasks as soon as this one is listed.
func (m *Main) joinCluster(ctx context.Context, cfg *config.Config, h *engine.Engine, logger hclog.Logger) (*clusterMember, error) {
	if cfg.Cluster == nil {
		return nil, nil
	}
	hostname, _ := os.Hostname()
	cc := cfg.Cluster.WithDefaults(hostname, cfg.DataDir)
	if cc.Advertise == "" {
		// The TCP API's address, unless it is a wildcard (Validate says
		// so) or there is none.
		cc.Advertise = cfg.Server.Listen
	}
	if err := cc.Validate(); err != nil {
		return nil, err
	}
	peers, err := api.NewPeerHosts(cc.HostID, cfg.Server, cc.DialTimeout)
	if err != nil {
		return nil, err
	}
	view := h.ClusterView(engine.ClusterInfo{ID: cc.HostID, Addr: cc.Advertise, ConfigHash: configHash(cfg), Version: buildInfo().Version})
	sctx, cancel := context.WithTimeout(ctx, 2*cc.DialTimeout)
	defer cancel()
	node, err := etcd.Start(sctx, etcd.Options{Config: cc, Identity: cluster.Identity(hostname, cfg.DataDir),
		Source: h.ClusterSource(), View: view, Logger: logger})
	if err != nil {
		peers.Close()
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w; is etcd running at %v? (the cluster block's endpoints)", err, cc.Endpoints)
		}
		return nil, err
	}
	if err := h.JoinCluster(node, peers); err != nil {
		node.Close()
		peers.Close()
		return nil, err
	}
	return &clusterMember{cfg: cc, node: node, peers: peers}, nil
}

// leave leaves the cluster at once (the lease is revoked: the others stop
// placing here) before the host stops.
func (c *clusterMember) leave() error {
	if c == nil {
		return nil
	}
	err := c.node.Close()
	c.peers.Close()
	return err
}

// configHash is a digest of what a host decides with: its agents (their
// workspaces included), matcher weights, guards and pipelines; not its listeners or its cluster block,
// which differ between hosts by design. `hearth hosts list` shows when
// hosts' hashes differ: their guards or agents are not the same.
func configHash(cfg *config.Config) string {
	b, err := json.Marshal(struct {
		Agents    any
		Matcher   any
		Guards    any
		Pipelines any
	}{cfg.Agents, cfg.Matcher, cfg.Guards, cfg.Pipelines})
	if err != nil {
		// Not expected of a loaded config; the file itself then.
		b, _ = os.ReadFile(cfg.Path)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}
