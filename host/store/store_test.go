package store

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
)

// The test binary doubles as a second process: HEARTH_STORE_HELPER names
// what it does.
func TestMain(m *testing.M) {
	switch h := os.Getenv("HEARTH_STORE_HELPER"); {
	case h == "":
		os.Exit(m.Run())
	case strings.HasPrefix(h, "rss-"):
		if err := runRSSHelper(strings.TrimPrefix(h, "rss-"), os.Getenv("HEARTH_STORE_DIR")); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		os.Exit(0)
	case h == "nofile":
		// Never closed: a store that failed is left as a crash leaves it.
		if err := nofileHelper(os.Getenv("HEARTH_STORE_DIR")); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		os.Exit(0)
	case h == "hold":
		// Open the directory, say so, and hold it until killed.
		if _, err := Open(os.Getenv("HEARTH_STORE_DIR"), Write, Options{Command: "store-test holder"}); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("open")
		select {}
	case h == "append":
		// Append events one at a time, reporting each once durable.
		s, err := Open(os.Getenv("HEARTH_STORE_DIR"), Write, Options{})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		for i := 1; ; i++ {
			ev := hearth.Event{Kind: "tool.used", Session: "s-1", Message: strconv.Itoa(i)}
			if err := appendEvent(s, ev).Wait(context.Background()); err != nil {
				fmt.Println("error", err)
				os.Exit(1)
			}
			fmt.Println("acked", i)
		}
	}
}

// appendEvent appends e and returns its write.
func appendEvent(s *Store, e hearth.Event) *Pending {
	_, p := s.Append(e)
	return p
}

