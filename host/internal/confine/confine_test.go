package confine

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hearth-dev/hearth/internal/testenv"
)

// needLandlock skips a test on a system without Landlock, and fails it
// in CI, where the machines have it.
func needLandlock(t *testing.T) {
	t.Helper()
	if st := Probe(); !st.Available() {
		testenv.Missing(t, "no Landlock: "+st.String(), "run on a Linux kernel with Landlock, as CI machines have")
	}
}

// shim runs this test binary as the shim with p and returns what the
// program printed, stdout and stderr together.
func shim(t *testing.T, p *Policy, extra ...*os.File) (string, error) {
	t.Helper()
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = p.Args
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.ExtraFiles = extra
	f, err := p.Attach(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

var base = []Grant{
	{Path: "/usr", Access: Read, Optional: true},
	{Path: "/bin", Access: Read, Optional: true},
	{Path: "/lib", Access: Read, Optional: true},
	{Path: "/lib64", Access: Read, Optional: true},
	{Path: "/etc", Access: ReadOnly},
	{Path: "/dev/null", Access: Device},
	{Path: "/proc/self", Access: ReadOnly},
}

// TestShimConfinesTheProgram runs a shell under the shim: it reads what
// is granted, and the kernel refuses the rest with EACCES.
func TestShimConfinesTheProgram(t *testing.T) {
	needLandlock(t)
	granted, secret := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(granted, "ok"), []byte("granted\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secret, "key"), []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := `cat ` + granted + `/ok; cat ` + secret + `/key; echo new > ` + granted + `/made && echo wrote;` +
		`echo x > ` + secret + `/planted; grep -c . /proc/self/status >/dev/null && echo proc; ` +
		`kill -0 ` + strconv.Itoa(os.Getpid()) + ` 2>/dev/null || echo cannot-signal-the-host; echo done`
	p := &Policy{Program: "/bin/sh", Args: []string{"sh", "-c", script},
		Grants: append(base, Grant{Path: granted, Access: Write})}
	out, err := shim(t, p)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, want := range []string{"granted", secret + "/key: Permission denied", "wrote", secret + "/planted: Permission denied", "proc", "cannot-signal-the-host", "done"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "secret\n") {
		t.Errorf("the confined program read the secret:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(secret, "planted")); err == nil {
		t.Error("the confined program wrote outside its grants")
	}
}

// TestShimExecutesASealedCopy runs a program from an anonymous memory
// file, as a pinned program runs: Landlock lets it execute, and the
// environment variable carrying the policy does not reach it.
func TestShimExecutesASealedCopy(t *testing.T) {
	needLandlock(t)
	fd, err := unix.MemfdCreate("copy", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "copy")
	defer f.Close()
	if _, err := f.WriteString("#!/bin/sh\necho from the copy; env | grep -c " + EnvPolicy + "\n"); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod("/proc/self/fd/"+strconv.Itoa(int(f.Fd())), 0o500); err != nil {
		t.Fatal(err)
	}
	p := &Policy{Program: "/proc/self/fd/3", Args: []string{"agent"}, Grants: base}
	out, _ := shim(t, p, f)
	if !strings.Contains(out, "from the copy\n0\n") {
		t.Errorf("got %q, want the copy's output and no policy variable", out)
	}
}

// TestShimFailsClearly: a grant of a path that does not exist stops the
// shim before the program runs, with a message on stderr.
func TestShimFailsClearly(t *testing.T) {
	needLandlock(t)
	p := &Policy{Program: "/bin/echo", Args: []string{"echo", "ran"}, Grants: []Grant{{Path: "/no/such/dir", Access: Read}}}
	out, err := shim(t, p)
	if err == nil || strings.Contains(out, "ran") || !strings.Contains(out, "cannot confine the plugin") || !strings.Contains(out, "/no/such/dir") {
		t.Errorf("got %v, %q; want exit 126 naming the missing path", err, out)
	}
}

// FuzzDecode: the shim reads its policy from an inherited file; whatever is
// there, it decodes or refuses, and what it decodes names a program.
func FuzzDecode(f *testing.F) {
	b, _ := json.Marshal(&Policy{Program: "/bin/true", Args: []string{"true"}, Grants: base, RestrictTCP: true, ConnectTCP: []uint16{443}})
	f.Add(b)
	f.Add([]byte(`{"program":"","args":[]}`))
	f.Add([]byte(`{"program":"x","args":["x"],"grants":[{"path":"/","access":"write"}]}`))
	f.Fuzz(func(t *testing.T, s []byte) {
		p, err := decode(s)
		if err == nil && (p.Program == "" || len(p.Args) == 0) {
			t.Errorf("decoded %+v without a program", p)
		}
	})
}
