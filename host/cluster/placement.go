package cluster

import (
	"fmt"
	"slices"

	"github.com/hearth-dev/hearth"
)

// Placement is where the one placement policy (host/pool, PlaceAcross)
// put a task when it decided over every host's sessions, before anyone
// acted on it.
type Placement struct {
	// Decision is the decision, as Place reports it; for another host's
	// session its Host and Session name it.
	Decision hearth.Decision
	// Remote is the winning session's RemoteID ("host/session") when it
	// is on another host; empty otherwise.
	Remote string
	// Spawn is set when the decision is a new session (no session, on
	// any host, is good enough and free): [View.Target] chooses the host
	// that spawns it.
	Spawn bool
}

// Excluded returns the sessions of agent that placement must leave out
// for a forward: the RemoteIDs in sessions, and every session of agent
// the hosts in hosts published, and the draining members' (they take no
// new work). Pass a Forward's Excluded and ExcludedHosts.
func (v *View) Excluded(agent string, hosts, sessions []string) []string {
	out := append([]string(nil), sessions...)
	v.mu.Lock()
	defer v.mu.Unlock()
	for id, h := range v.hosts {
		if id != v.self && v.drainingLocked(h) != "" && !slices.Contains(hosts, id) {
			hosts = append(slices.Clip(hosts), id)
		}
	}
	for _, h := range hosts {
		for id, s := range v.sessions[h] {
			if s.Agent == agent {
				out = append(out, RemoteID(h, id))
			}
		}
	}
	return out
}

// Target turns a placement of a task for agent into where it goes: the
// remote session that won it; for a spawn, the member [View.SpawnHost]
// chooses, leaving out excludedHosts, with the decision saying so; or,
// with Target's Host empty, this host (one of its sessions, a spawn here,
// or a wait for a slot). The decision returned is what the task's
// events and its outcome report.
func (v *View) Target(agent string, pl Placement, excludedHosts []string) (Target, hearth.Decision) {
	d := pl.Decision
	switch {
	case pl.Remote != "":
		owner, session, _ := SplitRemoteID(pl.Remote)
		return Target{Host: owner, Session: session}, d
	case pl.Spawn:
		m, ok := v.SpawnHost(agent, excludedHosts...)
		if ok && m.ID != v.self {
			d.Host, d.Session, d.Action = m.ID, "", hearth.ActionSpawned
			d.Reason = fmt.Sprintf("would spawn on host %s, the least loaded member that runs %s (here: %s)", m.ID, agent, d.Reason)
			return Target{Host: m.ID}, d
		}
	}
	return Target{}, d
}