func MustOpen(tb testing.TB, dir string) *Store {
	tb.Helper()
	s, err := Open(dir, Write, Options{GCInterval: -1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func TestSessionsSurviveReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	s, err := Open(dir, Write, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := record.Session{ID: "gotour-1", Agent: "gotour", Status: record.SessionLive, Files: []string{"a.go", "b.go"}, Capacity: 2}
	if err := s.PutSessionState(ctx, rec, []byte(`{"summaries":{}}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSession(ctx, record.Session{ID: "gotour-2", Agent: "gotour"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = MustOpen(t, dir)
	got, err := s.SessionRecord("gotour-1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Capacity != 2 || len(got.Files) != 2 || got.Status != record.SessionLive {
		t.Errorf("got %v", got)
	}
	state, err := s.SessionState("gotour-1")
	if err != nil || string(state) != `{"summaries":{}}` {
		t.Errorf("state: got %q, %v", state, err)
	}
	all, err := s.SessionRecords()
	if err != nil || len(all) != 2 || all[0].ID != "gotour-1" || all[1].ID != "gotour-2" {
		t.Errorf("sessions: got %v, %v", all, err)
	}
	if _, err := s.SessionRecord("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing session: got %v, want ErrNotFound", err)
	}
	if _, err := s.SessionState("gotour-2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing state: got %v, want ErrNotFound", err)
	}
}

func TestEventsAreOrderedPerStream(t *testing.T) {
	t.Parallel()
	s := MustOpen(t, t.TempDir())
	ctx := context.Background()
	var wg sync.WaitGroup
	const writers, each = 8, 200
	for w := range writers {
		wg.Go(func() {
			var last *Pending
			for i := range each {
				last = appendEvent(s, hearth.Event{Kind: "tool.used", Session: fmt.Sprintf("s-%d", w), Message: strconv.Itoa(i)})
			}
			if err := last.Wait(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	seen := map[uint64]bool{}
	for w := range writers {
		evs, err := s.Events(fmt.Sprintf("s-%d", w), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != each {
			t.Fatalf("stream s-%d: got %d events, want %d", w, len(evs), each)
		}
		for i, ev := range evs {
			if ev.Message != strconv.Itoa(i) {
				t.Fatalf("stream s-%d: event %d is %q, want the writer's order", w, i, ev.Message)
			}
			if i > 0 && ev.Seq <= evs[i-1].Seq || seen[ev.Seq] {
				t.Fatalf("stream s-%d: sequence %d out of order or repeated", w, ev.Seq)
			}
			seen[ev.Seq] = true
		}
	}
	// Paging: events after a sequence number, with a limit.
	all, _ := s.Events("s-0", 0, 0)
	page, err := s.Events("s-0", all[9].Seq, 5)
	if err != nil || len(page) != 5 || page[0].Seq != all[10].Seq {
		t.Errorf("page: got %d events starting at %d, want 5 from %d (%v)", len(page), page[0].Seq, all[10].Seq, err)
	}
	recent, err := s.RecentEvents("s-0", 3)
	if err != nil || len(recent) != 3 || recent[2].Seq != all[len(all)-1].Seq {
		t.Errorf("recent: got %v, %v; want the last 3 oldest first", recent, err)
	}
	if err := appendEvent(s, hearth.Event{Kind: "host.started"}).Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if hostEvents, _ := s.Events(HostStream, 0, 0); len(hostEvents) != 1 {
		t.Errorf("host stream: got %d events, want 1", len(hostEvents))
	}
}

func TestDecisions(t *testing.T) {
	t.Parallel()
	s := MustOpen(t, t.TempDir())
	ctx := context.Background()
	for i, d := range []*hearth.Decision{
		{Task: "t1", Session: "a", Action: "spawned"},
		{Task: "t2", Session: "a", Action: "reused", Candidates: []hearth.Candidate{{Session: "a"}, {Session: "b"}}},
		{Task: "t3", Session: "c", Action: "spawned", Retired: "b"},
	} {
		if err := appendEvent(s, hearth.Event{Kind: "decision", Task: d.Task, Decision: d}).Wait(ctx); err != nil {
			t.Fatalf("decision %d: %v", i, err)
		}
	}
	all, err := s.Decisions(10)
	if err != nil || len(all) != 3 || all[0].Task != "t3" {
		t.Fatalf("decisions: got %v, %v; want 3, newest first", all, err)
	}
	for _, tt := range []struct {
		session string
		want    string
	}{{"a", "t2 t1"}, {"b", "t3 t2"}, {"c", "t3"}, {"z", ""}} {
		evs, err := s.DecisionsFor(tt.session, 10)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, ev := range evs {
			got = append(got, ev.Task)
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("decisions for %s: got %v, want %s", tt.session, got, tt.want)
		}
	}
}

// TestDeleteLongSession: a session with more event chunks than one
// transaction holds is deleted whole.
func TestDeleteLongSession(t *testing.T) {
	t.Parallel()
	s := MustOpen(t, t.TempDir())
	ctx := context.Background()
	if err := s.PutSession(ctx, record.Session{ID: "long-1"}); err != nil {
		t.Fatal(err)
	}
	var last *Pending
	for range 40_000 {
		last = appendEvent(s, hearth.Event{Kind: "tool.used", Session: "long-1"})
	}
	if err := last.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSession(ctx, "long-1"); err != nil {
		t.Fatal(err)
	}
	if evs, _ := s.Events("long-1", 0, 1); len(evs) != 0 {
		t.Errorf("events left after the delete")
	}
	if _, err := s.SessionRecord("long-1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("record: got %v", err)
	}
}

func TestDeleteSession(t *testing.T) {
	t.Parallel()
	s := MustOpen(t, t.TempDir())
	ctx := context.Background()
	if err := s.PutSessionState(ctx, record.Session{ID: "x-1"}, []byte("state")); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := appendEvent(s, hearth.Event{Session: "x-1"}).Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := appendEvent(s, hearth.Event{Kind: "decision", Decision: &hearth.Decision{Session: "x-1"}}).Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSession(ctx, record.Session{ID: "x-10"}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSession(ctx, "x-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SessionRecord("x-1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("record: got %v", err)
	}
	if evs, _ := s.Events("x-1", 0, 0); len(evs) != 0 {
		t.Errorf("events: got %d left", len(evs))
	}
	if ds, _ := s.DecisionsFor("x-1", 0); len(ds) != 0 {
		t.Errorf("decision index: got %d left", len(ds))
	}
	if _, err := s.SessionRecord("x-10"); err != nil {
		t.Errorf("a session whose ID extends the deleted one's was touched: %v", err)
	}
}

// TestGroupsSplitBetweenWrites fills the queue with more than one
// transaction can hold: every write lands, whole.
func TestGroupsSplitBetweenWrites(t *testing.T) {
	t.Parallel()
	s := MustOpen(t, t.TempDir())
	ctx := context.Background()
	// Small values stay in the LSM tree and count against Badger's
	// per-transaction limits (entries, and bytes): 3000 writes of 20
	// entries are more than one transaction holds.
	small := make([]byte, 100)
	var pending []*Pending
	for i := range 3000 {
		w := &write{}
		for j := range 20 {
			w.sets = append(w.sets, kv{[]byte(fmt.Sprintf("z/%05d/%02d", i, j)), small})
		}
		pending = append(pending, s.submit(w))
	}
	for i, p := range pending {
		if err := p.Wait(ctx); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	n := 0
	if err := s.scanKeys([]byte("z/"), func([]byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 60000 {
		t.Errorf("got %d records, want 60000", n)
	}
	// One write bigger than any transaction fails alone, with a reason.
	var huge []kv
	for i := range 100000 {
		huge = append(huge, kv{[]byte(fmt.Sprintf("h/%06d", i)), small})
	}
	err := s.apply(ctx, &write{sets: huge})
	if err == nil || !strings.Contains(err.Error(), "too big for one transaction") {
		t.Errorf("oversized write: got %v", err)
	}
	if err := s.PutSession(ctx, record.Session{ID: "after"}); err != nil {
		t.Errorf("a write after the oversized one: %v", err)
	}
}

func TestWritesAfterCloseFail(t *testing.T) {
	t.Parallel()
	s, err := Open(t.TempDir(), Write, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := appendEvent(s, hearth.Event{}).Wait(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("got %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestNewerLayoutIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	v := make([]byte, 4)
	binary.BigEndian.PutUint32(v, Layout+1)
	if err := db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("m/schema"), v) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = Open(dir, Write, Options{})
	if !errors.Is(err, ErrNewerLayout) || !strings.Contains(err.Error(), fmt.Sprintf("layout version %d, this hearth reads up to %d", Layout+1, Layout)) {
		t.Errorf("got %v, want ErrNewerLayout naming both versions", err)
	}
}

func helper(t *testing.T, mode, dir string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "HEARTH_STORE_HELPER="+mode, "HEARTH_STORE_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, bufio.NewScanner(out)
}

func TestSecondProcessIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd, sc := helper(t, "hold", dir)
	if !sc.Scan() || sc.Text() != "open" {
		t.Fatalf("holder said %q", sc.Text())
	}
	_, err := Open(dir, Write, Options{})
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) {
		t.Fatalf("got %v, want a *LockedError", err)
	}
	want := fmt.Sprintf("data directory %s is in use by process %d (store-test holder), running since", dir, cmd.Process.Pid)
	if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--data-dir") {
		t.Errorf("got %q\nwant it to contain %q and the way out", err, want)
	}
	// A reader is refused too, before it looks at the files: a writer's
	// files in motion (a new table not yet listed) are not damage.
	if _, err := Open(dir, Read, Options{}); !errors.As(err, &le) {
		t.Errorf("read while a writer holds it: %v, want a *LockedError", err)
	}
	// Once the holder is gone, the directory opens.
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	MustOpen(t, dir)
}

// TestAcknowledgedEventsSurviveKill9: every event the store acknowledged
// before the process was killed is there after a reopen.
func TestAcknowledgedEventsSurviveKill9(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd, sc := helper(t, "append", dir)
	acked := 0
	for sc.Scan() && acked < 500 {
		f := strings.Fields(sc.Text())
		if len(f) != 2 || f[0] != "acked" {
			t.Fatalf("helper said %q", sc.Text())
		}
		acked, _ = strconv.Atoi(f[1])
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	s := MustOpen(t, dir)
	evs, err := s.Events("s-1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) < acked {
		t.Fatalf("got %d events after kill -9, but %d were acknowledged", len(evs), acked)
	}
	for i := range acked {
		if evs[i].Message != strconv.Itoa(i+1) {
			t.Fatalf("event %d is %q, want %d", i, evs[i].Message, i+1)
		}
	}
}
