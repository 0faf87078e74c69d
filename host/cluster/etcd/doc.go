// Package etcd connects a host to the cluster through etcd. A [Node]
// registers the host under a lease and keeps it alive, publishes its
// sessions' summaries in batches (at most one transaction per publish
// interval for up to 127 changed sessions), and keeps a cluster.View
// current from a watch; it notices a lost lease, places locally meanwhile
// (its view is emptied) and registers again when etcd answers. Package
// cluster documents the key layout, the bounds, fencing and partitions.
//
// The host's member (cluster/member) implements [Source] (its host
// record and session summaries, read once per interval), calls
// [Node.Changed] on each tool use that changed a session's fingerprint and
// [Node.HostChanged] when its load changes, runs forwarded tasks under
// [Node.Fence], and places with the View it gave the node. The lifecycle is [Start] (returns once registered and
// listed, or fails: etcd unreachable before its context ends, the host ID
// taken), then [Node.Close] (revokes the lease: the host leaves at once).
package etcd
