package python

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/internal/hosttest"
)

// TestPythonPluginStopsWhenItsHostStopsVouching: a Python plugin started
// with HEARTH_PLUGIN_VOUCH (as a cluster's host starts it) ends its task
// once its host, paused with SIGSTOP as a VM pause or a swap storm would,
// stops answering: the task's cancellation reaches the agent while the
// host is still paused. Before the pause, the task has waited without a
// word to its host for three ping intervals, which must not end it (the
// host, alive, answers the pings), and after which the pings must go on.
func TestPythonPluginStopsWhenItsHostStopsVouching(t *testing.T) {
	dir := t.TempDir()
	started, slept, cancelled := filepath.Join(dir, "started"), filepath.Join(dir, "slept"), filepath.Join(dir, "cancelled")
	// A vouch of 4 s: pings every 2 s, answered within 2 s, which a host
	// on a loaded machine keeps; the silent wait is 3 pings long.
	cmd, sc := startHost(t, "vouch", "HEARTH_PY_TEST_VOUCH=4s", "HEARTH_PY_TEST_CANCELLED="+cancelled, "HEARTH_PY_TEST_MARKS="+dir,
		"HEARTH_PY_TEST_PROMPT=touch:"+started+";sleep:6;touch:"+slept+";cancelled")
	waitFile(t, started, 60*time.Second)
	waitFile(t, slept, 60*time.Second)
	if _, err := os.Stat(cancelled); err == nil {
		t.Fatal("the task was cancelled while its host answered")
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGCONT) })
	// Without the vouch the plugin would wait for its paused host for
	// ever: this wait would fail.
	waitFile(t, cancelled, 60*time.Second)
	if b, _ := os.ReadFile(cancelled); string(b) != "cancelled=True" {
		t.Errorf("the agent saw %q, want cancelled=True", b)
	}
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// The host, continued, finds the task ended.
	if w := hosttest.ExpectLine(t, sc, "error"); len(w) == 0 {
		t.Error("the host said nothing of the task")
	} else {
		t.Logf("the host, continued: %s", strings.Join(w, " "))
	}
}

// waitFile polls for path, which a plugin writes (nothing signals it).
func waitFile(t *testing.T, path string, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within %s", filepath.Base(path), within)
		}
	}
}

// TestVouchParsesAsGoDoes: the Python SDK reads HEARTH_PLUGIN_VOUCH, a
// duration the Go host writes (time.Duration.String), with a parser of
// its own. Every form Go's time.ParseDuration reads and every one it
// refuses, swept: Go's own outputs, hand-picked edges, and seeded
// mutations of them, each parsed by both; the answers must agree (to a
// nanosecond's rounding).
func TestVouchParsesAsGoDoes(t *testing.T) {
	python := needPython(t)
	seeds := []string{"0", "1s", "1.25s", "1m0s", "1h2m3.5s", "500ms", "1us", "1µs", "1μs", "3ns", "-2s", "+2s",
		".5s", "5.s", "1.s", "", ".", "s", "1", "1x", "1 s", "1S", "--1s", "1.2.3s", "1e3s", "0x10s", "１s", "1h1h", "00s"}
	for _, d := range []time.Duration{1250 * time.Millisecond, time.Second / 3, 7 * time.Minute, 26 * time.Hour, 123456789} {
		seeds = append(seeds, d.String())
	}
	rng := rand.New(rand.NewPCG(26, 3))
	inputs := append([]string(nil), seeds...)
	alphabet := []rune("0123456789.+-nsuµμmh x")
	for range 3000 {
		r := []rune(seeds[rng.IntN(len(seeds))])
		for range 1 + rng.IntN(3) {
			i := rng.IntN(len(r) + 1)
			switch rng.IntN(3) {
			case 0:
				if len(r) > 0 {
					r = append(r[:min(i, len(r)-1)], r[min(i, len(r)-1)+1:]...)
				}
			case 1:
				r = append(r[:i], append([]rune{alphabet[rng.IntN(len(alphabet))]}, r[i:]...)...)
			default:
				if len(r) > 0 {
					r[min(i, len(r)-1)] = alphabet[rng.IntN(len(alphabet))]
				}
			}
		}
		inputs = append(inputs, string(r))
	}
	in, err := json.Marshal(inputs)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "-c", `
import json, sys
from hearth_agent import server
out = []
for s in json.load(sys.stdin):
    try:
        out.append(server.parse_go_duration(s))
    except ValueError:
        out.append(None)
json.dump(out, sys.stdout)
`)
	cmd.Dir = sdkDir(t)
	cmd.Stdin = strings.NewReader(string(in))
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var got []*float64
	if err := json.Unmarshal(raw, &got); err != nil || len(got) != len(inputs) {
		t.Fatalf("python answered %d values for %d inputs: %v", len(got), len(inputs), err)
	}
	bad := 0
	for i, s := range inputs {
		d, err := time.ParseDuration(s)
		want := fmt.Sprint(err == nil)
		have := fmt.Sprint(got[i] != nil)
		if want == have && err == nil {
			// float64 seconds against integer nanoseconds.
			if diff := *got[i] - d.Seconds(); diff > 1e-9*max(1, d.Seconds()) || diff < -1e-9*max(1, d.Seconds()) {
				have = fmt.Sprint(*got[i])
				want = fmt.Sprint(d.Seconds())
			}
		}
		if want != have && bad < 20 {
			bad++
			t.Errorf("%q: Go reads %s (%v), Python %s", s, want, err, have)
		}
	}
}
