package host

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hearth-dev/hearth/host/store"
	"github.com/hearth-dev/hearth/host/store/storepb"
	"github.com/hearth-dev/hearth/sdk"
)

// maxSection bounds one section of a run's state document: the whole
// document travels with every checkpoint.
const maxSection = 1 << 20

// These are the methods of sdk.RunHost for a task of a run: the run's
// state document, checkpoints, files and chunk progress. Each write is
// durable when the method returns.

// runOf returns the task's run. Only the task of a run is given these
// methods, but its run may have ended since (a cancelled run's straggler):
// that is a permanent failure.
func (th *taskHost) runOf() (*runExec, error) {
	if th.run == nil {
		return nil, sdk.Permanent(fmt.Errorf("task %s: its run %q is not running on this host; the task's work there is over", th.task, th.t.Run))
	}
	return th.run, nil
}

func (th *taskHost) agent() string { return th.s.pool.cfg().Name }

// ownerError says an agent went outside its sections.
func ownerError(r *runExec, agent, verb, section string) error {
	o := r.pipe.State.Owner(agent)
	var own string
	switch {
	case o == nil:
		own = "it has no owner block, so it writes nothing"
	case verb == "write":
		own = "it writes " + orNone(o.Writes)
	default:
		own = "it reads " + orNone(o.Reads)
	}
	return fmt.Errorf("agent %q may not %s section %q of run %s's state; %s (the pipeline's state owner blocks decide): %w",
		agent, verb, section, r.id, own, sdk.ErrNotOwner)
}

func (th *taskHost) State(_ context.Context, section string) (json.RawMessage, error) {
	r, err := th.runOf()
	if err != nil {
		return nil, err
	}
	agent := th.agent()
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

func (th *taskHost) SetState(ctx context.Context, section string, value any) error {
	r, err := th.runOf()
	if err != nil {
		return err
	}
	if strings.TrimSpace(section) == "" {
		return fmt.Errorf("write run state: name the top-level section to write: %w", sdk.ErrPermanent)
	}
	var b []byte
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
	agent := th.agent()
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
	r.emit(Event{Kind: EventRunState, Agent: agent, Task: th.t.Name, Message: fmt.Sprintf("%s wrote section %s (%d bytes)", agent, section, len(b))})
	pend := r.saveLocked(store.RunWrite{})
	r.mu.Unlock()
	return pend.Wait(ctx)
}

func (th *taskHost) Checkpoint(ctx context.Context, label string) (uint64, error) {
	r, err := th.runOf()
	if err != nil {
		return 0, err
	}
	if label = strings.TrimSpace(label); label == "" {
		label = "requested by " + th.t.Name
	}
	r.mu.Lock()
	r.touchLocked()
	pend, seq := r.checkpointLocked(label, th.t.Name, store.RunWrite{})
	r.mu.Unlock()
	if err := pend.Wait(ctx); err != nil {
		return 0, err
	}
	return seq, nil
}

func (th *taskHost) Files(context.Context) ([]sdk.File, error) {
	r, err := th.runOf()
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]sdk.File, 0, len(r.head.GetFiles()))
	for _, f := range r.head.GetFiles() {
		out = append(out, sdk.File{Name: f.GetName(), Path: r.h.store.BlobPath(f.GetSha256()), SHA256: f.GetSha256(), Size: f.GetSize()})
	}
	return out, nil
}

func (r *runExec) hasFileLocked(name string) bool {
	return slices.ContainsFunc(r.head.GetFiles(), func(f *storepb.RunFile) bool { return f.GetName() == name })
}

func (r *runExec) fileNamesLocked() []string {
	var out []string
	for _, f := range r.head.GetFiles() {
		out = append(out, f.GetName())
	}
	return out
}

func (th *taskHost) DoneChunks(_ context.Context, file string) ([]int, error) {
	r, err := th.runOf()
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.hasFileLocked(file) {
		return nil, fmt.Errorf("run %s has no file %q; its files: %s", r.id, file, orNone(r.fileNamesLocked()))
	}
	done := r.head.GetChunks()[file].GetDone()
	out := make([]int, len(done))
	for i, c := range done {
		out[i] = int(c)
	}
	return out, nil
}

func (th *taskHost) MarkChunk(ctx context.Context, file string, chunk int) error {
	r, err := th.runOf()
	if err != nil {
		return err
	}
	r.mu.Lock()
	if !r.hasFileLocked(file) {
		r.mu.Unlock()
		return fmt.Errorf("mark chunk %d: run %s has no file %q; its files: %s", chunk, r.id, file, orNone(r.fileNamesLocked()))
	}
	if r.head.Chunks == nil {
		r.head.Chunks = make(map[string]*storepb.ChunkSet)
	}
	cs := r.head.Chunks[file]
	if cs == nil {
		cs = &storepb.ChunkSet{}
		r.head.Chunks[file] = cs
	}
	c := int32(chunk)
	k := sort.Search(len(cs.Done), func(i int) bool { return cs.Done[i] >= c })
	if k < len(cs.Done) && cs.Done[k] == c {
		r.mu.Unlock()
		return nil // marked already: idempotent by file and chunk
	}
	cs.Done = slices.Insert(cs.Done, k, c)
	r.touchLocked()
	pend := r.saveLocked(store.RunWrite{})
	r.mu.Unlock()
	return pend.Wait(ctx)
}

// progress notes a running attempt's reported cost.
func (r *runExec) progress(taskID string, cost float64) {
	r.mu.Lock()
	r.progressCost[taskID] = cost
	r.touchLocked()
	r.mu.Unlock()
}
