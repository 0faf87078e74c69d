package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
)

// saveRun writes a run of one task with its head, graph, task record,
// output, checkpoint and files, in one write, and waits for it.
func saveRun(t *testing.T, s *Store, id string, files ...record.File) record.RunWrite {
	t.Helper()
	head := &record.Run{ID: id, Pipeline: "essay", Status: hearth.RunRunning, Checkpoint: 1, Files: files}
	task := &record.Task{Name: "draft", Status: hearth.TaskSucceeded, Version: 1}
	w := record.RunWrite{
		Run:        head,
		Graph:      &record.Graph{Pipeline: &hearth.Pipeline{Tasks: []*hearth.PipelineTask{{Name: "draft", Agent: "writer"}}}},
		Tasks:      []*record.Task{task},
		Outputs:    []*record.Output{{Task: "draft", Version: 1, Output: "v1 of " + id}},
		Checkpoint: &record.Checkpoint{Seq: 1, Label: "task draft succeeded", Task: "draft", Run: head, Tasks: []*record.Task{task}},
	}
	for _, f := range files {
		w.FileRefs = append(w.FileRefs, f.SHA256)
	}
	if err := s.SaveRun(id, w).Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	return w
}

func TestSaveRunReadsBackAfterReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(dir, Write, Options{GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	w := saveRun(t, s, "essay-1")
	// A second checkpoint, newer: Checkpoints lists them in order.
	cp2 := *w.Checkpoint
	cp2.Seq, cp2.Parent, cp2.Label = 2, 1, "asked by writer"
	if err := s.SaveRun("essay-1", record.RunWrite{Checkpoint: &cp2}).Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A run whose ID extends this one's must not be read as part of it.
	saveRun(t, s, "essay-10")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = MustOpen(t, dir)
	head, err := s.RunRecord("essay-1")
	if err != nil || !reflect.DeepEqual(head, w.Run) {
		t.Fatalf("head %v, %v; want %v", head, err, w.Run)
	}
	if g, err := s.RunGraph("essay-1"); err != nil || !reflect.DeepEqual(g, w.Graph) {
		t.Errorf("graph %v, %v", g, err)
	}
	tasks, err := s.RunTasks("essay-1")
	if err != nil || len(tasks) != 1 || !reflect.DeepEqual(tasks["draft"], w.Tasks[0]) {
		t.Errorf("tasks %v, %v", tasks, err)
	}
	cps, err := s.Checkpoints("essay-1")
	if err != nil || len(cps) != 2 || cps[0].Seq != 1 || !reflect.DeepEqual(cps[1], &cp2) {
		t.Errorf("checkpoints %v, %v; want 1 then 2", cps, err)
	}
	if c, err := s.Checkpoint("essay-1", 2); err != nil || !reflect.DeepEqual(c, &cp2) {
		t.Errorf("checkpoint 2: %v, %v", c, err)
	}
	if _, err := s.Checkpoint("essay-1", 3); !errors.Is(err, ErrNotFound) {
		t.Errorf("checkpoint 3: %v; want ErrNotFound", err)
	}
	outs, err := s.TaskOutputs("essay-1")
	if err != nil || len(outs) != 1 || outs[0].Output != "v1 of essay-1" {
		t.Errorf("outputs %v, %v", outs, err)
	}
	if runs, err := s.RunRecords(); err != nil || len(runs) != 2 {
		t.Errorf("runs %v, %v; want essay-1 and essay-10", runs, err)
	}
}

func TestPutFileIsIdempotentAndReadOnly(t *testing.T) {
	t.Parallel()
	s := MustOpen(t, t.TempDir())
	sha, size, err := s.PutFile(strings.NewReader("week 1: limits\n"))
	if err != nil {
		t.Fatal(err)
	}
	again, size2, err := s.PutFile(strings.NewReader("week 1: limits\n"))
	if err != nil || again != sha || size2 != size || size != 15 {
		t.Fatalf("second put: %s %d %v; want %s %d", again, size2, err, sha, size)
	}
	fi, err := os.Stat(s.BlobPath(sha))
	if err != nil || fi.Mode().Perm()&0o222 != 0 {
		t.Fatalf("blob: %v, %v; want a read-only file", fi, err)
	}
	other, _, err := s.PutFile(strings.NewReader("week 2: series\n"))
	if err != nil || other == sha {
		t.Errorf("different content: %s, %v", other, err)
	}
	// Nothing but the two blobs is left behind (no temporary files).
	var blobs int
	entries, _ := os.ReadDir(s.FilesDir())
	for _, e := range entries {
		if !e.IsDir() {
			t.Errorf("stray file %s in the file store", e.Name())
			continue
		}
		sub, _ := os.ReadDir(s.FilesDir() + "/" + e.Name())
		blobs += len(sub)
	}
	if blobs != 2 {
		t.Errorf("%d blobs stored; want 2", blobs)
	}
}

// TestDeleteRunKeepsSharedFiles deletes two runs that share a file: the
// file goes with the last of them, and deleting one run leaves the other,
// whose ID extends its own, whole.
func TestDeleteRunKeepsSharedFiles(t *testing.T) {
	t.Parallel()
	s := MustOpen(t, t.TempDir())
	ctx := context.Background()
	sha, size, err := s.PutFile(strings.NewReader("syllabus"))
	if err != nil {
		t.Fatal(err)
	}
	f := record.File{Name: "syllabus.txt", SHA256: sha, Size: size}
	saveRun(t, s, "plan-1", f)
	saveRun(t, s, "plan-10", f)

	orphans, err := s.DeleteRun(ctx, "plan-1")
	if err != nil || len(orphans) != 0 {
		t.Fatalf("deleting plan-1: orphans %v, %v; want none, plan-10 uses the file", orphans, err)
	}
	if _, err := s.RunRecord("plan-1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("plan-1 after its deletion: %v", err)
	}
	if cps, _ := s.Checkpoints("plan-1"); len(cps) != 0 {
		t.Errorf("plan-1 still has checkpoints %v", cps)
	}
	if tasks, err := s.RunTasks("plan-10"); err != nil || len(tasks) != 1 {
		t.Errorf("plan-10's tasks after deleting plan-1: %v, %v", tasks, err)
	}
	if outs, err := s.TaskOutputs("plan-10"); err != nil || len(outs) != 1 {
		t.Errorf("plan-10's outputs after deleting plan-1: %v, %v", outs, err)
	}

	orphans, err = s.DeleteRun(ctx, "plan-10")
	if err != nil || len(orphans) != 1 || orphans[0] != sha {
		t.Fatalf("deleting plan-10: orphans %v, %v; want the shared file", orphans, err)
	}
	if err := s.RemoveFiles(orphans); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.BlobPath(sha)); !os.IsNotExist(err) {
		t.Errorf("blob after both runs went: %v; want it removed", err)
	}
	if _, err := s.DeleteRun(ctx, "plan-10"); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleting a deleted run: %v; want ErrNotFound", err)
	}
}

// TestFilePathsAreAbsolute: plugins run in their own working directories,
// so the paths of stored files must not depend on the host's.
func TestFilePathsAreAbsolute(t *testing.T) {
	t.Chdir(t.TempDir())
	s := MustOpen(t, ".hearth")
	sha, _, err := s.PutFile(strings.NewReader("notes"))
	if err != nil {
		t.Fatal(err)
	}
	if p := s.BlobPath(sha); !filepath.IsAbs(p) {
		t.Errorf("BlobPath = %s; want an absolute path", p)
	}
}
