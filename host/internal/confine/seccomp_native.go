//go:build linux && (amd64 || arm64)

package confine

import (
	"runtime"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// nativeArch is this architecture's AUDIT_ARCH_ value.
var nativeArch = map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64}[runtime.GOARCH]

// nativeSyscalls are this architecture's numbers (io_uring's are the
// same on every architecture).
var nativeSyscalls = Syscalls{Socket: unix.SYS_SOCKET, IOURingSetup: unix.SYS_IO_URING_SETUP,
	IOURingEnter: unix.SYS_IO_URING_ENTER, IOURingRegister: unix.SYS_IO_URING_REGISTER}

// installFilter installs the filter on the calling thread, which the
// exec that follows hands to the program. no_new_privs must be set.
func installFilter(restrictNet bool) error {
	raw, err := bpf.Assemble(Filter(nativeArch, nativeSyscalls, restrictNet))
	if err != nil {
		return err
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	return unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0)
}
