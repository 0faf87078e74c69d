package api

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/claudecode"
	"github.com/hearth-dev/hearth/host/config"
	"github.com/hearth-dev/hearth/internal/text"
	"github.com/hearth-dev/hearth/matcher"
)

//go:embed dashboard
var dashboardFS embed.FS

// Web is what the HTTP side asks of the host it serves: the dashboard's
// reads and event stream, and the hook endpoint.
type Web interface {
	hearth.Reader
	hearth.EventSource
	hearth.StatusReader
	claudecode.Sessions
	// RecentDecisions returns the last limit placement decisions, newest
	// first, as events (with their time and run).
	RecentDecisions(limit int) ([]hearth.Event, error)
	// Config is the config in force: the matcher's threshold and weights
	// the dashboard draws against, and what a hook call that fails is
	// answered (hooks.when_unreachable).
	Config() *config.Config
}

// Cluster is what the dashboard's cluster view asks of the host's member
// of its cluster (host/cluster/member's Member implements it): the
// members as this host sees them, and the forwards it sends and runs.
type Cluster interface {
	Members(ctx context.Context) (hearth.Members, error)
	Forwards(ctx context.Context) ([]hearth.ForwardInFlight, error)
}

// Dashboard limits: what one snapshot shows.
const (
	snapshotRuns      = 12
	snapshotDecisions = 20
	// sseCoalesce is how often the event stream tells the page that
	// sessions' fingerprints moved: tool uses come by the thousand.
	sseCoalesce = 500 * time.Millisecond
	// sseHeartbeat keeps proxies from closing an idle stream.
	sseHeartbeat = 15 * time.Second
	// sseBehind is how many events a subscriber may miss (its buffer was
	// full) before it is told so and dropped; it reconnects and reloads.
	sseBehind = 1024
	// sseBuffer is an event stream's subscription buffer. A channel's
	// buffer is allocated whole when it is made, so every open stream
	// costs it whether it reads or not: with the gRPC stream's 8,192 it
	// was about 4 MB a stream (50 idle tabs grew the daemon by 210 MB).
	// The page coalesces tool uses and reloads after a drop, so a small
	// buffer loses nothing it shows.
	sseBuffer = 256
)

// sseWrite bounds each write to an event stream: a subscriber that does
// not read is dropped, not held forever. A variable only so that tests
// that stall a stream on purpose can hold it for as long as a loaded
// machine takes to publish past it (export_test.go).
var sseWrite = 10 * time.Second

// Bounds of the HTTP server: no client may hold it, or the daemon's file
// descriptors, for long. How many connections it takes is budget.go's.
const (
	// httpReadHeader bounds a request's headers: a client sends them at
	// once, and a connection that dribbles them (as slow clients without
	// the token do) is closed.
	httpReadHeader = 3 * time.Second
	httpRead       = 30 * time.Second
	httpWrite      = 60 * time.Second // event streams extend it per event
	httpIdle       = 2 * time.Minute
	httpMaxHeader  = 64 << 10
	// httpSendBuffer is each HTTP connection's socket send buffer (the
	// kernel doubles it). Left to autotuning it grows to 4 MB: an event
	// stream that does not read then hides some 15,000 events in the
	// kernel before its writes block and it is seen to fall behind. At
	// this size it holds a few hundred, and the dashboard's responses
	// are not slowed on loopback.
	httpSendBuffer = 32 << 10
)

