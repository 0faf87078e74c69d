// Package pythonagent holds the test of the Python agent example: every
// command its README shows runs, in order, as a new user would run it.
package pythonagent

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth/internal/pythontest"
)

var shBlock = regexp.MustCompile("(?s)```sh\n(.*?)```")

// TestReadme runs the README's commands in this directory with sh, on
// the PATH as it is (where pyenv's python3 may come first, without the
// SDK's dependencies: the README names the interpreter that has them),
// with the default data directory in a fresh state directory, and checks
// what the README says they show, and that nothing warns.
func TestReadme(t *testing.T) {
	python := pythontest.Need(t)
	if python != "/usr/bin/python3" {
		t.Skipf("the README uses Debian's /usr/bin/python3, and the Python with the SDK's dependencies here is %s", python)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on the PATH")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, m := range shBlock.FindAllStringSubmatch(string(readme), -1) {
		lines = append(lines, strings.Split(strings.TrimSpace(m[1]), "\n")...)
	}
	// What the commands leave behind is removed; the example stays as
	// committed.
	t.Cleanup(func() {
		for _, p := range []string{".venv", "hearth", ".hearth", "__pycache__", "../../sdk/python/build", "../../sdk/python/hearth_agent.egg-info"} {
			_ = os.RemoveAll(p)
		}
	})
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "HEARTH_DATA_DIR=") && !strings.HasPrefix(e, "HEARTH_CONFIG=") {
			env = append(env, e)
		}
	}
	env = append(env,
		// The go that runs this test before the rest of the PATH.
		"PATH="+filepath.Dir(goBin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"XDG_STATE_HOME="+t.TempDir(),
		"PIP_DISABLE_PIP_VERSION_CHECK=1",
		"PYTHONDONTWRITEBYTECODE=1",
	)
	want := map[string][]string{
		"python -m unittest":   {"OK"},
		"agents test":          {"PASS  denied tool uses", "PASS  guarded path", "PASS  host crash", "11 passed, 0 failed"},
		"run .":                {"[1/3] app", "spawned", "[2/3] todos", "reused", "(1.00 > 0.60)", "3 succeeded"},
		"--dir sample/secrets": {"denied: sample/secrets: sample/secrets holds credentials: search the code instead"},
		`"FIXME" --dir`:        {"rehydrated", "1 matches of 'FIXME' in 1 files (1 already known to this session)"},
		"sessions list":        {"finder", "sample/app"},
	}
	seen := 0
	for _, line := range lines {
		cmd := exec.Command("sh", "-c", line)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		if strings.Contains(string(out), "[WARN]") {
			t.Errorf("%s warns:\n%s", line, out)
		}
		for key, ws := range want {
			if !strings.Contains(line, key) {
				continue
			}
			seen++
			for _, w := range ws {
				if !strings.Contains(string(out), w) {
					t.Errorf("%s: output does not contain %q:\n%s", line, w, out)
				}
			}
		}
	}
	if seen != len(want) {
		t.Errorf("checked %d commands' output, want %d: the README's commands changed", seen, len(want))
	}
}
