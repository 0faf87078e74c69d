package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hearth-dev/hearth/host/api/client"
	"github.com/hearth-dev/hearth/internal/testenv"
)

// envStranger makes the test binary another user's program: it tries
// what issue 13's second local user did, and reports what happened.
const envStranger = "HEARTH_TEST_STRANGER"

// strangerUID is the user the stranger runs as: nobody.
const strangerUID = 65534

// attempt is one thing the stranger tried, and what came of it.
type attempt struct {
	What   string `json:"what"`
	Status int    `json:"status,omitempty"`
	Err    string `json:"err,omitempty"`
	Denied bool   `json:"denied"` // refused by the kernel (EACCES, EPERM)
}

// stranger runs as another user: it reads the request from its
// environment and writes its attempts as JSON to stdout.
func stranger() {
	var req struct {
		TokenFile, Socket, DataDir, HTTP string
		Routes                           []route
	}
	_ = json.Unmarshal([]byte(os.Getenv(envStranger)), &req)
	var out []attempt
	denied := func(err error) bool { return errors.Is(err, fs.ErrPermission) }
	_, err := os.ReadFile(req.TokenFile)
	out = append(out, attempt{What: "read the token file", Err: errString(err), Denied: denied(err)})
	_, err = os.ReadDir(req.DataDir)
	out = append(out, attempt{What: "list the data directory", Err: errString(err), Denied: denied(err)})
	c, err := net.Dial("unix", req.Socket)
	if err == nil {
		c.Close()
	}
	out = append(out, attempt{What: "connect to the socket", Err: errString(err), Denied: denied(err)})
	for _, r := range req.Routes {
		hreq, _ := http.NewRequest(r.method, "http://"+req.HTTP+r.path, strings.NewReader(string(r.body)))
		hreq.Header.Set("Content-Type", "application/json")
		a := attempt{What: r.method + " " + r.path}
		if resp, err := http.DefaultClient.Do(hreq); err != nil {
			a.Err = err.Error()
		} else {
			a.Status = resp.StatusCode
			resp.Body.Close()
		}
		out = append(out, a)
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// MarshalJSON and UnmarshalJSON carry a route to the stranger.
func (r route) MarshalJSON() ([]byte, error) {
	return json.Marshal([]string{r.method, r.path, string(r.body)})
}

func (r *route) UnmarshalJSON(b []byte) error {
	var v []string
	if err := json.Unmarshal(b, &v); err != nil || len(v) != 3 {
		return errors.New("a route is [method, path, body]")
	}
	r.method, r.path, r.body = v[0], v[1], []byte(v[2])
	return nil
}

// TestASecondLocalUser is issue 13's second local user, for real: a
// program running as another user (nobody) cannot read the token or the
// data directory, cannot connect to the socket, and gets 401 from every
// HTTP route that reads or changes state; nothing it tried changed
// anything. Switching users takes root: without it the test skips, or fails in CI (the
// same checks without the token run in TestEveryRouteNeedsTheToken).
func TestASecondLocalUser(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		testenv.Missing(t, "another user's program needs root to start as uid 65534", "run the tests as root, as CI does (TestEveryRouteNeedsTheToken covers a client without the token meanwhile)")
	}
	d := claudeCodeDaemon(t)
	// The data directory's parent is open to all, as a home directory
	// often is: the data directory's own mode (0700) must keep the
	// stranger out.
	if err := os.Chmod(filepath.Dir(d.dir), 0o755); err != nil {
		t.Fatal(err)
	}
	// The stranger's copy of this binary, where nobody may run it.
	dir, err := os.MkdirTemp("", "stranger")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "stranger")
	copyFile(t, os.Args[0], bin)
	var guarded []route
	for _, r := range routes(t) {
		if r.path != "/healthz" && r.path != "/login" {
			guarded = append(guarded, r)
		}
	}
	spec, _ := json.Marshal(map[string]any{"TokenFile": d.l.TokenFile, "Socket": d.l.Socket, "DataDir": d.dir, "HTTP": d.l.HTTP, "Routes": guarded})
	cmd := exec.Command(bin)
	cmd.Env = []string{envStranger + "=" + string(spec), "GORACE=atexit_sleep_ms=0"}
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: strangerUID, Gid: strangerUID}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the stranger: %v\n%s", err, out)
	}
	var attempts []attempt
	if err := json.Unmarshal(out, &attempts); err != nil || len(attempts) != 3+len(guarded) {
		t.Fatalf("the stranger's report %s: %v", out, err)
	}
	for _, a := range attempts {
		switch {
		case a.Status != 0 && a.Status != http.StatusUnauthorized:
			t.Errorf("%s: %d; want 401", a.What, a.Status)
		case a.Status == 0 && !a.Denied:
			t.Errorf("%s: %q; want the kernel to refuse it", a.What, a.Err)
		}
	}
	if sessions, err := d.c.Sessions(t.Context()); err != nil || len(sessions) != 0 {
		t.Errorf("after the stranger: sessions %+v, %v; want none", sessions, err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// envImpostor makes the test binary another user's server on the socket
// it names: it listens, says "ready", and holds what connects until its
// standard input closes.
const envImpostor = "HEARTH_TEST_IMPOSTOR"

func impostor(sock string) {
	l, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = os.Chmod(sock, 0o777)
	fmt.Println("ready")
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// TestClientChecksTheServersUser (issue 25): a socket served by another
// user (one in a shared directory, a path that names the wrong daemon)
// is refused by the client before it sends anything, naming the user;
// a hook payload or a run's files never reach it.
func TestClientChecksTheServersUser(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		testenv.Missing(t, "another user's program needs root to start as uid 65534", "run the tests as root, as CI does")
	}
	dir, err := os.MkdirTemp("", "impostor")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "impostor")
	copyFile(t, os.Args[0], bin)
	sock := filepath.Join(dir, "hearth.sock")
	cmd := exec.Command(bin)
	cmd.Env = []string{envImpostor + "=" + sock, "GORACE=atexit_sleep_ms=0"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: strangerUID, Gid: strangerUID}}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if line != "ready\n" {
		t.Fatalf("the impostor: %q", line)
	}
	c, err := client.Dial(context.Background(), client.Options{Socket: sock, DialTimeout: 3 * time.Second})
	if err == nil {
		c.Close()
		t.Fatal("the client dialled another user's socket")
	}
	if !errors.Is(err, client.ErrNotOurs) || !strings.Contains(err.Error(), "uid 65534") {
		t.Errorf("got %v, want ErrNotOurs naming uid 65534", err)
	}
}