// HTTPHandler serves the HTTP side of the daemon:
//
//	GET  /                    the dashboard
//	GET  /login?code=CODE     signs the browser in (a one-time link)
//	GET  /api/snapshot        what the dashboard shows, as JSON
//	GET  /api/runs/{id}       one run, as JSON
//	GET  /api/cluster         the cluster as this host sees it, as JSON
//	GET  /api/events          the host's events, as server-sent events
//	GET  /metrics             Prometheus metrics
//	POST /hooks/claude-code   Claude Code's HTTP hooks (?agent=NAME)
//	     /mcp                 hearth's MCP server, streamable HTTP (mcp.go)
//	GET  /healthz             "ok", to anyone
//
// With a token (Listen always has one), every route but /healthz and
// /login needs it, loopback included: an "Authorization: Bearer" header,
// never a query parameter. A browser signs in with a link from
// LoginLink instead, which sets a cookie good for the dashboard's reads
// (GET, from its own origin) and nothing else: a hook call or anything
// that changes state needs the token itself.
//
// On loopback, what stands between the endpoints and a web page the
// person happens to visit is also the browser's same-origin policy,
// which DNS rebinding and "simple" cross-site POSTs get around: so a
// request must name this daemon in its Host (addr: the address it
// listens on), a request with an Origin must come from it, and a hook
// call must be JSON (which a page cannot send cross-site without asking
// first).
func (s *Server) HTTPHandler(token, addr string) http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(dashboardFS, "dashboard")
	files := http.FileServerFS(static)
	mux.Handle("GET /", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A path that is not a valid file name (GET /0%87: not UTF-8) is
		// simply not there; the file server would answer 500.
		if name := strings.TrimPrefix(path.Clean(r.URL.Path), "/"); name != "" && !fs.ValidPath(name) {
			http.NotFound(w, r)
			return
		}
		files.ServeHTTP(w, r)
	}))
	mux.HandleFunc("GET /api/snapshot", s.serveSnapshot)
	mux.HandleFunc("GET /api/runs/{id}", s.serveRun)
	mux.HandleFunc("GET /api/cluster", s.serveCluster)
	mux.HandleFunc("GET /api/events", s.serveEvents)
	mux.HandleFunc("POST /hooks/claude-code", s.serveHook)
	for _, method := range []string{"GET", "POST", "DELETE"} {
		mux.Handle(method+" "+mcpPath, s.mcpHandler())
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	if s.metrics != nil {
		mux.Handle("GET /metrics", s.metrics.handler(s.status))
	}
	var auth *httpAuth
	if token != "" {
		auth = newHTTPAuth(token, addr, s.now)
		s.dash.Store(auth)
		mux.Handle("GET "+loginPath, s.serveLogin(auth))
	}
	hosts := localHosts(addr)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hosts != nil && !hosts[r.Host] {
			s.logger.Warn("refused an HTTP request for another host (DNS rebinding?)", "peer", r.RemoteAddr, "host", r.Host, "path", r.URL.Path)
			httpError(w, http.StatusMisdirectedRequest, fmt.Sprintf("this hearth daemon answers for %s, not %q", addr, r.Host))
			return
		}
		if o := r.Header.Get("Origin"); o != "" && hosts != nil && !hosts[strings.TrimPrefix(o, "http://")] {
			s.logger.Warn("refused a cross-origin HTTP request", "peer", r.RemoteAddr, "origin", o, "path", r.URL.Path)
			httpError(w, http.StatusForbidden, "cross-origin requests are refused")
			return
		}
		if auth != nil && r.URL.Path != "/healthz" && r.URL.Path != loginPath {
			switch present, ok := auth.bearer(r); {
			case present && !ok:
				s.refuse(w, r, "a wrong bearer token")
				return
			case !present && !auth.signedIn(r):
				s.refuse(w, r, "no token")
				return
			}
			markAuthenticated(r)
		}
		mux.ServeHTTP(w, r)
	})
}

