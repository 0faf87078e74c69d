// Package procwait tells when a process is gone, for the checks and tests
// that must see a plugin exit (an orphan after its host's SIGKILL, a
// plugin after shutdown) without polling on a timer where the kernel can
// say it. It also holds hearth's one parser of /proc/PID/stat, which the
// host's plugin registry reads to find a process's ancestors.
package procwait

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Stat is what hearth reads of /proc/PID/stat: the process's state and
// where it sits among processes.
type Stat struct {
	// State is the state letter: R running, S sleeping, Z zombie, ...
	State byte
	// PPID, PGRP and Session are the parent, the process group and the
	// session.
	PPID, PGRP, Session int
}

// ReadStat reads /proc/PID/stat (Linux only: elsewhere the file is not
// there and the error says so).
func ReadStat(pid int) (Stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	return ParseStat(pid, string(b))
}

// ParseStat reads /proc/PID/stat's text, "PID (COMM) STATE PPID PGRP
// SESSION ...". The command name is the process's to choose and may hold
// spaces and parentheses, "a) S 1 1 1 (b" among them: the fields that
// follow it start after the last ')'. Errors name the file and the field.
func ParseStat(pid int, s string) (Stat, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return Stat{}, fmt.Errorf("/proc/%d/stat: no command name in parentheses", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 4 {
		return Stat{}, fmt.Errorf("/proc/%d/stat: %d fields after the command name, want at least 4 (state, ppid, pgrp, session)", pid, len(f))
	}
	if len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("/proc/%d/stat: state (field 3) is %q, want one letter", pid, f[0])
	}
	st := Stat{State: f[0][0]}
	for j, field := range []struct {
		name string
		to   *int
	}{{"ppid", &st.PPID}, {"pgrp", &st.PGRP}, {"session", &st.Session}} {
		n, err := strconv.Atoi(f[j+1])
		if err != nil {
			return Stat{}, fmt.Errorf("/proc/%d/stat: %s (field %d): %w", pid, field.name, j+4, err)
		}
		*field.to = n
	}
	return st, nil
}
