package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/matcher"
)

// Bounds of a published session summary. A summary is what placement on
// another host needs, not the session's whole fingerprint (up to 1,000
// files): its most recent files and directories.
const (
	MaxSummaryFiles = 32
	MaxSummaryDirs  = 32
	MaxSummaryTechs = 16
	// MaxPathBytes drops longer paths from a summary: a path that long is
	// not what a task's hints name.
	MaxPathBytes = 256
	MaxTechBytes = 64
	// MaxSummaryBytes bounds an encoded summary; a typical one is 1 to 3
	// KiB. Summaries that would be larger (long paths full of characters
	// JSON escapes) lose their oldest files and directories until they fit.
	MaxSummaryBytes = 16 << 10
	// MaxHostRecordBytes bounds an encoded HostRecord.
	MaxHostRecordBytes = 16 << 10
	// MaxSessionIDBytes bounds a session ID, which is a key segment.
	MaxSessionIDBytes = 256
	maxNameBytes      = 128
)

// MaxAgents bounds the agents a host's record lists: a host with more
// could publish no record the others read (CheckAgents).
const MaxAgents = 64

// CheckAgents says what in a host's agents would make its record one the
// other hosts refuse, so that configuration refuses it first: more than
// MaxAgents agents, or an agent whose name is not 1 to 128 bytes of UTF-8
// without '/'. problem is "" when the agents fit; index is the agent at
// fault, or -1 for their number.
func CheckAgents(names []string) (index int, problem string) {
	if len(names) > MaxAgents {
		return -1, fmt.Sprintf("%d agents, more than the %d a host of a cluster publishes", len(names), MaxAgents)
	}
	for i, n := range names {
		if err := checkName(n); err != nil {
			return i, fmt.Sprintf("agent name %q %v, as a host of a cluster publishes it", n, err)
		}
	}
	return 0, ""
}

func agentNames(agents []hearth.AgentLoad) []string {
	names := make([]string, len(agents))
	for i, a := range agents {
		names[i] = a.Name
	}
	return names
}

// recordVersion is the v field of every record this package writes. A
// record with another version was written by a hearth this one cannot
// read: it is reported and left out, never guessed at. Fields may be added
// within a version (a decoder ignores fields it does not know).
const recordVersion = 1

// Summary is what a host publishes about one of its sessions: what the
// matcher on another host needs to place a task on it.
type Summary struct {
	// Session is the session's ID. It is the last segment of the key, not
	// part of the value.
	Session string `json:"-"`
	Agent   string `json:"agent"`
	// Dirs, Files and Techs are the session's most recently used ones,
	// most recent first, at most MaxSummaryDirs, MaxSummaryFiles and
	// MaxSummaryTechs; paths are workspace-relative, as the matcher's.
	Dirs         []string  `json:"dirs,omitempty"`
	Files        []string  `json:"files,omitempty"`
	Techs        []string  `json:"techs,omitempty"`
	LastActivity time.Time `json:"last_activity"`
	Load         int       `json:"load"`
	Capacity     int       `json:"capacity"`
	Dormant      bool      `json:"dormant,omitempty"`
}

// HostRecord is a member's record in etcd: the member as listings show
// it, and what tells its starts apart. Member.ID, Sessions, Self and
// Unhealthy are not part of the record: the key names the host, and
// whoever lists the members counts the sessions, knows which host it is
// and which hosts it cannot work with. Every other field of hearth.Member
// is, with no line in this file (hostRecord says how).
type HostRecord struct {
	hearth.Member
	// Identity is a digest of the machine's hostname and the host's data
	// directory (see [Identity]): a host that restarts before its old
	// lease expired has the same identity and takes its place back; another
	// process claiming the same ID does not.
	Identity string
	// Incarnation is random for each start of the host process.
	Incarnation string
}

// Identity returns a digest of hostname and the absolute data directory:
// the same for every start of one host, different for another host.
func Identity(hostname, dataDir string) string {
	if abs, err := filepath.Abs(dataDir); err == nil {
		dataDir = abs
	}
	sum := sha256.Sum256([]byte(hostname + "\x00" + dataDir))
	return hex.EncodeToString(sum[:16])
}

// Candidate returns the summary, published by host, as a matcher
// candidate: named [RemoteID] (host/session) and owned by host, so that
// an index holding every host's sessions can decide among one host's
// alone (matcher.Index.DecideOwned). The directories of its files are
// added to its directories, as the host does for its own sessions, so
// that a summary cut to its most recent entries still scores on the
// directories of the files it kept.
func (s *Summary) Candidate(host string) matcher.Candidate {
	dirs := make([]string, 0, len(s.Dirs)+len(s.Files))
	dirs = append(dirs, s.Dirs...)
	for _, f := range s.Files {
		for d := parentDir(f); d != "."; d = parentDir(d) {
			dirs = append(dirs, d)
		}
	}
	return matcher.Candidate{
		ID:    RemoteID(host, s.Session),
		Owner: host,
		State: matcher.State{Capacity: s.Capacity, Load: s.Load, LastActivity: s.LastActivity, Dormant: s.Dormant},
		Files: s.Files,
		Dirs:  dirs,
		Techs: s.Techs,
	}
}

func parentDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "."
	}
	return p[:i]
}

// bounded returns a copy of s cut to what a summary holds: the first
// (most recent) entries of each list, without empty, overlong or invalid
// UTF-8 ones or duplicates.
func (s *Summary) bounded() Summary {
	out := *s
	out.Files = keep(s.Files, MaxSummaryFiles, MaxPathBytes)
	out.Dirs = keep(s.Dirs, MaxSummaryDirs, MaxPathBytes)
	out.Techs = keep(s.Techs, MaxSummaryTechs, MaxTechBytes)
	out.LastActivity = s.LastActivity.Round(0).UTC()
	return out
}

func keep(in []string, n, maxBytes int) []string {
	if len(in) == 0 {
		return nil
	}
	out := make([]string, 0, min(len(in), n))
	seen := make(map[string]bool, min(len(in), n))
	for _, v := range in {
		if len(out) == n {
			break
		}
		if v == "" || len(v) > maxBytes || !utf8.ValidString(v) || seen[v] {
			continue
		}
		seen[v] = true
		out = append(out, v)
	}
	return out
}

type summaryRecord struct {
	V int `json:"v"`
	Summary
}

// hostRecord is a HostRecord as etcd holds it: the record's own fields,
// then the member's as the vocabulary writes them (hearth.Member's JSON
// names), so that a field added to hearth.Member is published and read
// with no line here. The listing's fields are not the record's: the key
// names the host, and whoever lists the members counts its sessions,
// knows which host it is and which it cannot work with. The four fields
// below hide the member's of the same JSON names (encoding/json takes the
// shallower of two fields with one name), both ways: they are never
// written, and what a record holds under those names is read into them
// and dropped, never into the member. A field added to hearth.Member that
// only a listing knows gets its line here.
//
// Records of version 1 written before the member was embedded named the
// member's fields one by one, with the same JSON names: they read the
// same, and hearths of that release read these (their decoder ignores
// the fields it does not know).
type hostRecord struct {
	V           int    `json:"v"`
	Identity    string `json:"identity"`
	Incarnation string `json:"incarnation"`
	hearth.Member

	ID        json.RawMessage `json:"id,omitempty"`
	Self      json.RawMessage `json:"self,omitempty"`
	Unhealthy json.RawMessage `json:"unhealthy,omitempty"`
	Sessions  json.RawMessage `json:"sessions,omitempty"`
}

// EncodeSummary returns the value published for s: JSON, at most
// MaxSummaryBytes, its lists cut to the summary's bounds. It fails only
// for a session ID or agent that cannot be published.
func EncodeSummary(s Summary) ([]byte, error) {
	if err := checkSessionID(s.Session); err != nil {
		return nil, fmt.Errorf("session %q: %w", s.Session, err)
	}
	if err := checkName(s.Agent); err != nil {
		return nil, fmt.Errorf("session %q: agent %q: %w", s.Session, s.Agent, err)
	}
	rec := summaryRecord{V: recordVersion, Summary: s.bounded()}
	rec.Load, rec.Capacity = max(rec.Load, 0), max(rec.Capacity, 0)
	for {
		b, err := json.Marshal(&rec)
		if err != nil {
			return nil, fmt.Errorf("session %q: %w", s.Session, err)
		}
		if len(b) <= MaxSummaryBytes {
			return b, nil
		}
		// Only summaries of long paths full of escaped characters get
		// here: drop the oldest entry of the longer list.
		switch {
		case len(rec.Files) >= len(rec.Dirs) && len(rec.Files) > 0:
			rec.Files = rec.Files[:len(rec.Files)-1]
		case len(rec.Dirs) > 0:
			rec.Dirs = rec.Dirs[:len(rec.Dirs)-1]
		default:
			rec.Techs = rec.Techs[:len(rec.Techs)-1]
		}
	}
}