// localHosts lists the Host values a daemon listening on a loopback addr
// answers to; nil (any) for another address, which needs a token.
func localHosts(addr string) map[string]bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || !config.Loopback(addr) {
		return nil
	}
	hosts := map[string]bool{addr: true}
	for _, h := range []string{"localhost", "127.0.0.1", "[::1]", host} {
		hosts[h+":"+port] = true
	}
	return hosts
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// writeJSON answers v as JSON. What cannot be written as JSON (a NaN
// that got past the boundaries that keep numbers finite) is a 500 that
// says so, not a 200 with an empty body, which the dashboard read as
// nothing to show at all.
func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		httpError(w, http.StatusInternalServerError, fmt.Sprintf("the daemon could not write its answer as JSON: %v; report this as a bug of hearth", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(append(b, '\n'))
}

// Snapshot is what the dashboard shows.
type Snapshot struct {
	Generated time.Time       `json:"generated"`
	Version   string          `json:"version"`
	DataDir   string          `json:"data_dir"`
	Started   time.Time       `json:"started"`
	Threshold float64         `json:"threshold"`
	Weights   matcher.Weights `json:"weights"`
	// Sessions are the sessions with a process or an open external
	// session; Dormant and Lost count the rest.
	Sessions  []hearth.SessionInfo `json:"sessions"`
	Dormant   int                  `json:"dormant"`
	Lost      int                  `json:"lost"`
	Decisions []hearth.Event       `json:"decisions"`
	Runs      []RunSummary         `json:"runs"`
	Today     Today                `json:"today"`
	// TraceURL is the telemetry block's trace_url: where the page links
	// a run's or a task's trace ID to ("{trace_id}" in it is replaced).
	TraceURL string `json:"trace_url,omitempty"`
}

// RunSummary is a run as the dashboard lists it.
type RunSummary struct {
	hearth.RunInfo
	// Quality is the mean of its current outputs' "quality" metric, when
	// any has one.
	Quality *float64 `json:"quality,omitempty"`
	// Retries counts failed attempts that were tried again.
	Retries int                  `json:"retries"`
	Tasks   []hearth.RunTaskInfo `json:"task_list"`
	// Tokens sums what a model agent's outputs report (plugins/model's
	// metrics), every attempt counted as its cost is; nil when no output
	// reports tokens.
	Tokens *Tokens `json:"tokens,omitempty"`
}

// Tokens is what a run's model calls used.
type Tokens struct {
	Input       float64 `json:"input"`
	CachedInput float64 `json:"cached_input"`
	Output      float64 `json:"output"`
	ToolCalls   float64 `json:"tool_calls"`
}

// Today sums up the runs that finished today (the daemon's local day),
// as the podcast seed's dashboard does.
type Today struct {
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	// AverageTime is the mean time from start to finish.
	AverageTime time.Duration `json:"average_time"`
	AverageCost float64       `json:"average_cost"`
	Quality     *float64      `json:"quality,omitempty"`
}

// Snapshot reads what the dashboard shows.
func (s *Server) Snapshot(ctx context.Context) (*Snapshot, error) {
	now := s.now()
	cfg := s.web.Config()
	st, err := s.web.Status(ctx)
	if err != nil {
		return nil, err
	}
	snap := &Snapshot{Generated: now, Version: st.Version, DataDir: st.DataDir, Started: st.Started,
		Threshold: cfg.Matcher.Threshold, Weights: cfg.Matcher.Weights, Sessions: []hearth.SessionInfo{}, Runs: []RunSummary{},
		TraceURL: cfg.Telemetry.TraceURL}
	sessions, err := s.web.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	for _, si := range sessions {
		switch si.Status {
		case "dormant":
			snap.Dormant++
		case "lost":
			snap.Lost++
		default:
			snap.Sessions = append(snap.Sessions, si)
		}
	}
	decs, err := s.web.RecentDecisions(snapshotDecisions)
	if err != nil {
		return nil, err
	}
	snap.Decisions = append([]hearth.Event{}, decs...)
	runs, err := s.web.Runs(ctx)
	if err != nil {
		return nil, err
	}
	midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
	var (
		took    time.Duration
		cost    float64
		quality []float64
	)
	for i, r := range runs {
		finishedToday := !r.Finished.Before(midnight) && (r.Status == hearth.RunCompleted || r.Status == hearth.RunFailed)
		if i >= snapshotRuns && !finishedToday {
			continue
		}
		sum, err := s.runSummary(ctx, r)
		if err != nil {
			// A run deleted between the list and now.
			continue
		}
		if i < snapshotRuns {
			snap.Runs = append(snap.Runs, sum)
		}
		if finishedToday {
			if r.Status == hearth.RunCompleted {
				snap.Today.Completed++
			} else {
				snap.Today.Failed++
			}
			took += r.Finished.Sub(r.Started)
			cost += r.Cost
			if sum.Quality != nil {
				quality = append(quality, *sum.Quality)
			}
		}
	}
	if n := snap.Today.Completed + snap.Today.Failed; n > 0 {
		snap.Today.AverageTime = took / time.Duration(n)
		snap.Today.AverageCost = cost / float64(n)
	}
	snap.Today.Quality = mean(quality)
	return snap, nil
}

func (s *Server) runSummary(ctx context.Context, r hearth.RunInfo) (RunSummary, error) {
	d, err := s.web.Run(ctx, r.ID)
	if err != nil {
		return RunSummary{}, err
	}
	sum := RunSummary{RunInfo: d.RunInfo, Tasks: d.TaskList}
	for _, t := range d.TaskList {
		sum.Retries += t.Failures
	}
	outs, err := s.web.RunOutputs(ctx, r.ID)
	if err != nil {
		return RunSummary{}, err
	}
	var q []float64
	for _, o := range outs {
		if v, ok := o.Metrics["quality"]; ok && o.Current {
			q = append(q, v)
		}
		if in, ok := o.Metrics["input_tokens"]; ok {
			if sum.Tokens == nil {
				sum.Tokens = &Tokens{}
			}
			sum.Tokens.Input += in
			sum.Tokens.CachedInput += o.Metrics["cached_input_tokens"]
			sum.Tokens.Output += o.Metrics["output_tokens"]
			sum.Tokens.ToolCalls += o.Metrics["tool_calls"]
		}
	}
	sum.Quality = mean(q)
	return sum, nil
}

func mean(v []float64) *float64 {
	if len(v) == 0 {
		return nil
	}
	var t float64
	for _, x := range v {
		t += x
	}
	m := t / float64(len(v))
	return &m
}

func (s *Server) serveSnapshot(w http.ResponseWriter, r *http.Request) {
	snap, err := s.Snapshot(r.Context())
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, snap)
}

