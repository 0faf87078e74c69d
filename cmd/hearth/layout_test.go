package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth/host/process"
	"github.com/hearth-dev/hearth/internal/testenv"
)

// needLandlock skips a test where the kernel has no Landlock, and fails
// it in CI, whose machines have it.
func needLandlock(t *testing.T) {
	t.Helper()
	if st := process.Landlock(); !st.Available() {
		testenv.Missing(t, "no Landlock: "+st.String(), "run on a Linux kernel with Landlock, as CI machines have")
	}
}

// scriptedAgent is a config block of the scripted test agent (package
// testagent), served by this test binary.
func scriptedAgent(name string) string {
	return "agent \"" + name + "\" {\n  command = [\"" + os.Args[0] + "\"]\n  env     = { HEARTH_TEST_PLUGIN = \"agent\" }\n}\n"
}

// TestDefaultLayoutsFitTheSandbox: every layout a new user starts with
// (a config file beside its workspace, as the Quick start's and the
// Python example's; no config at all) runs its confined plugins with no
// warning, and a confined plugin lists and creates entries at its own
// workspace root: the default data directory is not inside it.
func TestDefaultLayoutsFitTheSandbox(t *testing.T) {
	needLandlock(t)
	state := t.TempDir()
	env := map[string]string{"HEARTH_DATA_DIR": "", "XDG_STATE_HOME": state}

	ws := t.TempDir()
	cfg := writeConfigIn(t, ws, scriptedAgent("scripted"))
	code, out, stderr := run(t, env, "--config", cfg, "submit", "scripted", "ls:.;touch:made-at-root;ls:.")
	if code != 0 {
		t.Fatalf("a config beside its workspace: exit %d\n%s%s", code, out, stderr)
	}
	if !strings.Contains(out, "hearth.hcl hearth.hcl,made-at-root") {
		t.Errorf("the plugin's listings of its workspace root, before and after creating an entry:\n%s\nwant hearth.hcl, then hearth.hcl,made-at-root", out)
	}
	if strings.Contains(stderr, "[WARN]") {
		t.Errorf("a config beside its workspace warns:\n%s", stderr)
	}

	// The Quick start's config, as it is in the repository.
	code, out, stderr = run(t, env, "--config", "../../examples/code-tour", "submit", "gotour", "summary errors", "--dir", "errors")
	if code != 0 || strings.Contains(stderr, "[WARN]") {
		t.Errorf("the code tour's config: exit %d, want 0 and no warning\n%s%s", code, out, stderr)
	}

	// No config at all: every bundled agent, the current directory their
	// workspace.
	t.Chdir(t.TempDir())
	code, out, stderr = run(t, env, "submit", "gotour", "summary errors", "--dir", "errors")
	if code != 0 || strings.Contains(stderr, "[WARN]") {
		t.Errorf("no config: exit %d, want 0 and no warning\n%s%s", code, out, stderr)
	}
	if entries, _ := os.ReadDir("."); len(entries) != 0 {
		t.Errorf("no config: the current directory holds %v, want nothing of hearth's", entries)
	}
}

// TestLegacyDataDirMoves: a .hearth of an earlier version beside the
// config file is used as it is, and the host says how to move it; the
// command it prints, run as printed, moves it, after which hearth finds
// the same sessions in the new default with no warning.
func TestLegacyDataDirMoves(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	state, ws := t.TempDir(), t.TempDir()
	cfg := writeConfigIn(t, ws, "agent \"gotour\" {\n  bundled = \"gotour\"\n}\n")
	old := filepath.Join(ws, ".hearth")
	// An earlier version's layout: data_dir set to it, as its default was.
	code, out, stderr := run(t, map[string]string{"HEARTH_DATA_DIR": old}, "--config", cfg, "submit", "gotour", "summary errors", "--dir", "errors")
	if code != 0 {
		t.Fatalf("the earlier layout: exit %d\n%s%s", code, out, stderr)
	}

	env := map[string]string{"HEARTH_DATA_DIR": "", "XDG_STATE_HOME": state}
	code, out, stderr = run(t, env, "--config", cfg, "submit", "gotour", "summary errors", "--dir", "errors", "--json")
	if code != 0 || !strings.Contains(out, `"action": "rehydrated"`) {
		t.Fatalf("after the upgrade: exit %d, want the session of the .hearth found again\n%s%s", code, out, stderr)
	}
	m := regexp.MustCompile(`fix="with no hearth running on it, move it to the new default: (mkdir -p \S+ && mv \S+ \S+)"`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("after the upgrade, stderr:\n%s\nwant a warning saying how to move the data directory", stderr)
	}
	if mv, err := exec.Command("sh", "-c", m[1]).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", m[1], err, mv)
	}
	if _, err := os.Stat(old); err == nil {
		t.Errorf("%s is still there after %s", old, m[1])
	}
	code, out, stderr = run(t, env, "--config", cfg, "submit", "gotour", "summary errors", "--dir", "errors", "--json")
	if code != 0 || !strings.Contains(out, `"action": "rehydrated"`) || strings.Contains(stderr, "[WARN]") {
		t.Errorf("after the move: exit %d, want the same session and no warning\n%s%s", code, out, stderr)
	}
}

// TestConfinedInterpreterOutsideNamesTheGrant: a confined plugin whose
// interpreter is installed outside what it may read (pyenv's, in the home
// directory) dies reading its own installation; the error names the
// installation to grant with read_paths, not plugin.Serve.
func TestConfinedInterpreterOutsideNamesTheGrant(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	prefix := filepath.Join(t.TempDir(), "versions", "3.11.7")
	sh, err := os.ReadFile("/bin/sh")
	if err != nil {
		t.Skip("no /bin/sh to stand in for an interpreter")
	}
	for p, b := range map[string][]byte{filepath.Join(prefix, "bin", "python"): sh, filepath.Join(prefix, "lib", "stdlib.py"): []byte("# the standard library\n")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The interpreter reads its standard library first thing, as Python does.
	ws := t.TempDir()
	if err := os.Symlink(filepath.Join(prefix, "bin", "python"), filepath.Join(ws, "python")); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfigIn(t, ws, "agent \"py\" {\n  command = [\"./python\", \"-c\", \"cat "+filepath.Join(prefix, "lib", "stdlib.py")+"\"]\n}\n")
	code, out, stderr := run(t, nil, "--config", cfg, "submit", "py", "hello")
	want := `read_paths = ["` + prefix + `"]`
	if code == 0 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "(through "+filepath.Join(ws, "python")+")") || strings.Contains(stderr, "plugin.Serve") {
		t.Errorf("exit %d\n%s%s\nwant the interpreter's installation named as the grant (%s), not plugin.Serve", code, out, stderr, want)
	}
}

// TestFreshPlacementStopsQuietly: the fresh baseline stops each session
// after its task as a matter of course; that is not a plugin's crash,
// and nothing is logged as one.
func TestFreshPlacementStopsQuietly(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, strings.TrimSuffix(scriptedAgent("scripted"), "}\n")+"  pool {\n    placement = \"fresh\"\n  }\n}\n")
	for i := range 3 {
		code, out, stderr := run(t, nil, "--config", cfg, "submit", "scripted", "echo:hi")
		if code != 0 || strings.Contains(stderr, "[ERROR]") || strings.Contains(stderr, "[WARN]") {
			t.Errorf("task %d under placement = fresh: exit %d\n%s%s\nwant no error or warning logged", i, code, out, stderr)
		}
	}
}
