// Package pythontest finds the Python interpreter that tests of the Python
// SDK (sdk/python) and its users run agents with: Python 3.11 or later
// with grpcio, protobuf and cryptography importable. On Debian they are
// python3-grpcio, python3-protobuf and python3-cryptography, which .ci/run
// installs; Debian's /usr/bin/python3 is preferred over a python3 earlier
// on the PATH (pyenv's, say) that lacks them.
package pythontest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/hearth-dev/hearth/internal/testenv"
)

var (
	once sync.Once
	path string
	err  error
)

// Find returns the interpreter: $HEARTH_PYTHON, /usr/bin/python3, or
// python3 on the PATH, the first that has what the SDK needs.
func Find() (string, error) {
	once.Do(func() {
		var tried []string
		for _, p := range []string{os.Getenv("HEARTH_PYTHON"), "/usr/bin/python3", "python3"} {
			if p == "" {
				continue
			}
			full, lerr := exec.LookPath(p)
			if lerr != nil {
				continue
			}
			out, cerr := exec.Command(full, "-c", "import sys, grpc, google.protobuf, cryptography; assert sys.version_info >= (3, 11), sys.version").CombinedOutput()
			if cerr == nil {
				path = full
				return
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			tried = append(tried, fmt.Sprintf("%s: %s", full, lines[len(lines)-1]))
		}
		err = fmt.Errorf("no Python 3.11+ with grpcio, protobuf and cryptography (tried %s); install python3-grpcio python3-protobuf python3-cryptography (.ci/run does), or name one in HEARTH_PYTHON", strings.Join(tried, "; "))
	})
	return path, err
}

// Need returns the interpreter. Without one it skips the test, or fails it
// when CI=true: CI installs it, so a missing one there is a bug.
func Need(t testing.TB) string {
	t.Helper()
	p, err := Find()
	if err != nil {
		testenv.Missing(t, err.Error(), "apt-get install python3 python3-grpcio python3-protobuf python3-cryptography")
	}
	return p
}