// DecodeSummary reads the value of session's key. Values come from other
// hosts, possibly of other versions: anything out of bounds is an error
// wrapping [ErrBadRecord], and the summary is left out of placement.
func DecodeSummary(session string, b []byte) (Summary, error) {
	var rec summaryRecord
	if err := decodeRecord(b, MaxSummaryBytes, &rec, &rec.V); err != nil {
		return Summary{}, err
	}
	s := rec.Summary
	s.Session = session
	var problems []string
	if err := checkSessionID(session); err != nil {
		problems = append(problems, "session ID "+err.Error())
	}
	if err := checkName(s.Agent); err != nil {
		problems = append(problems, "agent "+strconv.Quote(s.Agent)+" "+err.Error())
	}
	for _, l := range [...]struct {
		name     string
		v        []string
		n, bytes int
	}{
		{"files", s.Files, MaxSummaryFiles, MaxPathBytes},
		{"dirs", s.Dirs, MaxSummaryDirs, MaxPathBytes},
		{"techs", s.Techs, MaxSummaryTechs, MaxTechBytes},
	} {
		if len(l.v) > l.n {
			problems = append(problems, fmt.Sprintf("%d %s, more than %d", len(l.v), l.name, l.n))
		}
		for _, v := range l.v {
			if v == "" || len(v) > l.bytes {
				problems = append(problems, fmt.Sprintf("%s entry of %d bytes, not 1 to %d", l.name, len(v), l.bytes))
				break
			}
		}
	}
	if s.Load < 0 || s.Capacity < 0 {
		problems = append(problems, fmt.Sprintf("load %d and capacity %d, not both at least 0", s.Load, s.Capacity))
	}
	if len(problems) > 0 {
		return Summary{}, fmt.Errorf("%w: %s", ErrBadRecord, strings.Join(problems, "; "))
	}
	return s, nil
}

// EncodeHost returns the value published for h.
func EncodeHost(h HostRecord) ([]byte, error) {
	if err := CheckHostID(h.ID); err != nil {
		return nil, fmt.Errorf("host ID %q %w", h.ID, err)
	}
	// What a reader refuses is not published: the same check.
	if _, problem := CheckAgents(agentNames(h.Agents)); problem != "" {
		return nil, fmt.Errorf("host %q: %s", h.ID, problem)
	}
	m := h.Member
	m.Started = m.Started.Round(0).UTC()
	b, err := json.Marshal(&hostRecord{V: recordVersion, Identity: h.Identity, Incarnation: h.Incarnation, Member: m})
	if err != nil {
		return nil, fmt.Errorf("host %q: %w", h.ID, err)
	}
	if len(b) > MaxHostRecordBytes {
		return nil, fmt.Errorf("host %q: record of %d bytes, more than %d; shorten agent names or the address", h.ID, len(b), MaxHostRecordBytes)
	}
	return b, nil
}

// DecodeHost reads the value of host id's key; like [DecodeSummary],
// anything out of bounds is an error wrapping [ErrBadRecord].
func DecodeHost(id string, b []byte) (HostRecord, error) {
	var rec hostRecord
	if err := decodeRecord(b, MaxHostRecordBytes, &rec, &rec.V); err != nil {
		return HostRecord{}, err
	}
	h := HostRecord{Member: rec.Member, Identity: rec.Identity, Incarnation: rec.Incarnation}
	h.ID = id
	var problems []string
	if err := CheckHostID(id); err != nil {
		problems = append(problems, "host ID "+err.Error())
	}
	if h.Addr == "" {
		problems = append(problems, "no address")
	}
	if _, problem := CheckAgents(agentNames(h.Agents)); problem != "" {
		problems = append(problems, problem)
	}
	if len(problems) > 0 {
		return HostRecord{}, fmt.Errorf("%w: %s", ErrBadRecord, strings.Join(problems, "; "))
	}
	return h, nil
}

// decodeRecord unmarshals b, at most limit bytes, into rec and checks the
// version it read into v.
func decodeRecord(b []byte, limit int, rec any, v *int) error {
	if len(b) > limit {
		return fmt.Errorf("%w: %d bytes, more than %d", ErrBadRecord, len(b), limit)
	}
	if err := json.Unmarshal(b, rec); err != nil {
		return fmt.Errorf("%w: %v", ErrBadRecord, err)
	}
	if *v != recordVersion {
		return fmt.Errorf("%w: version %d, this hearth reads version %d; run the same hearth release on every host", ErrBadRecord, *v, recordVersion)
	}
	return nil
}

func checkSessionID(id string) error {
	if id == "" || len(id) > MaxSessionIDBytes || !utf8.ValidString(id) {
		return fmt.Errorf("is not 1 to %d bytes of UTF-8", MaxSessionIDBytes)
	}
	return nil
}

func checkName(n string) error {
	if n == "" || len(n) > maxNameBytes || !utf8.ValidString(n) || strings.Contains(n, "/") {
		return fmt.Errorf("is not 1 to %d bytes of UTF-8 without '/'", maxNameBytes)
	}
	return nil
}
