package cluster

import "errors"

// The package's sentinel errors; the errors it returns wrap one of them.
var (
	// ErrInvalidConfig is wrapped by every error Config.Validate returns.
	ErrInvalidConfig = errors.New("invalid cluster config")
	// ErrBadRecord is wrapped by errors about a key or value read from
	// etcd that this host cannot use: written by another version, by hand,
	// or damaged. The record is left out; the host goes on.
	ErrBadRecord = errors.New("unreadable cluster record")
	// ErrHostIDInUse: another live host (another machine or data
	// directory) is registered under this host's ID.
	ErrHostIDInUse = errors.New("host ID in use")
	// ErrRefused is wrapped by a forward's error when the target host
	// answered that it will not run the task: it did not start it, so the
	// task may go elsewhere.
	ErrRefused = errors.New("forward refused")
	// ErrUnreachable is wrapped by a forward's error when the request
	// never reached the target (dialing failed): the task did not start
	// there.
	ErrUnreachable = errors.New("host unreachable")
	// ErrInterrupted is wrapped by a forward's error when the target host
	// had accepted the task under its key and stopped it before it
	// finished: it restarted (a crash, a shutdown) or lost its lease. The
	// task is not running there and its result is lost; it may have done
	// part of its work. The host never runs that key again; the
	// forwarding host places the task elsewhere, as it does when a host
	// leaves the cluster mid-task.
	ErrInterrupted = errors.New("the host running the task stopped it before it finished")
	// ErrFenced is wrapped by the error of work a host stopped, or whose
	// result it refused, because the lease the work ran under is lost or
	// no longer held for certain (see Held): the result is stale.
	ErrFenced = errors.New("the cluster lease the work ran under is lost")
	// ErrExhausted: every attempt a forward was allowed failed.
	ErrExhausted = errors.New("no host could run the task")
	// ErrNoHost: no member runs the agent.
	ErrNoHost = errors.New("no member runs the agent")
)
