package runs

import (
	"slices"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth/host/record"
)

// TestChunks: a chunk is marked once, of a file the run has; the marks
// of a file read back in increasing order, as a copy.
func TestChunks(t *testing.T) {
	book := record.File{Name: "book.txt", SHA256: "ab", Size: 3}
	notes := record.File{Name: "notes.md", SHA256: "cd", Size: 5}
	type mark struct {
		file    string
		chunk   int
		changed bool
		err     string
	}
	for _, tc := range []struct {
		name   string
		files  []record.File
		first  map[string][]int // the head's marks
		marks  []mark
		want   map[string][]int
		refs   []string
		unread string // DoneChunks of this file fails so
	}{
		{name: "marks in any order read back sorted", files: []record.File{book},
			marks: []mark{{"book.txt", 3, true, ""}, {"book.txt", 1, true, ""}, {"book.txt", 2, true, ""}},
			want:  map[string][]int{"book.txt": {1, 2, 3}}, refs: []string{"ab"}},
		{name: "a chunk marked again changes nothing", files: []record.File{book}, first: map[string][]int{"book.txt": {1, 3}},
			marks: []mark{{"book.txt", 3, false, ""}, {"book.txt", 1, false, ""}},
			want:  map[string][]int{"book.txt": {1, 3}}, refs: []string{"ab"}},
		{name: "each file its own marks", files: []record.File{book, notes}, first: map[string][]int{"book.txt": {0}},
			marks: []mark{{"notes.md", 0, true, ""}, {"book.txt", 0, false, ""}, {"notes.md", 7, true, ""}},
			want:  map[string][]int{"book.txt": {0}, "notes.md": {0, 7}}, refs: []string{"ab", "cd"}},
		{name: "a file the run does not have", files: []record.File{book, notes},
			marks:  []mark{{"other.txt", 1, false, `mark chunk 1: run essay-1 has no file "other.txt"; its files: book.txt, notes.md`}},
			want:   map[string][]int{"book.txt": {}, "notes.md": {}},
			refs:   []string{"ab", "cd"},
			unread: `run essay-1 has no file "other.txt"; its files: book.txt, notes.md`},
		{name: "a run without files", marks: []mark{{"book.txt", 1, false, "its files: none"}},
			want: map[string][]int{}, unread: "its files: none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &runFiles{run: "essay-1", list: tc.files, chunks: tc.first}
			for _, m := range tc.marks {
				changed, err := f.mark(m.file, m.chunk)
				if changed != m.changed || (m.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), m.err) {
					t.Errorf("mark %s %d: changed %v, %v; want changed %v, error %q", m.file, m.chunk, changed, err, m.changed, m.err)
				}
			}
			for file, want := range tc.want {
				got, err := f.DoneChunks(file)
				if err != nil || !slices.Equal(got, want) {
					t.Errorf("%s: done %v, %v; want %v", file, got, err, want)
				}
				if len(got) > 0 {
					got[0] = -1 // a copy: the marks do not change
					if again, _ := f.DoneChunks(file); again[0] == -1 {
						t.Errorf("%s: DoneChunks answers the marks themselves", file)
					}
				}
			}
			if !slices.Equal(f.refs(), tc.refs) {
				t.Errorf("refs %v, want %v", f.refs(), tc.refs)
			}
			if tc.unread != "" {
				if _, err := f.DoneChunks("other.txt"); err == nil || !strings.Contains(err.Error(), tc.unread) {
					t.Errorf("done chunks of a file the run does not have: %v", err)
				}
			}
		})
	}
}
