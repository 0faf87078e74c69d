package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/sdk"
)

// Options configure a server.
type Options struct {
	// Version is hearth's version, told to clients; when empty, the
	// host's, if the Service is a hearth.StatusReader.
	Version string
	// Agents are the configured agents, named in submit_task's and
	// place_task's descriptions; when empty, the host's, if the Service
	// is a hearth.StatusReader. Unknown, the descriptions name none, and
	// the error for an unknown agent lists them all the same.
	Agents []hearth.AgentStatus
	// Logger, when set, logs the SDK's activity.
	Logger *slog.Logger
}

// statusTimeout bounds New's question to the host for its version and
// agents.
const statusTimeout = 5 * time.Second

// New returns an MCP server with hearth's tools and resources over svc.
// Connect it to a transport (Run with &gomcp.StdioTransport{}), or serve
// it over HTTP with Handler. The engine and the daemon's client are more
// than a Service: as a hearth.EventSource, svc gives submit_task its
// progress notifications; as a hearth.StatusReader, the version and the
// agents opts leaves out.
func New(svc hearth.Service, opts Options) *gomcp.Server {
	s := &server{svc: svc, opts: opts}
	if src, ok := svc.(hearth.EventSource); ok {
		s.events = src
	}
	if sr, ok := svc.(hearth.StatusReader); ok && (opts.Version == "" || len(opts.Agents) == 0) {
		ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
		if st, err := sr.Status(ctx); err == nil {
			s.opts.Version = cmpOr(s.opts.Version, st.Version)
			if len(s.opts.Agents) == 0 {
				s.opts.Agents = st.Agents
			}
		}
		cancel()
	}
	srv := gomcp.NewServer(&gomcp.Implementation{Name: "hearth", Title: "hearth", Version: cmpOr(opts.Version, "dev")}, &gomcp.ServerOptions{
		Instructions: instructions,
		Logger:       opts.Logger,
		Capabilities: &gomcp.ServerCapabilities{},
	})
	s.tools(srv)
	s.resources(srv)
	return srv
}

// sessionTimeout is how long an MCP session over HTTP may go without a
// request before it is closed.
const sessionTimeout = time.Hour

// Handler serves srv over streamable HTTP, one MCP session per client.
// Authentication is the caller's: the daemon mounts it behind its token.
func Handler(srv *gomcp.Server) http.Handler {
	return gomcp.NewStreamableHTTPHandler(func(*http.Request) *gomcp.Server { return srv }, &gomcp.StreamableHTTPOptions{
		// The daemon checks Host and Origin itself, for every route and
		// with its own address; the SDK's check knows only loopback.
		DisableLocalhostProtection: true,
		// A client that went away without ending its session (most do
		// not send the DELETE) leaves it behind until then.
		SessionTimeout: sessionTimeout,
	})
}

const instructions = `hearth runs AI agent sessions and keeps each one warm: a session remembers the files, directories and technologies it has worked with. Hand a part of your job to hearth with submit_task, and say what it is about in the hints (files, directories, technologies): hearth then runs it on the session that already knows that part of the code, which answers faster and cheaper than a fresh one. place_task says where a task would go without running it. Runs are pipelines of tasks from a config file: start_run starts one and follows it.`

