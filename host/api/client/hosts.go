package client

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/internal/apipb"
	"github.com/hearth-dev/hearth/host/internal/peerpb"
	"github.com/hearth-dev/hearth/host/internal/wire"
)

// The daemon's cluster as it sees it (the peer service, peer.proto): the
// client reads it as the engine's member does, a hearth.ClusterReader.

var _ hearth.ClusterReader = (*Client)(nil)

// Members lists the members of the daemon's cluster; Clustered is false
// for a daemon without a cluster block.
func (c *Client) Members(ctx context.Context) (hearth.Members, error) {
	r, err := peerpb.NewPeerClient(c.conn).ListHosts(ctx, &peerpb.ListHostsRequest{})
	if err != nil {
		if status.Code(err) == codes.Unimplemented {
			// A daemon that serves no peer service is in no cluster.
			return hearth.Members{Hosts: []hearth.Member{}}, nil
		}
		return hearth.Members{}, wire.ErrorOf(ctx, err)
	}
	return wire.MembersOf(r)
}

// ClusterRuns lists the runs of every host of the daemon's cluster, with
// their owners; Clustered is false for a daemon without a cluster block.
func (c *Client) ClusterRuns(ctx context.Context) (hearth.ClusterRuns, error) {
	r, err := peerpb.NewPeerClient(c.conn).ListClusterRuns(ctx, &apipb.ListRunsRequest{})
	if err != nil {
		if st, _ := status.FromError(err); st.Code() == codes.FailedPrecondition || st.Code() == codes.Unimplemented {
			return hearth.ClusterRuns{Hosts: []hearth.HostRuns{}}, nil
		}
		return hearth.ClusterRuns{}, wire.ErrorOf(ctx, err)
	}
	return wire.ClusterRunsOf(r)
}

// DrainHost marks host drained for maintenance (drain true), or takes
// the mark away, through the daemon, which writes it in its cluster's
// etcd; it returns the host as listed then.
func (c *Client) DrainHost(ctx context.Context, host string, drain bool) (hearth.Member, error) {
	r, err := peerpb.NewPeerClient(c.conn).DrainHost(ctx, &peerpb.DrainHostRequest{Host: host, Drain: drain})
	if err != nil {
		return hearth.Member{}, wire.ErrorOf(ctx, err)
	}
	ms, err := wire.MembersOf(&peerpb.HostList{Hosts: []*peerpb.Host{r}})
	if err != nil {
		return hearth.Member{}, err
	}
	return ms.Hosts[0], nil
}
