package runs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/pool"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/internal/text"
	"github.com/hearth-dev/hearth/sdk"
)

// maxSection bounds one section of a run's state document: the whole
// document travels with every checkpoint.
const maxSection = 1 << 20

// These are the run methods of a task's calls (pool.Run): the run's state
// document, checkpoints, files and chunk progress. Each write is durable
// when the method returns.

var _ pool.Run = (*runExec)(nil)

// ownerError says an agent went outside its sections.
func ownerError(r *runExec, agent, verb, section string) error {
	o := r.pipe.State.Owner(agent)
	var own string
	switch {
	case o == nil:
		own = "it has no owner block, so it writes nothing"
	case verb == "write":
		own = "it writes " + text.OrNone(o.Writes)
	default:
		own = "it reads " + text.OrNone(o.Reads)
	}
	return fmt.Errorf("agent %q may not %s section %q of run %s's state; %s (the pipeline's state owner blocks decide): %w",
		agent, verb, section, r.id, own, sdk.ErrNotOwner)
}

// State returns a section of the state document, or the whole of what
// agent may read when section is "".
func (r *runExec) State(_ context.Context, agent, section string) (json.RawMessage, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if section != "" {
		if !r.pipe.State.CanRead(agent, section) {
			return nil, ownerError(r, agent, "read", section)
		}
		return slices.Clone(r.state[section]), nil
	}
	view := make(map[string]json.RawMessage, len(r.state))
	for k, v := range r.state {
		if r.pipe.State.CanRead(agent, k) {
			view[k] = v
		}
	}
	return json.Marshal(view)
}

// SetState replaces a section of the state document for agent, in task.
func (r *runExec) SetState(ctx context.Context, agent, task, section string, value any) error {
	if strings.TrimSpace(section) == "" {
		return fmt.Errorf("write run state: name the top-level section to write: %w", sdk.ErrPermanent)
	}
	var (
		b   []byte
		err error
	)
	switch v := value.(type) {
	case nil:
	case json.RawMessage:
		b = v
	default:
		if b, err = json.Marshal(value); err != nil {
			return fmt.Errorf("state section %q: %w", section, err)
		}
	}
	if len(b) > 0 && !json.Valid(b) {
		return fmt.Errorf("state section %q: value is not valid JSON", section)
	}
	if len(b) > maxSection {
		return fmt.Errorf("state section %q: %d bytes is more than the %d a section may hold; keep large data in files: %w", section, len(b), maxSection, sdk.ErrPermanent)
	}
	r.mu.Lock()
	if !r.pipe.State.CanWrite(agent, section) {
		r.mu.Unlock()
		return ownerError(r, agent, "write", section)
	}
	if len(b) == 0 || bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		delete(r.state, section)
	} else {
		r.state[section] = slices.Clone(b)
	}
	if err := r.stateJSONLocked(); err != nil {
		r.mu.Unlock()
		return err
	}
	r.touchLocked()
	r.emit(hearth.Event{Kind: hearth.EventRunState, Agent: agent, Task: task, Message: fmt.Sprintf("%s wrote section %s (%d bytes)", agent, section, len(b))})
	pend := r.saveLocked(record.RunWrite{})
	r.mu.Unlock()
	return pend.Wait(ctx)
}

// Checkpoint writes a checkpoint asked for by task.
func (r *runExec) Checkpoint(ctx context.Context, task, label string) (uint64, error) {
	if label = strings.TrimSpace(label); label == "" {
		label = "requested by " + task
	}
	r.mu.Lock()
	r.touchLocked()
	pend, seq := r.checkpointLocked(label, task, record.RunWrite{})
	r.mu.Unlock()
	if err := pend.Wait(ctx); err != nil {
		return 0, err
	}
	return seq, nil
}

// Files lists the files attached to the run.
func (r *runExec) Files(context.Context) ([]sdk.File, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append(make([]sdk.File, 0, len(r.head.Files)), r.m.d.Store.Files(r.head.Files)...), nil
}

func (r *runExec) hasFileLocked(name string) bool {
	return slices.ContainsFunc(r.head.Files, func(f record.File) bool { return f.Name == name })
}

func (r *runExec) fileNamesLocked() []string {
	var out []string
	for _, f := range r.head.Files {
		out = append(out, f.Name)
	}
	return out
}

// DoneChunks returns the chunks of file marked done, in increasing
// order.
func (r *runExec) DoneChunks(_ context.Context, file string) ([]int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.hasFileLocked(file) {
		return nil, fmt.Errorf("run %s has no file %q; its files: %s", r.id, file, text.OrNone(r.fileNamesLocked()))
	}
	return append(make([]int, 0, len(r.head.Chunks[file])), r.head.Chunks[file]...), nil
}

// MarkChunk records that chunk of file is done.
func (r *runExec) MarkChunk(ctx context.Context, file string, chunk int) error {
	r.mu.Lock()
	if !r.hasFileLocked(file) {
		r.mu.Unlock()
		return fmt.Errorf("mark chunk %d: run %s has no file %q; its files: %s", chunk, r.id, file, text.OrNone(r.fileNamesLocked()))
	}
	if r.head.Chunks == nil {
		r.head.Chunks = make(map[string][]int)
	}
	done := r.head.Chunks[file]
	k, found := slices.BinarySearch(done, chunk)
	if found {
		r.mu.Unlock()
		return nil // marked already: idempotent by file and chunk
	}
	r.head.Chunks[file] = slices.Insert(done, k, chunk)
	r.touchLocked()
	pend := r.saveLocked(record.RunWrite{})
	r.mu.Unlock()
	return pend.Wait(ctx)
}

// Succeeded keeps an attempt's task.succeeded event for its outcome,
// which writes it with the record of the success (outcome, saveLocked).
// An attempt whose success is not recorded (its round was reset, its
// output too large) drops it: it is never said to have succeeded.
func (r *runExec) Succeeded(e hearth.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.succeeded == nil {
		r.succeeded = make(map[string]hearth.Event)
	}
	r.succeeded[e.Task] = e
}

// Progress notes a running attempt's reported cost.
func (r *runExec) Progress(taskID string, cost float64) {
	r.mu.Lock()
	r.progressCost[taskID] = cost
	r.touchLocked()
	r.mu.Unlock()
}