type server struct {
	svc hearth.Service
	// events follows a submitted task for its progress; nil when the
	// Service is no hearth.EventSource.
	events hearth.EventSource
	opts   Options
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// agentField is the description of a tool's agent argument.
func (s *server) agentField() string {
	d := "The configured agent to run the task, by name."
	if len(s.opts.Agents) == 0 {
		return d + " An unknown name is refused with the list of configured agents."
	}
	var b strings.Builder
	b.WriteString(d + " One of:")
	for i, a := range s.opts.Agents {
		if i > 0 {
			b.WriteString(";")
		}
		b.WriteString(" " + a.Name)
		if a.External != "" {
			b.WriteString(" (external " + a.External + " sessions: place_task only)")
		}
	}
	b.WriteString(".")
	return b.String()
}

// hintsDoc says what hints are for, in every tool that takes them.
const hintsDoc = "Hints say what the task is about, so that hearth places it on the session that already knows it: "

// submitInput is submit_task's arguments.
type submitInput struct {
	Agent        string   `json:"agent"`
	Prompt       string   `json:"prompt" jsonschema:"What the agent should do, in its own words; it reaches the agent exactly as written."`
	Name         string   `json:"name,omitempty" jsonschema:"A short name for the task, shown in hearth's records."`
	Files        []string `json:"files,omitempty" jsonschema:"Files the task will read or change, relative to the agent's workspace (hint)."`
	Directories  []string `json:"directories,omitempty" jsonschema:"Directories the task will work in, such as a package's directory (hint; the strongest one)."`
	Technologies []string `json:"technologies,omitempty" jsonschema:"Technologies the task involves, such as go or sql (hint)."`
}

func (in submitInput) hints() sdk.Hints {
	return sdk.Hints{Files: in.Files, Directories: in.Directories, Technologies: in.Technologies}
}

// placeInput is place_task's arguments.
type placeInput struct {
	Agent        string   `json:"agent"`
	Files        []string `json:"files,omitempty" jsonschema:"Files the task would read or change (hint)."`
	Directories  []string `json:"directories,omitempty" jsonschema:"Directories the task would work in (hint; the strongest one)."`
	Technologies []string `json:"technologies,omitempty" jsonschema:"Technologies the task would involve (hint)."`
}

type sessionInput struct {
	Session string `json:"session" jsonschema:"The session's ID, as list_sessions or a submit_task result gives it."`
	Events  int    `json:"events,omitempty" jsonschema:"How many of its latest events to include (default 20)."`
}

type runInput struct {
	Run string `json:"run" jsonschema:"The run's ID, or any prefix of it no other run shares."`
}

type startRunInput struct {
	Config   string                     `json:"config" jsonschema:"The config file (or a directory holding hearth.hcl) that defines the pipeline, as an absolute path."`
	Pipeline string                     `json:"pipeline,omitempty" jsonschema:"The pipeline to run; may be left out when the file has one."`
	State    map[string]json.RawMessage `json:"state,omitempty" jsonschema:"Sections of the run's state document to set before it starts, such as {\"inputs\": {\"topic\": \"tides\"}}."`
	Budget   float64                    `json:"budget,omitempty" jsonschema:"The run's budget, replacing the pipeline's."`
	Wait     *bool                      `json:"wait,omitempty" jsonschema:"Wait for the run to stop, with progress notifications (default true); false returns its ID at once."`
}

type listInput struct {
	Limit int `json:"limit,omitempty" jsonschema:"At most this many, most recently active first (default 50)."`
}

func (s *server) tools(srv *gomcp.Server) {
	readOnly := &gomcp.ToolAnnotations{ReadOnlyHint: true}
	submit := &gomcp.Tool{
		Name:  "submit_task",
		Title: "Submit a task to a warm agent session",
		Description: "Run one task on an agent session and wait for its result. " + hintsDoc +
			"a task about a package whose directory was read before lands on the session that read it (action \"reused\") instead of a new one (\"spawned\"). " +
			"Give the package's directory whenever the task is about one. The answer is the agent's output, the session it ran on, how it was placed and why, and what the agent learned. " +
			"Progress notifications follow the task while it runs. A task a guard refuses, or that fails, comes back as an error that says what to change.",
	}
	submit.InputSchema = withAgent[submitInput](s)
	gomcp.AddTool(srv, submit, s.submit)

	place := &gomcp.Tool{
		Name:        "place_task",
		Title:       "Say where a task would run",
		Description: "Say which session a task would run on now, and why, without running anything: every candidate session with its score per factor (directory, file, technology, freshness, load) and what hearth would do (reuse a warm session above the threshold, rehydrate a dormant one, or spawn a new one). " + hintsDoc + "the same ones submit_task takes.",
		Annotations: readOnly,
	}
	place.InputSchema = withAgent[placeInput](s)
	gomcp.AddTool(srv, place, s.place)

	gomcp.AddTool(srv, &gomcp.Tool{
		Name:        "list_sessions",
		Title:       "List agent sessions",
		Description: "List hearth's agent sessions, live and dormant, most recently active first: each one's agent, status, load, tasks run, and the files, directories and technologies it knows (its fingerprint). A session that knows a task's directory is where submit_task will send it.",
		Annotations: readOnly,
	}, s.listSessions)
	gomcp.AddTool(srv, &gomcp.Tool{
		Name:        "show_session",
		Title:       "Show one session",
		Description: "Show one session: what it knows, its latest events (tool uses, tasks) and the placement decisions that involved it.",
		Annotations: readOnly,
	}, s.showSession)
	gomcp.AddTool(srv, &gomcp.Tool{
		Name:  "start_run",
		Title: "Start a pipeline run",
		Description: "Start a run of a pipeline (a graph of tasks) defined in a hearth config file, and follow it until it stops, with a progress notification as each task finishes. " +
			"The answer is the run as it stopped: its status, each task's status, and its cost. A run that fails or pauses is an error naming the task and the reason; resume it with the hearth CLI (hearth runs resume ID).",
	}, s.startRun)
	gomcp.AddTool(srv, &gomcp.Tool{
		Name:        "list_runs",
		Title:       "List runs",
		Description: "List the pipeline runs, most recently active first, with their status and progress.",
		Annotations: readOnly,
	}, s.listRuns)
	gomcp.AddTool(srv, &gomcp.Tool{
		Name:        "show_run",
		Title:       "Show one run",
		Description: "Show one run: its status, each task's status, its state document and its files.",
		Annotations: readOnly,
	}, s.showRun)
}

// withAgent is the input schema of In, its agent argument described
// with the configured agents.
func withAgent[In any](s *server) *jsonschema.Schema {
	sc, err := jsonschema.For[In](nil)
	if err != nil {
		// The input types are this file's: a test builds every schema.
		panic(fmt.Sprintf("hearth's MCP tool input %T has no schema: %v", *new(In), err))
	}
	sc.Properties["agent"].Description = s.agentField()
	return sc
}

// submit is submit_task.
func (s *server) submit(ctx context.Context, req *gomcp.CallToolRequest, in submitInput) (*gomcp.CallToolResult, any, error) {
	if strings.TrimSpace(in.Prompt) == "" {
		return nil, nil, errors.New("the prompt is empty; say what the agent should do")
	}
	t := hearth.Task{Agent: in.Agent, ID: "task-" + sdk.NewID("mcp"), Name: in.Name, Prompt: in.Prompt, Hints: in.hints()}
	stop := s.progress(ctx, req, t.ID)
	out, err := s.svc.Submit(ctx, t)
	stop()
	if err != nil {
		return nil, nil, s.toolError(in.Agent, err)
	}
	return text(renderOutcome(out)), out, nil
}

func (s *server) place(ctx context.Context, _ *gomcp.CallToolRequest, in placeInput) (*gomcp.CallToolResult, any, error) {
	d, err := s.svc.Place(ctx, in.Agent, sdk.Hints{Files: in.Files, Directories: in.Directories, Technologies: in.Technologies})
	if err != nil {
		return nil, nil, s.toolError(in.Agent, err)
	}
	return text(renderDecision(d)), d, nil
}

func (s *server) listSessions(ctx context.Context, _ *gomcp.CallToolRequest, in listInput) (*gomcp.CallToolResult, any, error) {
	all, err := s.svc.Sessions(ctx)
	if err != nil {
		return nil, nil, err
	}
	all = all[:min(len(all), limitOr(in.Limit))]
	return text(renderSessions(all)), map[string]any{"sessions": all}, nil
}

func (s *server) showSession(ctx context.Context, _ *gomcp.CallToolRequest, in sessionInput) (*gomcp.CallToolResult, any, error) {
	d, err := s.svc.Session(ctx, in.Session, eventsOr(in.Events))
	if err != nil {
		return nil, nil, s.toolError("", err)
	}
	return text(renderSession(d)), d, nil
}

func (s *server) listRuns(ctx context.Context, _ *gomcp.CallToolRequest, in listInput) (*gomcp.CallToolResult, any, error) {
	all, err := s.svc.Runs(ctx)
	if err != nil {
		return nil, nil, err
	}
	all = all[:min(len(all), limitOr(in.Limit))]
	return text(renderRuns(all)), map[string]any{"runs": all}, nil
}

func (s *server) showRun(ctx context.Context, _ *gomcp.CallToolRequest, in runInput) (*gomcp.CallToolResult, any, error) {
	d, err := s.svc.Run(ctx, in.Run)
	if err != nil {
		return nil, nil, s.toolError("", err)
	}
	return text(renderRun(d)), d, nil
}

func (s *server) startRun(ctx context.Context, req *gomcp.CallToolRequest, in startRunInput) (*gomcp.CallToolResult, any, error) {
	if in.Config == "" {
		return nil, nil, errors.New("config is empty; give the path of the hearth config file that defines the pipeline")
	}
	w, err := s.svc.StartRun(ctx, hearth.RunSpec{PipelineName: in.Pipeline,
		RunOptions: hearth.RunOptions{State: in.State, Budget: in.Budget, Config: in.Config}})
	if err != nil {
		return nil, nil, s.toolError("", err)
	}
	defer w.Close()
	if in.Wait != nil && !*in.Wait {
		info := hearth.RunInfo{ID: w.ID(), Status: hearth.RunRunning}
		return text(fmt.Sprintf("run %s started; show_run %s says how it goes", w.ID(), w.ID())), info, nil
	}
	n := 0
	notify := s.notifier(ctx, req)
	for e := range w.Events() {
		if e.Kind != hearth.EventRunTask && e.Kind != hearth.EventRunStatus {
			continue
		}
		n++
		notify(float64(n), 0, runEventLine(e))
	}
	info, err := w.Wait(ctx)
	if err != nil {
		return nil, nil, s.toolError("", err)
	}
	return text(renderRunInfo(info)), info, nil
}

// text is a tool result with one text block.
func text(s string) *gomcp.CallToolResult {
	return &gomcp.CallToolResult{Content: []gomcp.Content{&gomcp.TextContent{Text: s}}}
}

func limitOr(n int) int {
	if n <= 0 {
		return 50
	}
	return n
}

func eventsOr(n int) int {
	if n <= 0 {
		return 20
	}
	return n
}

// toolError is err as a model can act on it: what went wrong and what to
// change. agent is the agent the call named, if any.
func (s *server) toolError(agent string, err error) error {
	var denied *hearth.DeniedError
	switch {
	case errors.Is(err, hearth.ErrUnknownAgent):
		names := make([]string, 0, len(s.opts.Agents))
		for _, a := range s.opts.Agents {
			names = append(names, a.Name)
		}
		if len(names) > 0 && !strings.Contains(err.Error(), "configured agents") {
			return fmt.Errorf("%v; configured agents: %s. Call again with one of them as agent", err, strings.Join(names, ", "))
		}
		return fmt.Errorf("%v. Call again with one of the configured agents as agent", err)
	case errors.As(err, &denied):
		return fmt.Errorf("guard %q refused the task: %s. Change the task so that the guard allows it (its prompt or hints), or ask the operator about the guard", denied.Guard, denied.Message)
	case errors.Is(err, hearth.ErrDenied):
		return fmt.Errorf("%v. Change the task so that the guard allows it, or ask the operator about the guard", err)
	case errors.Is(err, hearth.ErrExternalAgent):
		return fmt.Errorf("%v. Use place_task to find the session to resume instead", err)
	case errors.Is(err, hearth.ErrUnknownSession):
		return fmt.Errorf("%v. list_sessions gives the sessions' IDs", err)
	case errors.Is(err, hearth.ErrUnknownRun):
		return fmt.Errorf("%v. list_runs gives the runs' IDs", err)
	case errors.Is(err, hearth.ErrClosed):
		return fmt.Errorf("%v. Try again once hearth is back", err)
	}
	var runErr *hearth.RunError
	if errors.As(err, &runErr) {
		return fmt.Errorf("%v. show_run %s says which task stopped it; the hearth CLI resumes it (hearth runs resume %s)", err, runErr.Run, runErr.Run)
	}
	if agent != "" {
		return fmt.Errorf("the task failed on agent %s: %v. Read the error; change the prompt or hints and submit again, or try another agent", agent, err)
	}
	return err
}
