package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"

	"github.com/hearth-dev/hearth/sdk"
)

// Run is an in-memory run for testing agents that use the methods of
// sdk.RunCallbacks: its state document, checkpoints, files and chunk progress.
// Give it to a Recorder with SetRun; the tasks with a Task.Run then see
// it. It is safe for concurrent use.
//
// It keeps a hearth host's rules: sections are replaced whole, a JSON
// null deletes one, and writes outside the sections set with Own are
// refused with an error wrapping sdk.ErrNotOwner.
type Run struct {
	mu          sync.Mutex
	state       map[string]json.RawMessage
	writes      []string // nil: every section
	files       []sdk.File
	chunks      map[string]map[int]bool
	checkpoints []string
}

// NewRun returns an empty run.
func NewRun() *Run {
	return &Run{state: make(map[string]json.RawMessage), chunks: make(map[string]map[int]bool)}
}

// SetRun makes run the run that every task of r with a Task.Run belongs
// to (ForRun, ForTask); nil gives them a new empty one.
func (r *Recorder) SetRun(run *Run) {
	r.mu.Lock()
	r.run = run
	r.mu.Unlock()
}

func (r *Recorder) currentRun() (*Run, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.run == nil {
		r.run = NewRun()
	}
	return r.run, nil
}

// Own limits the agent's writes to sections, as a run's owner block does.
func (run *Run) Own(sections ...string) {
	run.mu.Lock()
	run.writes = slices.Clone(sections)
	run.mu.Unlock()
}

// Set sets a section of the state document, as a pipeline's initial
// state would. It panics if value cannot be encoded.
func (run *Run) Set(section string, value any) {
	b, err := json.Marshal(value)
	if err != nil {
		panic(fmt.Sprintf("conformance: state section %q: %v", section, err))
	}
	run.mu.Lock()
	run.state[section] = b
	run.mu.Unlock()
}

// Get returns a section of the state document, or nil.
func (run *Run) Get(section string) json.RawMessage {
	run.mu.Lock()
	defer run.mu.Unlock()
	return slices.Clone(run.state[section])
}

// AddFile attaches a file to the run.
func (run *Run) AddFile(f sdk.File) {
	run.mu.Lock()
	run.files = append(run.files, f)
	run.mu.Unlock()
}

// Checkpoints returns the labels of the checkpoints agents asked for, in
// order.
func (run *Run) Checkpoints() []string {
	run.mu.Lock()
	defer run.mu.Unlock()
	return slices.Clone(run.checkpoints)
}

func (run *Run) read(section string) (json.RawMessage, error) {
	run.mu.Lock()
	defer run.mu.Unlock()
	if section != "" {
		return slices.Clone(run.state[section]), nil
	}
	return json.Marshal(run.state)
}

func (run *Run) write(section string, value any) error {
	if section == "" {
		return fmt.Errorf("write run state: name the top-level section to write")
	}
	var b []byte
	switch v := value.(type) {
	case nil:
	case json.RawMessage:
		if !json.Valid(v) {
			return fmt.Errorf("state section %q: value is not valid JSON", section)
		}
		b = v
	default:
		var err error
		if b, err = json.Marshal(value); err != nil {
			return fmt.Errorf("state section %q: %w", section, err)
		}
	}
	run.mu.Lock()
	defer run.mu.Unlock()
	if run.writes != nil && !slices.Contains(run.writes, section) {
		return fmt.Errorf("the agent may not write section %q of the run's state; it writes %v: %w", section, run.writes, sdk.ErrNotOwner)
	}
	if len(b) == 0 || bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		delete(run.state, section)
		return nil
	}
	run.state[section] = slices.Clone(b)
	return nil
}

func (run *Run) checkpoint(label string) uint64 {
	run.mu.Lock()
	defer run.mu.Unlock()
	run.checkpoints = append(run.checkpoints, label)
	return uint64(len(run.checkpoints))
}

func (run *Run) fileList() []sdk.File {
	run.mu.Lock()
	defer run.mu.Unlock()
	return slices.Clone(run.files)
}

func (run *Run) done(file string) []int {
	run.mu.Lock()
	defer run.mu.Unlock()
	out := slices.Collect(maps.Keys(run.chunks[file]))
	sort.Ints(out)
	return out
}

func (run *Run) mark(file string, chunk int) error {
	run.mu.Lock()
	defer run.mu.Unlock()
	if !slices.ContainsFunc(run.files, func(f sdk.File) bool { return f.Name == file }) {
		return fmt.Errorf("mark chunk %d: the run has no file %q", chunk, file)
	}
	if run.chunks[file] == nil {
		run.chunks[file] = make(map[int]bool)
	}
	run.chunks[file][chunk] = true
	return nil
}

func (cb *runTaskCallbacks) State(_ context.Context, section string) (json.RawMessage, error) {
	run, err := cb.r.currentRun()
	if err != nil {
		return nil, err
	}
	return run.read(section)
}

func (cb *runTaskCallbacks) SetState(_ context.Context, section string, value any) error {
	run, err := cb.r.currentRun()
	if err != nil {
		return err
	}
	return run.write(section, value)
}

func (cb *runTaskCallbacks) Checkpoint(_ context.Context, label string) (uint64, error) {
	run, err := cb.r.currentRun()
	if err != nil {
		return 0, err
	}
	return run.checkpoint(label), nil
}

func (cb *runTaskCallbacks) Files(context.Context) ([]sdk.File, error) {
	run, err := cb.r.currentRun()
	if err != nil {
		return nil, err
	}
	return run.fileList(), nil
}

func (cb *runTaskCallbacks) DoneChunks(_ context.Context, file string) ([]int, error) {
	run, err := cb.r.currentRun()
	if err != nil {
		return nil, err
	}
	return run.done(file), nil
}

func (cb *runTaskCallbacks) MarkChunk(_ context.Context, file string, chunk int) error {
	run, err := cb.r.currentRun()
	if err != nil {
		return err
	}
	return run.mark(file, chunk)
}
