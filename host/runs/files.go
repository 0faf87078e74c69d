package runs

import (
	"fmt"
	"slices"

	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/internal/text"
)

// runFiles are the files attached to a run and, per file, the chunks its
// tasks marked done (sdk.RunCallbacks: a long input worked through in
// chunks, resumable where it stopped). Files are attached when the run is
// made and never change; marks only grow. It holds the run's head's
// Files and Chunks (the head is what is written): the schedule puts
// chunks back in the head after a mark.
type runFiles struct {
	run    string
	list   []record.File
	chunks map[string][]int
}

// Files are the files attached to the run.
func (f *runFiles) Files() []record.File { return f.list }

// refs are the SHA-256s of the run's files: what its records refer to in
// the file store.
func (f *runFiles) refs() []string {
	var out []string
	for _, r := range f.list {
		out = append(out, r.SHA256)
	}
	return out
}

func (f *runFiles) hasFile(name string) bool {
	return slices.ContainsFunc(f.list, func(r record.File) bool { return r.Name == name })
}

func (f *runFiles) fileNames() []string {
	var out []string
	for _, r := range f.list {
		out = append(out, r.Name)
	}
	return out
}

// DoneChunks are the chunks of file marked done, in increasing order.
func (f *runFiles) DoneChunks(file string) ([]int, error) {
	if !f.hasFile(file) {
		return nil, fmt.Errorf("run %s has no file %q; its files: %s", f.run, file, text.OrNone(f.fileNames()))
	}
	return append(make([]int, 0, len(f.chunks[file])), f.chunks[file]...), nil
}

// mark records that chunk of file is done. It reports whether that
// changed anything: a chunk marked already does not (idempotent by file
// and chunk).
func (f *runFiles) mark(file string, chunk int) (bool, error) {
	if !f.hasFile(file) {
		return false, fmt.Errorf("mark chunk %d: run %s has no file %q; its files: %s", chunk, f.run, file, text.OrNone(f.fileNames()))
	}
	done := f.chunks[file]
	k, found := slices.BinarySearch(done, chunk)
	if found {
		return false, nil
	}
	if f.chunks == nil {
		f.chunks = make(map[string][]int)
	}
	f.chunks[file] = slices.Insert(done, k, chunk)
	return true, nil
}
