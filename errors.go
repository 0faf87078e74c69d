package hearth

import (
	"errors"
	"fmt"
	"strings"
)

// Errors of hearth's services. Every engine and client error that callers
// may act on wraps one of them: test with errors.Is. The daemon's client
// maps each across the socket, so errors.Is works the same on both sides.
var (
	// ErrClosed is returned for work submitted to a host that is shutting
	// down.
	ErrClosed = errors.New("host is shutting down")
	// ErrUnknownAgent is returned for a task naming no configured agent.
	ErrUnknownAgent = errors.New("no such agent")
	// ErrUnknownSession is returned for a session ID the host never had.
	ErrUnknownSession = errors.New("no such session")
	// ErrRehydrate: a dormant session's state was refused by its agent.
	ErrRehydrate = errors.New("cannot rehydrate the session")
	// ErrDenied is wrapped by the error of a task a task_admission guard
	// refused; see DeniedError.
	ErrDenied = errors.New("denied by a guard")
	// ErrUnchecked is wrapped by the error of a task that reported a
	// guarded tool use it never asked about, when checks are required.
	ErrUnchecked = errors.New("tool use not checked with the host")
	// ErrDenialIgnored is wrapped by the error of a task whose agent was
	// denied a tool call and reported it done anyway: always, whether
	// checks are required or not.
	ErrDenialIgnored = errors.New("a denied tool use was reported done")
	// ErrConfig is wrapped by the errors of a config file that does not
	// load, or of a pipeline it does not have: the message holds every
	// problem, at file:line:col.
	ErrConfig = errors.New("invalid config")

	// ErrExternalAgent is returned for a task submitted to an external
	// agent.
	ErrExternalAgent = errors.New("the agent is external: hearth follows its sessions through hooks but cannot run tasks on them")
	// ErrNotExternal is returned for a hook report naming an agent that
	// hearth runs itself.
	ErrNotExternal = errors.New("not an external agent")
	// ErrSessionID is returned for an external session ID hearth cannot
	// keep.
	ErrSessionID = errors.New("invalid session ID")
	// ErrHookPayload is wrapped by every error about a hook payload an
	// external agent's hook sent (claudecode.Parse).
	ErrHookPayload = errors.New("bad Claude Code hook payload")

	// ErrUnknownRun is returned for a run ID the store does not have.
	ErrUnknownRun = errors.New("no such run")
	// ErrRunActive is returned for an operation that needs the run to be
	// stopped (revisit, delete) while a host is running it.
	ErrRunActive = errors.New("the run is running")
	// ErrRunInvalid is wrapped by the error of a resume that found the
	// run's records inconsistent; see InvalidRunError.
	ErrRunInvalid = errors.New("the run's records are inconsistent")
	// ErrIllegalTransition is wrapped by the error of a status change the
	// run lifecycle does not allow; see TransitionError.
	ErrIllegalTransition = errors.New("illegal transition")
	// ErrNoSpace is wrapped by the error of a write the store refused
	// because the data directory's disk is below its min_free_space: free
	// space (or lower the setting), then resume what paused. Its message
	// says how much there is and how much is needed.
	ErrNoSpace = errors.New("not enough free space")

	// Errors a plugin can cause. A *PluginError wraps one of them.

	// ErrPluginStart: the plugin's program could not be started at all.
	ErrPluginStart = errors.New("plugin could not be started")
	// ErrProgramMissing: the plugin's program does not exist or cannot be
	// run; it also wraps ErrPluginStart.
	ErrProgramMissing = errors.New("plugin program not found")
	// ErrChecksumMismatch: the program does not match its pinned sha256.
	ErrChecksumMismatch = errors.New("plugin program does not match its pinned sha256")
	// ErrConfinement: the plugin cannot be confined as its agent block
	// asks (confinement = "require" where Landlock is unavailable, a
	// granted path that does not exist or lies in the data directory).
	ErrConfinement = errors.New("plugin cannot be confined as configured")
	// ErrStartTimeout: the plugin did not finish the handshake in time.
	ErrStartTimeout = errors.New("plugin did not finish the handshake in time")
	// ErrHandshake: the plugin spoke something other than the handshake.
	ErrHandshake = errors.New("plugin failed the handshake")
	// ErrProtocolVersion: host and plugin share no protocol version.
	ErrProtocolVersion = errors.New("plugin speaks an unsupported protocol version")
	// ErrPluginExited: the plugin process exited while the host needed it.
	ErrPluginExited = errors.New("plugin process exited")
	// ErrPluginHung: the plugin stopped answering, or did not finish a task
	// by its deadline, and was stopped.
	ErrPluginHung = errors.New("plugin stopped responding")
	// ErrUnvouched: the plugin stopped its task and closed its connection
	// because its host did not answer within the bound a cluster host
	// sets (sdk/plugin's EnvVouch): the host was paused or starved, not
	// the plugin broken. The task did not finish and may have done part
	// of its work; a cluster places it again rather than fail it.
	ErrUnvouched = errors.New("plugin stopped its task: its host did not answer in time")
)

