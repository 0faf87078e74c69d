package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/host/store"
)

// The store is opened to read by every read command, and whatever it
// finds is accounted for before Badger sees it (host/store/open.go).
// These tests damage a store made by a real run the way a power loss or
// an interrupted copy does, and run every read command on it.

// ranStore runs a two-task pipeline of the scripted agent to completion,
// three times, and returns its environment (data directory and config)
// and the last run's ID. Each run's host flushes its writes into a table
// when it closes, so the MANIFEST has an entry for each; each task's
// output is 2 KiB, past the store's value threshold, so the tables point
// into a value log. The first run has a file attached (96 KiB, stored
// under files/).
func ranStore(t *testing.T) (map[string]string, string) {
	t.Helper()
	return ranStoreIn(t, filepath.Join(t.TempDir(), "data"))
}

// ranStoreIn is ranStore with its data directory at data.
func ranStoreIn(t *testing.T, data string) (map[string]string, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := pairConfig(t, dir)
	env := map[string]string{"HEARTH_DATA_DIR": data, "HEARTH_CONFIG": cfg}
	notes := filepath.Join(t.TempDir(), "notes.md")
	if err := os.WriteFile(notes, bytes.Repeat([]byte("the notes of the first run\n"), 96<<10/27+1)[:96<<10], 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		args := []string{"run", "pair", "-q"}
		if i == 0 {
			args = append(args, "--file", notes)
		}
		if code, out, errOut := run(t, env, args...); code != 0 {
			t.Fatalf("hearth run pair: exit %d\n%s%s", code, out, errOut)
		}
	}
	var runs []struct {
		ID string `json:"id"`
	}
	runJSON(t, env, &runs, "runs", "list", "--json")
	if len(runs) != 3 {
		t.Fatalf("runs list: %+v, want the three runs", runs)
	}
	return env, runs[0].ID
}

// pairConfig writes, in dir, the config of the scripted agent with
// pipeline pair: two tasks, each with an output of 2 KiB.
func pairConfig(t testing.TB, dir string) string {
	return writeConfigIn(t, dir, `agent "scripted" {
  command = ["`+os.Args[0]+`"]
  env     = { HEARTH_TEST_PLUGIN = "agent" }
}

pipeline "pair" {
  agent = "scripted"
  task "first" {
    prompt = "bigout:2048"
  }
  task "second" {
    prompt     = "bigout:2048"
    depends_on = ["first"]
  }
}
`)
}

// readCommands are the commands that only read the data directory, as a
// user runs them without a daemon. backup writes its file outside it.
func readCommands(t *testing.T, id string) [][]string {
	return [][]string{
		{"runs", "list"},
		{"runs", "show", id},
		{"sessions", "list"},
		{"verify"},
		{"backup", filepath.Join(t.TempDir(), "b.tar")},
	}
}

// refuses runs every read command on env's directory and checks that
// each exits non-zero naming file, and that no byte of the directory
// changed.
func refuses(t *testing.T, env map[string]string, cmds [][]string, file, what string) {
	t.Helper()
	data := env["HEARTH_DATA_DIR"]
	before := dirHashes(t, data)
	for _, args := range cmds {
		code, out, errOut := run(t, env, args...)
		if code == 0 || !strings.Contains(out+errOut, file) {
			t.Errorf("%s: hearth %s: exit %d, want non-zero naming %s\nstdout: %s\nstderr: %s", what, strings.Join(args, " "), code, file, out, errOut)
		}
	}
	sameHashes(t, what, before, dirHashes(t, data))
}

