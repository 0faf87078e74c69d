package confine

import (
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The shim's seccomp filter: the sockets Landlock does not see yet.
//
// Landlock restricts TCP (ABI 4) but not Multipath TCP, which a program
// asks for by protocol (socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP)) and
// which binds and connects past connect_ports; nor UDP, SCTP, raw or
// packet sockets, or other families (AF_VSOCK reaches a virtual machine's
// host). So the shim installs a filter, inherited by everything the
// plugin starts and never removed, that decides on socket(2):
//
//   - Multipath TCP is refused everywhere with EPROTONOSUPPORT, which
//     programs (Go's net among them) answer by falling back to plain TCP,
//     where Landlock's rules apply;
//   - where connect_ports is set (Policy.RestrictTCP), an AF_INET or
//     AF_INET6 socket must be a stream socket of protocol 0 or TCP, and
//     only AF_UNIX and AF_NETLINK sockets are made besides; the rest get
//     EACCES (or EAFNOSUPPORT for a family) as Landlock's refusals do.
//
// and, since a filter on socket(2) is only as good as the ways around it:
//
//   - io_uring (io_uring_setup, _enter, _register) gets ENOSYS: its
//     IORING_OP_SOCKET makes sockets without socket(2);
//   - a system call of another architecture (the i386 ABI's socketcall
//     through int 0x80) or of the x32 ABI gets ENOSYS.
//
// Arguments are compared on their low 32 bits alone: socket(2) takes
// ints, and the kernel ignores what a caller puts in the upper half of
// the register, so a filter that compared all 64 bits (as
// elastic/go-seccomp-bpf's conditions do, which is why this one is
// assembled here) would let AF_INET|1<<32 through as "not AF_INET". The
// program is held to Decide, a plain Go function, by a table test and a
// fuzz target that run it in a BPF virtual machine (seccomp_test.go).

// seccomp_data offsets (linux/seccomp.h): the system call number, the
// architecture, and each argument's low word (little-endian).
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16 // socket(2)'s domain
	offArg1 = 24 // its type
	offArg2 = 32 // its protocol
)

// x32Bit marks a system call of the x32 ABI.
const x32Bit = 0x40000000

// sockTypeMask keeps a socket type without SOCK_NONBLOCK and SOCK_CLOEXEC.
const sockTypeMask = 0xf

// Seccomp actions.
const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retErrno = unix.SECCOMP_RET_ERRNO
)

// SeccompData is the part of the kernel's seccomp_data the filter reads.
type SeccompData struct {
	Nr   uint32
	Arch uint32
	Args [6]uint64
}

// Decide is what the filter answers for d, the reference the assembled
// program is tested against: SECCOMP_RET_ALLOW, or SECCOMP_RET_ERRNO with
// the errno.
func Decide(d SeccompData, arch uint32, sys Syscalls, restrictNet bool) uint32 {
	if d.Arch != arch || d.Nr&x32Bit != 0 {
		return retErrno | uint32(unix.ENOSYS)
	}
	switch d.Nr {
	case sys.IOURingSetup, sys.IOURingEnter, sys.IOURingRegister:
		return retErrno | uint32(unix.ENOSYS)
	case sys.Socket:
	default:
		return retAllow
	}
	family, typ, proto := uint32(d.Args[0]), uint32(d.Args[1]), uint32(d.Args[2])
	switch family {
	case unix.AF_INET, unix.AF_INET6:
		if proto == unix.IPPROTO_MPTCP {
			return retErrno | uint32(unix.EPROTONOSUPPORT)
		}
		if restrictNet && (typ&sockTypeMask != unix.SOCK_STREAM || (proto != 0 && proto != unix.IPPROTO_TCP)) {
			return retErrno | uint32(unix.EACCES)
		}
		return retAllow
	case unix.AF_UNIX, unix.AF_NETLINK:
		return retAllow
	}
	if restrictNet {
		return retErrno | uint32(unix.EAFNOSUPPORT)
	}
	return retAllow
}

// Syscalls are the numbers of the system calls the filter looks at, on
// the architecture it is made for.
type Syscalls struct {
	Socket, IOURingSetup, IOURingEnter, IOURingRegister uint32
}