func (s *Server) serveRun(w http.ResponseWriter, r *http.Request) {
	d, err := s.web.Run(r.Context(), r.PathValue("id"))
	if err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, hearth.ErrUnknownRun) {
			code = http.StatusNotFound
		}
		httpError(w, code, err.Error())
		return
	}
	writeJSON(w, d)
}

// ClusterView is what the dashboard's cluster view shows: the members
// as this host sees them (Clustered false for a host in no cluster;
// EtcdErr set while it cannot reach etcd, Hosts then being its last
// view), and the forwards in flight that it sends or runs.
type ClusterView struct {
	Generated time.Time `json:"generated"`
	hearth.Members
	Forwards []hearth.ForwardInFlight `json:"forwards"`
}

// ClusterView reads what the dashboard's cluster view shows.
func (s *Server) ClusterView(ctx context.Context) (*ClusterView, error) {
	v := &ClusterView{Generated: s.now()}
	if s.cluster != nil {
		var err error
		if v.Members, err = s.cluster.Members(ctx); err != nil {
			return nil, err
		}
		if v.Forwards, err = s.cluster.Forwards(ctx); err != nil {
			return nil, err
		}
	}
	if v.Hosts == nil {
		v.Hosts = []hearth.Member{}
	}
	if v.Forwards == nil {
		v.Forwards = []hearth.ForwardInFlight{}
	}
	return v, nil
}

func (s *Server) serveCluster(w http.ResponseWriter, r *http.Request) {
	v, err := s.ClusterView(r.Context())
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, v)
}

