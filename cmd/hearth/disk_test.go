package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hearth-dev/hearth/host"
	"github.com/hearth-dev/hearth/internal/testenv"
)

// smallFileSystem mounts a tmpfs of size bytes for the test, so that what
// the store sees as free space is real.
func smallFileSystem(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		testenv.Missing(t, "cannot mount a tmpfs ("+err.Error()+")", "run the tests as root on Linux, as CI does")
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fill writes a file that leaves about free bytes free on dir's file
// system.
func fill(t *testing.T, dir string, free int64) string {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	avail := int64(st.Bavail) * st.Bsize
	if avail <= free {
		t.Fatalf("only %d bytes free, want more than %d", avail, free)
	}
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for left := avail - free; left > 0; left -= int64(len(chunk)) {
		if left < int64(len(chunk)) {
			chunk = chunk[:left]
		}
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// TestFullFileSystemPausesTheRun reproduces issue 14's fourth finding on a
// real file system: a run whose outputs fill the disk used to die of
// SIGBUS in Badger's value log. Now, once free space falls below the store
// block's min_free_space, the run pauses with the reason, hearth run exits
// 1, and once space is freed `runs resume` completes it with every output
// whole and hearth verify finding nothing wrong.
func TestFullFileSystemPausesTheRun(t *testing.T) {
	fs := smallFileSystem(t, "96m")
	var tasks strings.Builder
	prev := ""
	for i := range 8 {
		name := "t" + string(rune('a'+i))
		tasks.WriteString("  task \"" + name + "\" {\n    prompt = \"echo:" + name + ";bigout:1048576\"\n")
		if prev != "" {
			tasks.WriteString("    depends_on = [\"" + prev + "\"]\n")
		}
		tasks.WriteString("  }\n")
		prev = name
	}
	cfg := writeConfig(t, `data_dir = "`+filepath.Join(fs, "data")+`"
store {
  min_free_space = "24MiB"
}
agent "scripted" {
  command = ["`+os.Args[0]+`"]
  env     = { HEARTH_TEST_PLUGIN = "agent" }
}
pipeline "fill" {
  agent = "scripted"
`+tasks.String()+`}
`)
	env := map[string]string{"HEARTH_CONFIG": cfg, "HEARTH_DATA_DIR": filepath.Join(fs, "data")}
	filler := fill(t, fs, 30<<20) // room for a few outputs, not eight

	code, stdout, stderr := run(t, env, "run", cfg, "fill")
	if code != 1 || !strings.Contains(stdout+stderr, "not enough free space") {
		t.Fatalf("hearth run on a filling disk: exit %d\n%s%s\nwant exit 1 saying there is not enough free space", code, stdout, stderr)
	}
	// The pause itself could not be written (the store refuses every
	// write below min_free_space), so the run's record still says
	// running, marked interrupted: it resumes from its last durable
	// checkpoint like a paused one.
	var list []host.RunInfo
	runJSON(t, env, &list, "runs", "list", "--json")
	if len(list) != 1 || !(list[0].Status == host.RunPaused || list[0].Interrupted) || list[0].Succeeded == 0 || list[0].Succeeded >= 8 {
		t.Fatalf("runs list: %+v; want one run stopped part way", list)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := run(t, env, "runs", "resume", list[0].ID); code != 0 {
		t.Fatalf("runs resume after freeing space: exit %d\n%s%s", code, stdout, stderr)
	}
	var info host.RunInfo
	runJSON(t, env, &info, "runs", "show", list[0].ID, "--json")
	if info.Status != host.RunCompleted || info.Succeeded != 8 {
		t.Fatalf("after resuming: %s with %d succeeded; want completed with 8", info.Status, info.Succeeded)
	}
	if code, stdout, stderr := run(t, env, "verify"); code != 0 {
		t.Errorf("hearth verify after the full disk: exit %d\n%s%s", code, stdout, stderr)
	}
}
