package scratch

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary act as a host that makes its directory
// and then ends as the test says (see endAHost).
func TestMain(m *testing.M) {
	if how := os.Getenv("SCRATCH_TEST_END"); how != "" {
		d, err := Dir()
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		// As a starting host does (the engine, at New).
		Background(os.TempDir(), nil).Wait()
		// A plugin's directory inside, with a file, as go-plugin leaves it.
		pd, _ := os.MkdirTemp(d, "plugin-dir")
		_ = os.WriteFile(filepath.Join(pd, "transcript"), []byte("secret"), 0o600)
		fmt.Println("dir", d)
		switch how {
		case "exit":
			os.Exit(0)
		case "panic":
			panic("the host fails")
		default: // wait to be killed
			select {}
		}
	}
	os.Exit(m.Run())
}

// endAHost runs a host process with TMPDIR tmp that makes its directory
// and ends by how: "exit", "panic", or a signal the test sends ("kill",
// "term"). It returns the host's directory.
func endAHost(t *testing.T, tmp, how string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "SCRATCH_TEST_END="+how)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		t.Fatalf("the host (%s) said nothing", how)
	}
	var d string
	if _, err := fmt.Sscanf(sc.Text(), "dir %s", &d); err != nil {
		t.Fatalf("the host (%s) said %q", how, sc.Text())
	}
	switch how {
	case "kill":
		cmd.Process.Signal(syscall.SIGKILL)
	case "term":
		cmd.Process.Signal(syscall.SIGTERM)
	}
	_ = cmd.Wait()
	if _, err := os.Stat(d); err != nil {
		t.Fatalf("the host's directory is gone before any sweep: %v", err)
	}
	return d
}

// Every way a host can end leaves its directory free to sweep: the lock
// goes with the process, whatever ended it.
func TestSweepRemovesWhatEndedHostsLeft(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"exit", "panic", "kill", "term"} {
		tmp := t.TempDir()
		left := endAHost(t, tmp, how)
		removed, err := Sweep(context.Background(), tmp)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(removed, []string{left}) {
			t.Errorf("host ended by %s: swept %q, want %q", how, removed, left)
		}
		if _, err := os.Stat(left); !os.IsNotExist(err) {
			t.Errorf("host ended by %s: %s is still there (%v)", how, left, err)
		}
	}
}

// The next host to make its directory removes what a killed one left.
func TestTheNextHostSweeps(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	killed := endAHost(t, tmp, "kill")
	next := endAHost(t, tmp, "exit")
	if _, err := os.Stat(killed); !os.IsNotExist(err) {
		t.Errorf("the killed host's %s outlived the next host's start (%v)", killed, err)
	}
	if _, err := os.Stat(next); err != nil {
		t.Errorf("the next host's own directory: %v", err)
	}
}

// A sweep leaves alone what is not a dead host's directory: a live
// host's, a directory being made, a file or a symlink with the prefix
// (and what the symlink points to).
func TestSweepLeavesTheLiving(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	live, f, err := create(tmp)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	staging, err := os.MkdirTemp(tmp, "."+Prefix+"new-")
	if err != nil {
		t.Fatal(err)
	}
	target := t.TempDir()
	if err := os.WriteFile(filepath.Join(target, "keep"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(tmp, Prefix+"link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, Prefix+"file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	removed, err := Sweep(context.Background(), tmp)
	if err != nil || len(removed) != 0 {
		t.Fatalf("swept %q (%v), want nothing", removed, err)
	}
	for _, p := range []string{live, staging, filepath.Join(tmp, Prefix+"link"), filepath.Join(target, "keep"), filepath.Join(tmp, Prefix+"file")} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// Sweeps racing hosts that make their directories never take a live one:
// a directory has its name only once it is locked.
func TestSweepRacingHostsThatStart(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	const hosts = 200
	dirs := make(chan string, hosts)
	var locks []*os.File
	var mu sync.Mutex
	var wg sync.WaitGroup
	stop, stopped := make(chan struct{}), make(chan struct{})
	var swept []string
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			default:
			}
			r, _ := Sweep(context.Background(), tmp)
			mu.Lock()
			swept = append(swept, r...)
			mu.Unlock()
		}
	}()
	for range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, f, err := create(tmp)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			locks = append(locks, f)
			mu.Unlock()
			dirs <- d
		}()
	}
	wg.Wait()
	close(stop)
	<-stopped
	close(dirs)
	mu.Lock()
	defer mu.Unlock()
	if len(swept) != 0 {
		t.Errorf("swept live hosts' directories: %q", swept)
	}
	for d := range dirs {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("live %s: %v", d, err)
		}
	}
	for _, f := range locks {
		f.Close()
	}
}