// serveEvents streams the host's events to the dashboard. Tool uses are
// not sent one by one: a "sessions" event says, at most every
// sseCoalesce, that fingerprints moved. The host never waits for a
// stream: one whose buffer is full misses events and is told how many
// ("missed"); past sseBehind it is told it was dropped ("dropped") and
// ends (docs/daemon.md, "The dashboard's event stream").
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		httpError(w, http.StatusInternalServerError, "streaming is not supported here")
		return
	}
	sub, err := s.web.Subscribe(r.Context(), hearth.EventFilter{ToolUses: true, Buffer: sseBuffer})
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	defer sub.Close()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": hearth events\n\n")
	flusher.Flush()

	coalesce := time.NewTicker(sseCoalesce)
	defer coalesce.Stop()
	heartbeat := time.NewTicker(sseHeartbeat)
	defer heartbeat.Stop()
	toolUses := 0
	rc := http.NewResponseController(w)
	var told uint64
	send := func(kind string, v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			// Not a reason to close the stream, but never silent: a
			// subscriber misses this event.
			s.logger.Error("an event could not be written as JSON to an event stream; report this as a bug of hearth", "kind", kind, "err", err)
			return true
		}
		_ = rc.SetWriteDeadline(time.Now().Add(sseWrite))
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", kind, b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	// behind tells a subscriber that missed events how many; one that
	// missed too many is dropped, told so, and reconnects.
	behind := func() bool {
		d := sub.Dropped()
		if d == told {
			return false
		}
		told = d
		if d > sseBehind {
			send("dropped", map[string]any{"missed": d, "reason": "this stream fell behind and is closed; reconnect to continue"})
			return true
		}
		return !send("missed", map[string]uint64{"missed": d})
	}
	for {
		if behind() {
			return
		}
		select {
		case e, ok := <-sub.Events():
			if !ok {
				return
			}
			if e.Kind == hearth.EventToolUsed {
				toolUses++
				continue
			}
			if !send("event", e) {
				return
			}
		case <-coalesce.C:
			if toolUses > 0 {
				if !send("sessions", map[string]int{"tool_uses": toolUses}) {
					return
				}
				toolUses = 0
			}
		case <-heartbeat.C:
			_ = rc.SetWriteDeadline(time.Now().Add(sseWrite))
			if _, err := fmt.Fprint(w, ": still here\n\n"); err != nil {
				return
			}
			flusher.Flush()
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		}
	}
}

// serveHook takes one Claude Code HTTP hook call. A call hearth cannot
// handle (a payload too big or broken, an agent that is not external, a
// failure of the host) is answered 200 with what the config's
// hooks.when_unreachable says: denied when failing closed and it is (or
// may be) a PreToolUse, and in every case a message the person sees
// (systemMessage). An error status would be a non-blocking error, which
// Claude Code lets through and shows only in its transcript. What is not
// a hook call at all (the wrong content type) is refused with a status.
func (s *Server) serveHook(w http.ResponseWriter, r *http.Request) {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		httpError(w, http.StatusUnsupportedMediaType, "a hook call is a JSON body, with Content-Type: application/json")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, claudecode.MaxPayload))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		err = fmt.Errorf("%w: more than the %d MiB a hook payload may have", claudecode.ErrPayload, claudecode.MaxPayload>>20)
	case err != nil:
		err = fmt.Errorf("read the hook payload: %w", err)
	}
	var out []byte
	if err == nil {
		ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		out, err = hook(ctx, s.web, "", r.URL.Query().Get("agent"), body)
		cancel()
	}
	if err != nil {
		deny := s.web.Config().Hooks.WhenUnreachable == config.HookDeny
		s.logger.Warn("could not handle a hook call", "error", err, "failing_closed", deny)
		why := text.FirstLine(err.Error())
		out = claudecode.Failed(claudecode.EventName(body), deny, why)
		w.Header().Set("X-Hearth-Error", text.Safe(why))
	}
	w.Header().Set("Content-Type", "application/json")
	if len(out) == 0 {
		w.WriteHeader(http.StatusOK)
		return
	}
	_, _ = w.Write(out)
}
