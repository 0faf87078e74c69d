// Package cluster is what hosts share to place tasks across machines:
// membership, a view of every host's sessions, and the rules for
// forwarding a task to another host. (Full documentation to follow.)
package cluster
