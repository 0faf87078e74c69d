package host

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/host/store/storepb"
)

// SessionInfo describes a session, live or dormant.
type SessionInfo struct {
	ID           string    `json:"id"`
	Agent        string    `json:"agent"`
	Status       string    `json:"status"`
	Reason       string    `json:"reason,omitempty"`
	Created      time.Time `json:"created"`
	LastActivity time.Time `json:"last_activity"`
	Capacity     int       `json:"capacity"`
	Load         int       `json:"load"`
	PID          int       `json:"pid,omitempty"`
	AgentVersion string    `json:"agent_version,omitempty"`
	Tasks        uint64    `json:"tasks"`
	TasksFailed  uint64    `json:"tasks_failed"`
	ToolUses     uint64    `json:"tool_uses"`
	// HasState says the session's agent state is stored, so that it can be
	// rehydrated.
	HasState bool `json:"has_state"`
	// External is the kind of an external session (its program reports
	// through hooks; hearth did not start it); Workspace is where it
	// works, and Resume the command line that resumes it there.
	External  string `json:"external,omitempty"`
	Workspace string `json:"workspace,omitempty"`
	Resume    string `json:"resume,omitempty"`
	// The fingerprint, most recently used first.
	Files        []string `json:"files"`
	Directories  []string `json:"directories"`
	Technologies []string `json:"technologies"`
}

// SessionDetail is a session with its recent history.
type SessionDetail struct {
	SessionInfo
	// Events are the session's latest events, oldest first.
	Events []Event `json:"events"`
	// Decisions are the latest placements that involved the session, as
	// the chosen one or as a candidate, newest first.
	Decisions []Decision `json:"decisions"`
}

var statusNames = map[storepb.SessionStatus]string{
	storepb.SessionStatus_SESSION_LIVE:    "live",
	storepb.SessionStatus_SESSION_DORMANT: "dormant",
	storepb.SessionStatus_SESSION_LOST:    "lost",
}

func infoFromRecord(r *storepb.Session) SessionInfo {
	return SessionInfo{
		ID: r.GetId(), Agent: r.GetAgent(), Status: statusNames[r.GetStatus()], Reason: r.GetStatusReason(),
		Created: time.Unix(0, r.GetCreatedUnixNano()), LastActivity: time.Unix(0, r.GetLastActivityUnixNano()),
		Capacity: int(r.GetCapacity()), PID: int(r.GetPid()), AgentVersion: r.GetAgentVersion(),
		Tasks: r.GetTasks(), TasksFailed: r.GetTasksFailed(), ToolUses: r.GetToolUses(), HasState: r.GetHasState(),
		Files: newestFirst(r.GetFiles()), Directories: newestFirst(r.GetDirs()), Technologies: newestFirst(r.GetTechs()),
		External: r.GetExternal(), Workspace: r.GetWorkspace(), Resume: ResumeCommand(r.GetExternal(), r.GetId()),
	}
}

func newestFirst(lru []string) []string {
	out := make([]string, len(lru))
	for i, s := range lru {
		out[len(lru)-1-i] = s
	}
	return out
}

// ListSessions reads every session from a store, most recently active
// first. A store is open to one process at a time, so no host runs on it
// now: a session its record calls live belonged to a host that stopped
// without retiring it (kill -9), and is dormant, as the next host will
// find it.
func ListSessions(st *store.Store) ([]SessionInfo, error) {
	recs, err := st.Sessions()
	if err != nil {
		return nil, err
	}
	out := make([]SessionInfo, 0, len(recs))
	for _, r := range recs {
		out = append(out, offlineInfo(r))
	}
	sortSessions(out)
	return out, nil
}

func offlineInfo(r *storepb.Session) SessionInfo {
	info := infoFromRecord(r)
	if r.GetStatus() == storepb.SessionStatus_SESSION_LIVE {
		info.Status, info.Reason, info.PID = "dormant", "the host stopped without retiring it", 0
	}
	return info
}

func sortSessions(s []SessionInfo) {
	sort.SliceStable(s, func(i, j int) bool {
		if !s[i].LastActivity.Equal(s[j].LastActivity) {
			return s[i].LastActivity.After(s[j].LastActivity)
		}
		return s[i].ID < s[j].ID
	})
}

// ShowSession reads one session from a store with its latest events and
// the decisions that involved it; see ListSessions for its status.
func ShowSession(st *store.Store, id string, limit int) (*SessionDetail, error) {
	r, err := st.Session(id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w %q in %s; list them with hearth sessions list", ErrUnknownSession, id, st.Dir())
	}
	if err != nil {
		return nil, err
	}
	d := &SessionDetail{SessionInfo: offlineInfo(r), Events: []Event{}, Decisions: []Decision{}}
	evs, err := st.RecentEvents(id, limit)
	if err != nil {
		return nil, err
	}
	for _, ev := range evs {
		d.Events = append(d.Events, eventFromRecord(ev))
	}
	decs, err := st.DecisionsFor(id, limit)
	if err != nil {
		return nil, err
	}
	for _, ev := range decs {
		dec := decisionFromRecord(ev.GetDecision())
		d.Decisions = append(d.Decisions, dec)
	}
	return d, nil
}

// Sessions lists the host's sessions as they are now, live ones with their
// current load, most recently active first.
func (h *Host) Sessions() []SessionInfo {
	var out []SessionInfo
	for _, p := range h.poolList() {
		p.mu.Lock()
		for _, s := range p.sessions {
			info := s.infoLocked()
			if s.fp == nil {
				// Dormant: the fingerprint is in the store, not in memory.
				if r, err := h.store.Session(s.id); err == nil {
					info.Files, info.Directories, info.Technologies = newestFirst(r.GetFiles()), newestFirst(r.GetDirs()), newestFirst(r.GetTechs())
				}
			}
			out = append(out, info)
		}
		p.mu.Unlock()
	}
	sortSessions(out)
	return out
}

// infoLocked describes a session as it is now; without its fingerprint
// when it is dormant (the store has it). pool.mu must be held.
func (s *session) infoLocked() SessionInfo {
	info := infoFromRecord(s.recordLocked())
	info.Status, info.Load = s.status.String(), s.load
	return info
}

// Session reads one session of the host with its latest events and the
// decisions that involved it: as ShowSession, with its status and load as
// they are now.
func (h *Host) Session(id string, limit int) (*SessionDetail, error) {
	d, err := ShowSession(h.store, id, limit)
	if err != nil {
		return nil, err
	}
	for _, p := range h.poolList() {
		p.mu.Lock()
		if s := p.sessions[id]; s != nil {
			info := s.infoLocked()
			if s.fp == nil {
				info.Files, info.Directories, info.Technologies = d.Files, d.Directories, d.Technologies
			}
			d.SessionInfo = info
		}
		p.mu.Unlock()
	}
	return d, nil
}

// RecentDecisions returns the last limit placement decisions of the
// host's store, newest first, as events (with their time and run).
func (h *Host) RecentDecisions(limit int) ([]Event, error) {
	recs, err := h.store.Decisions(limit)
	if err != nil {
		return nil, err
	}
	out := make([]Event, len(recs))
	for i, r := range recs {
		out[i] = eventFromRecord(r)
	}
	return out, nil
}