// Dir makes the directory again when it has been removed from under the
// process (a test's TMPDIR, cleaned up).
func TestDirComesBack(t *testing.T) {
	// Not parallel: Dir is the process's, and reads TMPDIR.
	t.Setenv("TMPDIR", t.TempDir())
	d1, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(d1); err != nil {
		t.Fatal(err)
	}
	d2, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	if d2 == d1 {
		t.Fatalf("Dir returned %s, removed", d1)
	}
	if fi, err := os.Stat(d2); err != nil || !fi.IsDir() {
		t.Fatalf("%s: %v", d2, err)
	}
	if again, _ := Dir(); again != d2 {
		t.Errorf("Dir changed from %s to %s with nothing removed", d2, again)
	}
	// Its lock is held: a sweep leaves it.
	if r, _ := Sweep(context.Background(), filepath.Dir(d2)); len(r) != 0 {
		t.Errorf("swept the live process's own directory: %q", r)
	}
}

// Dir hands out only the directory whose lock it holds: once its own is
// removed, a directory made at the same name (by this user, or by
// another in a shared /tmp, writable by all) is not it. Such a
// directory is one a sweep removes from under the plugins, or whose
// owner controls what the plugins find in it. Every form of the
// stand-in: this user's, another user's (when the test runs as root),
// world-writable.
func TestDirIsTheOneItLocks(t *testing.T) {
	// Not parallel: Dir is the process's, and reads TMPDIR.
	for _, form := range []string{"mine", "mine, world-writable", "another user's"} {
		t.Run(form, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			d1, err := Dir()
			if err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(d1); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(d1, 0o700); err != nil {
				t.Fatal(err)
			}
			switch form {
			case "mine, world-writable":
				if err := os.Chmod(d1, 0o777); err != nil {
					t.Fatal(err)
				}
			case "another user's":
				if os.Getuid() != 0 {
					t.Skip("making another user's directory takes root")
				}
				if err := os.Chown(d1, 65534, 65534); err != nil {
					t.Fatal(err)
				}
			}
			d2, err := Dir()
			if err != nil {
				t.Fatal(err)
			}
			if d2 == d1 {
				t.Fatalf("Dir handed out %s, a directory made at its name after its own was removed", d1)
			}
			// What it hands out is held: another host's sweep leaves it.
			if r, _ := Sweep(context.Background(), tmp); slices.Contains(r, d2) {
				t.Errorf("a sweep removed %s, which Dir handed out", d2)
			}
			if fi, err := os.Stat(d2); err != nil || !fi.IsDir() {
				t.Errorf("%s: %v", d2, err)
			}
		})
	}
}

// A directory left under its temporary name (its host killed between
// making and naming it) is swept once it is older than any maker's
// window; a young one is left to its maker.
func TestSweepTakesOldStagingDirectories(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	old, err := os.MkdirTemp(tmp, "."+Prefix+"new-")
	if err != nil {
		t.Fatal(err)
	}
	long := time.Now().Add(-2 * stagingAge)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}
	young, err := os.MkdirTemp(tmp, "."+Prefix+"new-")
	if err != nil {
		t.Fatal(err)
	}
	removed, err := Sweep(context.Background(), tmp)
	if err != nil || !slices.Equal(removed, []string{old}) {
		t.Errorf("swept %q (%v), want only the old %s", removed, err, old)
	}
	if _, err := os.Stat(young); err != nil {
		t.Errorf("the young staging directory: %v", err)
	}
}

// A stopped sweep removes nothing more.
func TestStoppedSweepStops(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	dead, f, err := create(tmp)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if removed, _ := Sweep(ctx, tmp); len(removed) != 0 {
		t.Errorf("a cancelled sweep removed %q", removed)
	}
	s := Background(tmp, nil)
	s.Wait()
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the background sweep left %s (%v)", dead, err)
	}
	s.Stop() // after its end, Stop returns at once
}