// PluginError is a failure of one plugin process: which agent and session,
// what the host was doing, what went wrong, and how to fix it where that is
// known.
type PluginError struct {
	Agent   string
	Session string
	// Op is what the host was doing: "start", "run task task-1", ...
	Op string
	// Err is one of the ErrPlugin* sentinels above, or the underlying
	// error.
	Err error
	// Detail is what the plugin or go-plugin said.
	Detail string
	// Hint says how to fix the problem, when the host can tell.
	Hint string
	// Stderr holds the last lines the plugin wrote to stderr.
	Stderr []string
}

func (e *PluginError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "agent %q (session %s): %s: %v", e.Agent, e.Session, e.Op, e.Err)
	if e.Detail != "" {
		fmt.Fprintf(&b, ": %s", e.Detail)
	}
	if e.Hint != "" {
		fmt.Fprintf(&b, "; %s", e.Hint)
	}
	if len(e.Stderr) > 0 {
		fmt.Fprintf(&b, "\nlast lines of the plugin's stderr:\n  %s", strings.Join(e.Stderr, "\n  "))
	}
	return b.String()
}

func (e *PluginError) Unwrap() error { return e.Err }

// DeniedError is a task refused by a task_admission guard.
type DeniedError struct {
	Task    string
	Guard   string
	Message string
}

func (e *DeniedError) Error() string {
	return fmt.Sprintf("task %s was denied by guard %q: %s", e.Task, e.Guard, e.Message)
}

func (e *DeniedError) Unwrap() error { return ErrDenied }

// RunError is the error of a run that did not complete: it failed, was
// paused or was cancelled. Reason is the run's report.
type RunError struct {
	Run    string
	Status RunStatus
	Reason string
}

func (e *RunError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("run %s %s", e.Run, e.Status)
	}
	return fmt.Sprintf("run %s %s: %s", e.Run, e.Status, e.Reason)
}

// Problem is one inconsistency validation found in a run's records.
type Problem struct {
	Task    string `json:"task,omitempty"`
	Message string `json:"message"`
	// Repair says what resuming with Repair does about it; empty when it
	// cannot be repaired.
	Repair string `json:"repair,omitempty"`
}

// InvalidRunError is a resume refused because the run's records are
// inconsistent: outputs or files that no longer exist, statuses that
// contradict each other.
type InvalidRunError struct {
	Run      string
	Problems []Problem
}

func (e *InvalidRunError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "run %s cannot be resumed as it is: %d problem(s) found", e.Run, len(e.Problems))
	repairable := true
	for _, p := range e.Problems {
		b.WriteString("\n  - ")
		if p.Task != "" {
			b.WriteString("task " + p.Task + ": ")
		}
		b.WriteString(p.Message)
		if p.Repair != "" {
			b.WriteString(" (repair: " + p.Repair + ")")
		} else {
			repairable = false
		}
	}
	if repairable {
		fmt.Fprintf(&b, "\nresume with repair (hearth runs resume %s --repair) to do what each problem says", e.Run)
	} else {
		b.WriteString("\nsome problems cannot be repaired: restore the data directory from a backup, or fork the run from an earlier checkpoint")
	}
	return b.String()
}

func (e *InvalidRunError) Unwrap() error { return ErrRunInvalid }

// TransitionError is a status change the lifecycle does not allow, such
// as resuming a cancelled run.
type TransitionError struct {
	Run  string
	Task string // empty for the run's own status
	From string
	To   string
}

func (e *TransitionError) Error() string {
	if e.Task != "" {
		return fmt.Sprintf("run %s: task %s cannot go from %s to %s", e.Run, e.Task, e.From, e.To)
	}
	return fmt.Sprintf("run %s is %s; it cannot become %s", e.Run, e.From, e.To)
}

func (e *TransitionError) Unwrap() error { return ErrIllegalTransition }
