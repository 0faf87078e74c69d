package confine

import (
	"encoding/binary"
	"fmt"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The numbers the filter is tested with: amd64's.
var (
	testArch = uint32(unix.AUDIT_ARCH_X86_64)
	testSys  = Syscalls{Socket: 41, IOURingSetup: 425, IOURingEnter: 426, IOURingRegister: 427}
)

// runFilter runs the assembled filter on d in a BPF virtual machine. The
// VM reads words big-endian, the kernel in the machine's order: each word
// is laid out for the VM at the offset the kernel reads it from.
func runFilter(t testing.TB, vm *bpf.VM, d SeccompData) uint32 {
	in := make([]byte, 64)
	binary.BigEndian.PutUint32(in[offNr:], d.Nr)
	binary.BigEndian.PutUint32(in[offArch:], d.Arch)
	for i, a := range d.Args {
		binary.BigEndian.PutUint32(in[16+8*i:], uint32(a))       // low word first, as on little-endian
		binary.BigEndian.PutUint32(in[16+8*i+4:], uint32(a>>32)) // then the high word
	}
	got, err := vm.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(got)
}

func vmFor(t testing.TB, restrict bool) *bpf.VM {
	vm, err := bpf.NewVM(Filter(testArch, testSys, restrict))
	if err != nil {
		t.Fatal(err)
	}
	return vm
}

func sock(family, typ, proto uint64) SeccompData {
	return SeccompData{Nr: testSys.Socket, Arch: testArch, Args: [6]uint64{family, typ, proto}}
}

// TestSeccompFilter: the sockets and calls of issue 25, each as the
// filter and Decide answer it, with connect_ports set and not.
func TestSeccompFilter(t *testing.T) {
	allow, eacces := uint32(retAllow), retErrno|uint32(unix.EACCES)
	noproto, nosys, nofam := retErrno|uint32(unix.EPROTONOSUPPORT), retErrno|uint32(unix.ENOSYS), retErrno|uint32(unix.EAFNOSUPPORT)
	const inet, inet6, stream, dgram, raw = unix.AF_INET, unix.AF_INET6, unix.SOCK_STREAM, unix.SOCK_DGRAM, unix.SOCK_RAW
	tests := []struct {
		name         string
		d            SeccompData
		open, closed uint32 // without and with connect_ports
	}{
		{"tcp", sock(inet, stream, 0), allow, allow},
		{"tcp by number", sock(inet6, stream|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.IPPROTO_TCP), allow, allow},
		{"mptcp", sock(inet, stream, unix.IPPROTO_MPTCP), noproto, noproto},
		{"mptcp6", sock(inet6, stream|unix.SOCK_CLOEXEC, unix.IPPROTO_MPTCP), noproto, noproto},
		{"mptcp, upper half set", sock(inet|1<<32, stream, unix.IPPROTO_MPTCP|1<<40), noproto, noproto},
		{"udp", sock(inet, dgram, 0), allow, eacces},
		{"udp6 by number", sock(inet6, dgram, unix.IPPROTO_UDP), allow, eacces},
		{"udp, upper half set", sock(inet|0xffffffff<<32, dgram, 0), allow, eacces},
		{"sctp stream", sock(inet, stream, unix.IPPROTO_SCTP), allow, eacces},
		{"sctp seqpacket", sock(inet, unix.SOCK_SEQPACKET, unix.IPPROTO_SCTP), allow, eacces},
		{"raw", sock(inet, raw, unix.IPPROTO_ICMP), allow, eacces},
		{"packet", sock(unix.AF_PACKET, raw, 0), allow, nofam},
		{"vsock", sock(unix.AF_VSOCK, stream, 0), allow, nofam},
		{"unix", sock(unix.AF_UNIX, stream, 0), allow, allow},
		{"netlink", sock(unix.AF_NETLINK, raw, unix.NETLINK_ROUTE), allow, allow},
		{"io_uring_setup", SeccompData{Nr: 425, Arch: testArch}, nosys, nosys},
		{"io_uring_enter", SeccompData{Nr: 426, Arch: testArch}, nosys, nosys},
		{"io_uring_register", SeccompData{Nr: 427, Arch: testArch}, nosys, nosys},
		{"i386 socketcall", SeccompData{Nr: 102, Arch: unix.AUDIT_ARCH_I386, Args: [6]uint64{1}}, nosys, nosys},
		{"x32 socket", SeccompData{Nr: x32Bit | 41, Arch: testArch, Args: [6]uint64{inet, dgram}}, nosys, nosys},
		{"read", SeccompData{Nr: 0, Arch: testArch}, allow, allow},
		{"connect", SeccompData{Nr: 42, Arch: testArch}, allow, allow},
	}
	open, closed := vmFor(t, false), vmFor(t, true)
	for _, tt := range tests {
		for _, c := range []struct {
			vm       *bpf.VM
			restrict bool
			want     uint32
		}{{open, false, tt.open}, {closed, true, tt.closed}} {
			if got := runFilter(t, c.vm, tt.d); got != c.want {
				t.Errorf("%s (connect_ports %t): the filter answers %#x, want %#x", tt.name, c.restrict, got, c.want)
			}
			if got := Decide(tt.d, testArch, testSys, c.restrict); got != c.want {
				t.Errorf("%s (connect_ports %t): Decide answers %#x, want %#x", tt.name, c.restrict, got, c.want)
			}
		}
	}
}

// FuzzSeccompFilter: whatever a process passes, the assembled filter
// answers what Decide does.
func FuzzSeccompFilter(f *testing.F) {
	f.Add(uint32(41), testArch, uint64(unix.AF_INET), uint64(unix.SOCK_STREAM), uint64(unix.IPPROTO_MPTCP), false)
	f.Add(uint32(41), testArch, uint64(unix.AF_INET6), uint64(unix.SOCK_DGRAM), uint64(0), true)
	f.Add(uint32(425), testArch, uint64(0), uint64(0), uint64(0), true)
	f.Add(uint32(102), uint32(unix.AUDIT_ARCH_I386), uint64(1), uint64(0), uint64(0), true)
	vms := map[bool]*bpf.VM{false: vmFor(f, false), true: vmFor(f, true)}
	f.Fuzz(func(t *testing.T, nr, arch uint32, a0, a1, a2 uint64, restrict bool) {
		d := SeccompData{Nr: nr, Arch: arch, Args: [6]uint64{a0, a1, a2}}
		if got, want := runFilter(t, vms[restrict], d), Decide(d, testArch, testSys, restrict); got != want {
			t.Errorf("%s: the filter answers %#x, Decide %#x", fmt.Sprint(d), got, want)
		}
	})
}