func sameHashes(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for _, p := range slices.Sorted(maps.Keys(before)) {
		if after[p] != before[p] {
			t.Errorf("%s: %s changed or went", what, p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s: %s appeared", what, p)
		}
	}
}

// TestTruncatedManifestIsRefused is issue 24's first finding, at every
// length a cut can leave: MANIFEST cut to any length from 0 to one byte
// short of whole is refused by every read command, naming MANIFEST (the
// message for a table it no longer lists says the MANIFEST does not list
// it), and no byte in the directory changes. Badger used to delete every
// table the shortened MANIFEST did not list, and the commands said "no
// runs".
func TestTruncatedManifestIsRefused(t *testing.T) {
	t.Parallel()
	env, id := ranStore(t)
	data := env["HEARTH_DATA_DIR"]
	manifest := filepath.Join(data, "MANIFEST")
	whole, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	_, want, _ := run(t, env, "runs", "show", id, "--json")
	cmds := readCommands(t, id)
	for n := range len(whole) {
		if err := os.WriteFile(manifest, whole[:n], 0o600); err != nil {
			t.Fatal(err)
		}
		refuses(t, env, cmds, "MANIFEST", fmt.Sprintf("MANIFEST cut to %d of %d bytes", n, len(whole)))
		if t.Failed() {
			break // the first failing cut says it all
		}
	}
	t.Logf("%d cuts of MANIFEST, %d read commands each", len(whole), len(cmds))
	if err := os.WriteFile(manifest, whole, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, got, errOut := run(t, env, "runs", "show", id, "--json"); code != 0 || got != want {
		t.Errorf("the whole MANIFEST put back: exit %d %s\n%s\nwant the run as before:\n%s", code, errOut, got, want)
	}
}

// TestDirectoryFilesAreAccountedFor: a table the MANIFEST does not list,
// a value log the tables point into that is missing or cut short, and a
// file under a name Badger would misread are each refused by every read
// command, naming the file (or, for a crash's leftover, hearth recover),
// changing nothing. A value log nothing points into (Badger's garbage,
// before value-log GC) is left alone, and reads give the data as it was.
func TestDirectoryFilesAreAccountedFor(t *testing.T) {
	t.Parallel()
	env, id := ranStore(t)
	data := env["HEARTH_DATA_DIR"]
	cmds := readCommands(t, id)
	_, wantRun, _ := run(t, env, "runs", "show", id, "--json")
	vlogs, _ := filepath.Glob(filepath.Join(data, "*.vlog"))
	ssts, _ := filepath.Glob(filepath.Join(data, "*.sst"))
	if len(ssts) == 0 {
		t.Fatalf("no table in %s", data)
	}
	// The value log the run's outputs are in: the largest.
	var vlog string
	var vlogSize int64
	for _, p := range vlogs {
		if fi, err := os.Stat(p); err == nil && fi.Size() > vlogSize {
			vlog, vlogSize = p, fi.Size()
		}
	}
	if vlogSize < 4096 {
		t.Fatalf("no value log holds the run's outputs: %v", vlogs)
	}
	set := func(p string, b []byte) {
		t.Helper()
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	read := func(p string) []byte {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		// damage damages the directory and returns the file a refusal
		// names, and how to undo the damage.
		damage func() (file string, undo func())
	}{
		{"table the MANIFEST does not list, from another store", func() (string, func()) {
			other := t.TempDir()
			st, err := store.Open(other, store.Write, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := st.PutSession(context.Background(), record.Session{ID: "elsewhere", Agent: "gotour", Status: record.SessionDormant}); err != nil {
				t.Fatal(err)
			}
			st.Close()
			theirs, _ := filepath.Glob(filepath.Join(other, "*.sst"))
			if len(theirs) == 0 {
				t.Fatal("the other store has no table")
			}
			p := filepath.Join(data, "999999.sst")
			set(p, read(theirs[0]))
			return "999999.sst", func() { os.Remove(p) }
		}},
		{"table the MANIFEST does not list, holding nothing new (a crash's leftover)", func() (string, func()) {
			p := filepath.Join(data, "999998.sst")
			set(p, read(ssts[0]))
			return "hearth recover", func() { os.Remove(p) }
		}},
		{"value log the tables point into, missing", func() (string, func()) {
			b := read(vlog)
			os.Remove(vlog)
			return filepath.Base(vlog), func() { set(vlog, b) }
		}},
		{"value log the tables point into, one byte short", func() (string, func()) {
			b := read(vlog)
			set(vlog, b[:len(b)-1])
			return filepath.Base(vlog), func() { set(vlog, b) }
		}},
		{"table under a name Badger misreads", func() (string, func()) {
			p := filepath.Join(data, "-1.sst")
			set(p, read(ssts[0]))
			return "-1.sst", func() { os.Remove(p) }
		}},
		{"value log under a name Badger misreads", func() (string, func()) {
			p := filepath.Join(data, "7.vlog")
			set(p, read(vlog))
			return "7.vlog", func() { os.Remove(p) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file, undo := tc.damage()
			refuses(t, env, cmds, file, tc.name)
			undo()
		})
	}

	t.Run("value log nothing points into", func(t *testing.T) {
		p := filepath.Join(data, "999999.vlog")
		set(p, read(vlog))
		defer os.Remove(p)
		before := dirHashes(t, data)
		for _, args := range cmds {
			if code, out, errOut := run(t, env, args...); code != 0 {
				t.Errorf("hearth %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
			}
		}
		if code, got, _ := run(t, env, "runs", "show", id, "--json"); code != 0 || got != wantRun {
			t.Errorf("runs show: exit %d\n%s\nwant as before:\n%s", code, got, wantRun)
		}
		sameHashes(t, "reads beside an unreferenced value log", before, dirHashes(t, data))
	})
}

// TestReadCommandsDoNotReplay: a directory a crash left with writes to
// replay is refused by every read command, which names hearth recover
// and changes nothing; hearth recover replays it, and the reads work.
func TestReadCommandsDoNotReplay(t *testing.T) {
	t.Parallel()
	env, id := ranStore(t)
	data := env["HEARTH_DATA_DIR"]
	// A memtable log is what a crash leaves: one with nothing in it
	// still has to be replayed (Badger cannot open it read-only).
	if err := os.WriteFile(filepath.Join(data, "00099.mem"), make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	refuses(t, env, readCommands(t, id), "hearth recover", "an unreplayed memtable log")
	if code, out, errOut := run(t, env, "recover"); code != 0 {
		t.Fatalf("recover: exit %d\n%s%s", code, out, errOut)
	}
	var runs []json.RawMessage
	runJSON(t, env, &runs, "runs", "list", "--json")
	if len(runs) != 3 {
		t.Errorf("after recover: %d runs, want 3", len(runs))
	}
}