// Filter assembles the filter for arch (an AUDIT_ARCH_ value) and its
// system call numbers.
func Filter(arch uint32, sys Syscalls, restrictNet bool) []bpf.Instruction {
	// Built back to front would need no label arithmetic; front to back
	// with named jumps reads better, so jumps are resolved at the end.
	var p program
	errno := func(e unix.Errno) bpf.Instruction { return bpf.RetConstant{Val: retErrno | uint32(e)} }
	p.add(bpf.LoadAbsolute{Off: offArch, Size: 4})
	p.jumpIf(bpf.JumpNotEqual, arch, "enosys", "")
	p.add(bpf.LoadAbsolute{Off: offNr, Size: 4})
	p.jumpIf(bpf.JumpBitsSet, x32Bit, "enosys", "")
	p.jumpIf(bpf.JumpEqual, sys.IOURingSetup, "enosys", "")
	p.jumpIf(bpf.JumpEqual, sys.IOURingEnter, "enosys", "")
	p.jumpIf(bpf.JumpEqual, sys.IOURingRegister, "enosys", "")
	p.jumpIf(bpf.JumpNotEqual, sys.Socket, "allow", "")
	// socket(2): the family.
	p.add(bpf.LoadAbsolute{Off: offArg0, Size: 4})
	p.jumpIf(bpf.JumpEqual, unix.AF_INET, "inet", "")
	p.jumpIf(bpf.JumpEqual, unix.AF_INET6, "inet", "")
	if restrictNet {
		p.jumpIf(bpf.JumpEqual, unix.AF_UNIX, "allow", "")
		p.jumpIf(bpf.JumpEqual, unix.AF_NETLINK, "allow", "")
		p.add(errno(unix.EAFNOSUPPORT))
	} else {
		p.add(bpf.RetConstant{Val: retAllow})
	}
	p.label("inet")
	p.add(bpf.LoadAbsolute{Off: offArg2, Size: 4})
	p.jumpIf(bpf.JumpEqual, unix.IPPROTO_MPTCP, "noproto", "")
	if restrictNet {
		p.jumpIf(bpf.JumpEqual, 0, "", "tcp?")
		p.jump("stream?")
		p.label("tcp?")
		p.jumpIf(bpf.JumpNotEqual, unix.IPPROTO_TCP, "eacces", "")
		p.label("stream?")
		p.add(bpf.LoadAbsolute{Off: offArg1, Size: 4})
		p.add(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: sockTypeMask})
		p.jumpIf(bpf.JumpNotEqual, unix.SOCK_STREAM, "eacces", "")
	}
	p.label("allow")
	p.add(bpf.RetConstant{Val: retAllow})
	p.label("enosys")
	p.add(errno(unix.ENOSYS))
	p.label("noproto")
	p.add(errno(unix.EPROTONOSUPPORT))
	p.label("eacces")
	p.add(errno(unix.EACCES))
	return p.resolve()
}

// program is a BPF program with named jump targets, resolved at the end.
type program struct {
	ins    []bpf.Instruction
	jumps  map[int][2]string // instruction: its true and false targets ("" is the next)
	labels map[string]int
}

func (p *program) add(i bpf.Instruction) { p.ins = append(p.ins, i) }

func (p *program) jumpIf(cond bpf.JumpTest, val uint32, yes, no string) {
	if p.jumps == nil {
		p.jumps = map[int][2]string{}
	}
	p.jumps[len(p.ins)] = [2]string{yes, no}
	p.add(bpf.JumpIf{Cond: cond, Val: val})
}

func (p *program) jump(to string) {
	p.jumpIf(bpf.JumpEqual, 0, to, to)
}

func (p *program) label(name string) {
	if p.labels == nil {
		p.labels = map[string]int{}
	}
	p.labels[name] = len(p.ins)
}

// resolve fills in the jumps' offsets. A target must lie ahead, within
// 255 instructions: the program is small, and a mistake panics at once
// in every test rather than filtering wrongly.
func (p *program) resolve() []bpf.Instruction {
	skip := func(at int, target string) uint8 {
		if target == "" {
			return 0
		}
		to, ok := p.labels[target]
		if !ok || to <= at || to-at-1 > 255 {
			panic("confine: bad seccomp jump to " + target)
		}
		return uint8(to - at - 1)
	}
	for at, t := range p.jumps {
		j := p.ins[at].(bpf.JumpIf)
		j.SkipTrue, j.SkipFalse = skip(at, t[0]), skip(at, t[1])
		if j.Cond == bpf.JumpEqual && j.Val == 0 && t[0] == t[1] {
			// An unconditional jump.
			p.ins[at] = bpf.Jump{Skip: uint32(j.SkipTrue)}
			continue
		}
		p.ins[at] = j
	}
	return p.ins
}
