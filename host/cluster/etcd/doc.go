// Package etcd connects a host to the cluster through etcd: a [Node]
// registers the host under a lease, publishes its sessions' summaries in
// rate-limited batches, and keeps a [cluster.View] current from a watch.
// See package cluster for the key layout, the bounds and what happens on
// a partition.
package etcd
