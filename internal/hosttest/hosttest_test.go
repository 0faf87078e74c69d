package hosttest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/internal/procwait"
)

// The test binary plays three parts, chosen by envPart: the test, a
// parent test binary that starts a helper host with Start, and that
// helper.
const envPart = "HEARTH_HOSTTEST_PART"

func TestMain(m *testing.M) {
	if os.Getenv(envPart) == "helper" {
		// A helper host that never ends on its own and ignores SIGTERM,
		// as the stuck one that outlived its test binary for an hour did.
		// (It sleeps rather than blocks: the runtime ends a program
		// whose goroutines are all blocked.)
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("helper", os.Getpid())
		time.Sleep(time.Hour)
	}
	os.Exit(m.Run())
}

// TestParentPart is the parent test binary's body: it starts a helper
// with Start and says its PID, then waits to be killed. It does nothing
// in the suite itself.
func TestParentPart(t *testing.T) {
	if os.Getenv(envPart) != "parent" {
		t.Skip("the parent test binary's part in TestAHelperDiesWithItsTestBinary")
	}
	_, sc := Start(t, os.Stderr, envPart+"=helper")
	fmt.Println("helper", ExpectLine(t, sc, "helper")[0])
	time.Sleep(time.Hour)
}

// TestAHelperDiesWithItsTestBinary kills a test binary with SIGKILL, so
// that none of its cleanups run, and requires the helper host it had
// started to be gone.
func TestAHelperDiesWithItsTestBinary(t *testing.T) {
	parent := exec.Command(os.Args[0], "-test.run=^TestParentPart$")
	parent.Env = append(os.Environ(), envPart+"=parent")
	parent.Stderr = os.Stderr
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = parent.Process.Kill(); _ = parent.Wait() })
	helper := Atoi(t, ExpectLine(t, bufio.NewScanner(out), "helper")[0])
	t.Cleanup(func() { _ = syscall.Kill(helper, syscall.SIGKILL) })
	if !procwait.Alive(helper) {
		t.Fatalf("helper %d is not running", helper)
	}
	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	if !procwait.Gone(helper, 5*time.Second) {
		t.Errorf("helper host %d outlived its killed test binary", helper)
	}
}
