package process

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/hearth-dev/hearth"
)

// A pinned program (sha256 in its agent block) must run the bytes that
// were checked. Checking the file at its path and then executing the path
// runs whatever is at the path by then: swapping two binaries there ran an
// impostor 9 times in 20 (issue 13). So the program is copied, once, into
// an anonymous memory file while it is hashed; the copy is sealed against
// writes, and the plugin is executed from it (/proc/self/fd/N of the
// child, which inherits it). Nothing at the path can change what runs. A
// script (#!) works the same way: the kernel hands its interpreter the
// sealed copy's /dev/fd path.

// mismatchError is a program whose bytes do not hash to the pin.
type mismatchError struct{ got string }

func (e *mismatchError) Error() string { return "sha256 " + e.got + " does not match the pin" }

// pinnedCopy copies the program at path into a sealed memory file while
// hashing it, and returns the file when the hash is want.
func pinnedCopy(path, want string) (*os.File, error) {
	src, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	fd, err := unix.MemfdCreate("hearth-pinned-"+filepath.Base(path), unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("make a private copy of %s: %w", path, err)
	}
	dst := os.NewFile(uintptr(fd), "pinned "+path)
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(dst, h), src); err != nil {
		dst.Close()
		return nil, fmt.Errorf("copy %s: %w", path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		dst.Close()
		return nil, &mismatchError{got: got}
	}
	if _, err := unix.FcntlInt(dst.Fd(), unix.F_ADD_SEALS, unix.F_SEAL_WRITE|unix.F_SEAL_GROW|unix.F_SEAL_SHRINK|unix.F_SEAL_SEAL); err != nil {
		dst.Close()
		return nil, fmt.Errorf("seal the private copy of %s: %w", path, err)
	}
	if err := os.Chmod("/proc/self/fd/"+fmt.Sprint(dst.Fd()), 0o500); err != nil {
		dst.Close()
		return nil, fmt.Errorf("make the private copy of %s executable: %w", path, err)
	}
	return dst, nil
}

// missingProgram is a program that cannot be found: a start failure no
// retry fixes.
type missingProgram struct{ err error }

func (e missingProgram) Error() string { return hearth.ErrProgramMissing.Error() }

func (e missingProgram) Is(target error) bool {
	return target == hearth.ErrProgramMissing || target == hearth.ErrPluginStart
}

// CheckProgram checks, without starting it, that a plugin's program can be
// found and, when sha256 is set, that its bytes match the pin: what
// `hearth config validate` reports before anything runs.
func CheckProgram(argv0, sha256 string) error {
	path, err := exec.LookPath(argv0)
	if err != nil {
		return fmt.Errorf("%w: %v", hearth.ErrProgramMissing, err)
	}
	if sha256 == "" {
		return nil
	}
	f, err := pinnedCopy(path, sha256)
	var mismatch *mismatchError
	if errors.As(err, &mismatch) {
		return fmt.Errorf("%w: %s has sha256 %s, the config pins %s", hearth.ErrChecksumMismatch, path, mismatch.got, sha256)
	}
	if err != nil {
		return err
	}
	return f.Close()
}
