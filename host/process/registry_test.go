package process

import (
	"os"
	"strconv"
	"testing"
)

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want procStat
		ok   bool
	}{
		{"42 (agent) S 7 42 42 0 -1", procStat{7, 42, 42}, true},
		// A name chosen to fool a parser that splits on spaces or stops
		// at the first ')'.
		{"42 (a) S 1 1 1 (b) S 7 42 42 0", procStat{7, 42, 42}, true},
		{"42 (agent", procStat{}, false},
		{"42 (agent) S 7", procStat{}, false},
		{"42 (agent) S x 42 42", procStat{}, false},
	} {
		got, err := parseStat(42, tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%q: got %+v, %v; want %+v, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	st, err := stat(os.Getpid())
	if err != nil || st.ppid != os.Getppid() {
		t.Errorf("this process: %+v, %v; want its parent %d", st, err, os.Getppid())
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add("42 (agent) S 7 42 42 0 -1")
	f.Add("1 (a) b) S 0 1 1 0 -1 " + strconv.Itoa(1<<20))
	f.Fuzz(func(t *testing.T, s string) {
		st, err := parseStat(1, s)
		if err != nil && st != (procStat{}) {
			t.Errorf("an error with a result: %+v", st)
		}
	})
}
