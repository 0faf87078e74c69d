package runs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/guard"
	"github.com/hearth-dev/hearth/sdk"
)

// These are the methods a run's tasks reach (pool.Run, through the
// agent's sdk.RunCallbacks): the run's state document, checkpoints, files
// and chunk progress. Each write is durable when the method returns.

// State returns a section of the state document, or the whole of what
// agent may read when section is "".
func (r *Run) State(_ context.Context, agent, section string) (json.RawMessage, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.s.doc.read(agent, section)
}

// SetState replaces a section of the state document for agent, in task.
func (r *Run) SetState(ctx context.Context, agent, task, section string, value any) error {
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
	eff, err := r.s.SetSection(r.now(), agent, task, section, b)
	pend := r.writeLocked(eff)
	r.mu.Unlock()
	if err != nil {
		return err
	}
	return wait(ctx, pend)
}

// Checkpoint writes a checkpoint asked for by task.
func (r *Run) Checkpoint(ctx context.Context, task, label string) (uint64, error) {
	if label = strings.TrimSpace(label); label == "" {
		label = "requested by " + task
	}
	r.mu.Lock()
	eff, seq := r.s.Requested(r.now(), task, label)
	pend := r.writeLocked(eff)
	r.mu.Unlock()
	if err := wait(ctx, pend); err != nil {
		return 0, err
	}
	return seq, nil
}

// Files lists the files attached to the run, where the agent reads each.
func (r *Run) Files(context.Context) ([]sdk.File, error) {
	r.mu.Lock()
	files := r.s.Files()
	r.mu.Unlock()
	out := make([]sdk.File, 0, len(files))
	for _, f := range files {
		out = append(out, sdk.File{Name: f.Name, Path: r.m.d.Store.BlobPath(f.SHA256), SHA256: f.SHA256, Size: f.Size})
	}
	return out, nil
}

// DoneChunks returns the chunks of file marked done, in increasing
// order.
func (r *Run) DoneChunks(_ context.Context, file string) ([]int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.s.DoneChunks(file)
}

// MarkChunk records that chunk of file is done.
func (r *Run) MarkChunk(ctx context.Context, file string, chunk int) error {
	r.mu.Lock()
	eff, err := r.s.MarkChunk(r.now(), file, chunk)
	pend := r.writeLocked(eff)
	r.mu.Unlock()
	if err != nil {
		return err
	}
	return wait(ctx, pend)
}

// Progress notes a running attempt's reported cost.
func (r *Run) Progress(taskID string, cost float64) {
	r.mu.Lock()
	r.s.Progress(r.now(), taskID, cost)
	r.mu.Unlock()
}

// Succeeded keeps an attempt's task.succeeded event, which the pool does
// not emit itself for a task of a run: the run writes it with the record
// of the success, so that the log never says a task succeeded that the
// run does not record (Schedule.Succeeded).
func (r *Run) Succeeded(e hearth.Event) {
	r.mu.Lock()
	r.s.Succeeded(e)
	r.mu.Unlock()
}

// Guard is the run as guards see it.
func (r *Run) Guard() guard.Run {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.s.guardRun()
}
