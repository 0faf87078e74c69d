package procwait

import (
	"os"
	"runtime"
	"strconv"
	"testing"
)

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Stat
		ok   bool
	}{
		{"42 (agent) S 7 42 42 0 -1", Stat{'S', 7, 42, 42}, true},
		{"42 (agent) Z 7 42 42 0 -1", Stat{'Z', 7, 42, 42}, true},
		// A name chosen to fool a parser that splits on spaces or stops
		// at the first ')'.
		{"42 (a) S 1 1 1 (b) S 7 42 42 0", Stat{'S', 7, 42, 42}, true},
		{"42 (a) Z (b) R 7 42 42 0", Stat{'R', 7, 42, 42}, true},
		{"42 (agent", Stat{}, false},
		{"42 (agent) S 7", Stat{}, false},
		{"42 (agent) S x 42 42", Stat{}, false},
		{"42 (agent) SS 7 42 42", Stat{}, false},
	} {
		got, err := ParseStat(42, tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%q: got %+v, %v; want %+v, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestReadStat(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/PID/stat is Linux's")
	}
	st, err := ReadStat(os.Getpid())
	if err != nil || st.PPID != os.Getppid() || st.State == 'Z' {
		t.Errorf("this process: %+v, %v; want its parent %d, not a zombie", st, err, os.Getppid())
	}
	if !Alive(os.Getpid()) {
		t.Error("this process is not alive")
	}
}

// FuzzParseStat: an error comes with no result; and whatever the command
// name, s as one, the fields after it are read.
func FuzzParseStat(f *testing.F) {
	f.Add("42 (agent) S 7 42 42 0 -1")
	f.Add("1 (a) b) S 0 1 1 0 -1 " + strconv.Itoa(1<<20))
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseStat(1, s)
		if err != nil && st != (Stat{}) {
			t.Errorf("an error with a result: %+v", st)
		}
		line := "7 (" + s + ") R 3 4 5 0 -1 0"
		if st, err := ParseStat(7, line); err != nil || st != (Stat{'R', 3, 4, 5}) {
			t.Errorf("%q: got %+v, %v; want {R 3 4 5}", line, st, err)
		}
	})
}
