package conformance_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// hung holds the tasks of agents that ignore cancellation (the check gives
// up on them after its limit) until every test has run.
var hung = make(chan struct{})

// The harness runs agents over real gRPC connections in this process;
// nothing of them may outlive the tests but what the hung agents hold,
// which is released first.
func TestMain(m *testing.M) {
	code := m.Run()
	close(hung)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
