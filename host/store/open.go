package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/pb"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/badger/v4/y"
	"github.com/dgraph-io/ristretto/v2/z"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"
)

// A data directory is checked before Badger sees it. Badger trusts its
// directory: on open, read-only or not, it deletes every table its
// MANIFEST does not list (a MANIFEST cut short by a power loss or an
// interrupted copy wiped a store that way, in a read-only command), a
// truncated table panics inside Badger's own goroutines where nothing can
// recover it, and a table block that fails its checksum is read as a
// missing key. So the directory is held (lockDir) and accounted for, here,
// before Badger is asked to open it:
//
//   - MANIFEST parses to its last byte: every change set framed, with its
//     checksum, and valid. Badger cuts a partial last entry off and goes
//     on; hearth cannot tell that from a file cut short after the fact,
//     so it is damage.
//   - A table (NNNNNN.sst) the MANIFEST lists is present, and every
//     block of it passes its checksum. A table it does not list is a
//     crash's leftover only if the MANIFEST records its deletion (a
//     compaction replaced it) or every record in it is in a listed table
//     or a memtable log (a flush or compaction whose entry never
//     landed): Write lets Badger delete it, losing nothing; Read, which
//     must not delete, refuses it as ErrNeedsRecovery. Any other
//     unlisted table is damage: the MANIFEST lost entries.
//   - A value log (NNNNNN.vlog) that a table's value pointer names is
//     present and long enough for every value pointed into it. A value
//     log nothing points into is Badger's garbage, waiting for value-log
//     GC (or the newest, empty one): it is left alone, never read.
//   - To Write, which replays memtable logs (NNNNN.mem) and cuts the
//     newest value log after its last whole entry (logfile.go): the
//     values the memtable logs point to count too, and the newest value
//     log is whole up to the last value pointed into it.
//   - Every file with one of Badger's extensions has the name Badger
//     gives its ID (Badger panics on some others, fails on others, and
//     would delete a table under a name it did not expect by another).
//
// Anything else is a *DirError naming the file; the directory is not
// touched. Files Badger does not read (OWNER, LOCK, files/, anything a
// person put there) are not its concern and are left alone.

// Mode is what a command may do to the data directory it opens. Open
// takes it as an argument of its own, not an option, so that every
// caller says which it is: a command that only reads says Read.
type Mode uint8

const (
	// Read opens an existing directory and changes nothing in it: Badger
	// opens it read-only, after the checks above, so it deletes, cuts
	// and replays nothing; no owner record, no GC, no sequence lease.
	// Writes fail with ErrReadOnly. A directory a crash left with writes
	// to replay (a memtable log) is refused with ErrNeedsRecovery: only a
	// command that writes, or Recover, replays them.
	Read Mode = iota + 1
	// Write opens, or creates, a directory to write to. Badger replays
	// the writes a crash left, after the same checks.
	Write
)

func (m Mode) String() string {
	switch m {
	case Read:
		return "read"
	case Write:
		return "write"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// DirError says why a data directory cannot be opened as it is. Nothing in
// the directory was changed.
type DirError struct {
	Dir string
	// File is the file at fault, relative to Dir.
	File    string
	Problem string
	// Fix says what the user can do.
	Fix string
	// logTail marks damage in the middle of a memtable log, which a
	// write open may be told to cut (Options.DiscardAfterLogDamage).
	logTail bool
}

func (e *DirError) Error() string {
	return fmt.Sprintf("data directory %s: %s %s; nothing in it was changed. %s", e.Dir, e.File, e.Problem, e.Fix)
}

func (e *DirError) Unwrap() error { return ErrDamaged }

// recoverFix is what a user does about a directory whose files are
// damaged or missing.
const recoverFix = "Restore it from a backup (hearth restore FILE --data-dir NEW), or see docs/recovery.md."

// dirLock holds a data directory for one Store: shared for Read, so that
// readers run side by side, exclusive for Write. It is flock(2) on the
// directory, the lock Badger itself takes (Badger is opened with its own
// lock off: it would conflict with this one), so a Badger or an older
// hearth that holds the directory is refused as well.
type dirLock struct {
	f *os.File
	// pidFile is Badger's LOCK file, which a writer fills with its PID
	// the way Badger does, for the error a refused opener gets.
	pidFile string
}

// lockDir takes dir's lock for mode, or fails with a *LockedError.
func lockDir(dir string, mode Mode) (*dirLock, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	how := unix.LOCK_SH
	if mode == Write {
		how = unix.LOCK_EX
	}
	if err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, lockedError(dir)
		}
		return nil, fmt.Errorf("data directory %s: lock it: %w", dir, err)
	}
	return &dirLock{f: f}, nil
}

// writePID records the writer's PID in LOCK, once the directory passed
// its checks.
func (l *dirLock) writePID(dir string) error {
	p := filepath.Join(dir, "LOCK")
	if err := os.WriteFile(p, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		return fmt.Errorf("data directory %s: %w", dir, err)
	}
	l.pidFile = p
	return nil
}

func (l *dirLock) release() {
	if l == nil {
		return
	}
	if l.pidFile != "" {
		_ = os.Remove(l.pidFile)
	}
	_ = l.f.Close() // closing the descriptor drops the lock
}

// checkDir refuses a directory that Badger would misread or damage. A
// directory that does not exist, or holds no Badger file, is new. The
// caller holds the directory's lock, so that a writer's files in motion
// (a compaction's new table, not yet listed) are never mistaken for
// damage.
//
// With discardAfterLogDamage, damage in the middle of a memtable log is
// not refused: Badger replays the log up to it. inspectDir reports that
// damage after every other problem, so accepting it hides none.
func checkDir(dir string, mode Mode, discardAfterLogDamage bool) error {
	errs, leftovers, err := inspectDir(dir, mode, true)
	if err != nil {
		return err
	}
	if len(errs) > 0 && !(discardAfterLogDamage && errs[0].logTail) {
		return errs[0]
	}
	return leftoversError(dir, mode, leftovers)
}

// leftoversError is what Read says of tables a crash left for Badger to
// delete: Badger deletes them on any open, even read-only, so only a
// command that writes may open the directory.
func leftoversError(dir string, mode Mode, leftovers []string) error {
	if mode == Write || len(leftovers) == 0 {
		return nil
	}
	return fmt.Errorf("data directory %s: %w: a crash left %s, which the MANIFEST accounts for as deleted or not yet added and which opening it removes (hearth recover does it, as does any command that writes)", dir, ErrNeedsRecovery, strings.Join(leftovers, ", "))
}

// dirFiles are the files of a data directory Badger reads, by kind and ID.
type dirFiles struct {
	manifest bool
	tables   map[uint64]bool
	vlogs    map[uint32]int64 // size
	mems     []string
}

// listDir sorts dir's entries into Badger's files; a name with Badger's
// extension that is not the name Badger gives its ID is a problem.
func listDir(dir string) (*dirFiles, []*DirError, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	d := &dirFiles{tables: map[uint64]bool{}, vlogs: map[uint32]int64{}}
	var bad []*DirError
	for _, e := range entries {
		name := e.Name()
		ext := filepath.Ext(name)
		var canonical string
		switch ext {
		case ".sst", ".vlog", ".mem":
			id, err := strconv.ParseUint(strings.TrimSuffix(name, ext), 10, 32)
			switch ext {
			case ".sst":
				canonical = table.IDToFilename(id)
			case ".vlog":
				canonical = fmt.Sprintf("%06d.vlog", id)
			case ".mem":
				canonical = fmt.Sprintf("%05d.mem", id)
			}
			if err != nil || name != canonical || !e.Type().IsRegular() {
				bad = append(bad, &DirError{Dir: dir, File: name, Problem: "is not a file Badger wrote under that name (its " + ext + " files are named by number, like " + canonical + "), and Badger would act on it", Fix: "Move it out of the data directory, or see docs/recovery.md."})
				continue
			}
			if ext != ".sst" {
				if e := checkLogHeader(dir, name); e != nil {
					bad = append(bad, e)
					continue
				}
			}
			switch ext {
			case ".sst":
				d.tables[id] = true
			case ".vlog":
				fi, err := e.Info()
				if err != nil {
					return nil, nil, fmt.Errorf("data directory %s: %w", dir, err)
				}
				d.vlogs[uint32(id)] = fi.Size()
			case ".mem":
				d.mems = append(d.mems, name)
			}
		default:
			switch name {
			case badger.ManifestFilename:
				d.manifest = true
			case restoreMarker:
				bad = append(bad, interruptedRestore(dir))
			case badger.KeyRegistryFileName:
				if e := checkKeyRegistry(dir); e != nil {
					bad = append(bad, e)
				}
			}
		}
	}
	return d, bad, nil
}

// keyRegistryText and keyRegistrySize are KEYREGISTRY as Badger writes it for a store that is not
// encrypted (hearth's never are): a 16-byte IV, which nothing reads
// without a key, then its check text, in the clear, and no data keys.
// Badger reads it at every open and fails on anything else with an error
// that does not name it ("Error while reading IV for key registry").
var keyRegistryText = []byte("Hello Badger")

const keyRegistrySize = 16 + 12

// checkKeyRegistry refuses a KEYREGISTRY other than that.
func checkKeyRegistry(dir string) *DirError {
	b, err := os.ReadFile(filepath.Join(dir, badger.KeyRegistryFileName))
	if err == nil && len(b) == keyRegistrySize && bytes.Equal(b[16:], keyRegistryText) {
		return nil
	}
	problem := fmt.Sprintf("is damaged: it holds %d bytes, not the %d of an unencrypted store's registry ending %q", len(b), keyRegistrySize, keyRegistryText)
	if err != nil {
		problem = "cannot be read: " + err.Error()
	}
	return &DirError{Dir: dir, File: badger.KeyRegistryFileName, Problem: problem,
		Fix: "It holds no data (hearth does not encrypt its store): move it out of the data directory; read commands work without it, and the next command that writes makes a new one. See docs/recovery.md."}
}

// checkLogHeader refuses the log name (a value or memtable log) when its
// header names an encryption key: its first 8 bytes are the ID of the
// key its entries are encrypted with, 0 for none, and hearth never
// encrypts. Badger would look the key up, fail, and leave its goroutines
// running (its Open does not clean up after that error).
func checkLogHeader(dir, name string) *DirError {
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return &DirError{Dir: dir, File: name, Problem: "cannot be read: " + err.Error(), Fix: recoverFix}
	}
	defer f.Close()
	var id [8]byte
	if n, _ := io.ReadFull(f, id[:]); n == len(id) && binary.BigEndian.Uint64(id[:]) != 0 {
		return &DirError{Dir: dir, File: name, Problem: fmt.Sprintf("is damaged: its header names encryption key %d, and hearth never encrypts", binary.BigEndian.Uint64(id[:])), Fix: recoverFix}
	}
	return nil
}

// inspectDir finds what makes dir unsafe to open in mode: every problem,
// or only the first when first is set; and the tables a crash left that
// opening the directory deletes, with nothing lost (leftovers).
func inspectDir(dir string, mode Mode, first bool) (out []*DirError, leftovers []string, err error) {
	d, out, err := listDir(dir)
	if err != nil || d == nil {
		return nil, nil, err
	}
	if first && len(out) > 0 {
		return out[:1], nil, nil
	}
	if !d.manifest {
		if len(d.tables)+len(d.vlogs)+len(d.mems) == 0 {
			return out, nil, nil
		}
		return append(out, &DirError{Dir: dir, File: badger.ManifestFilename, Problem: fmt.Sprintf("is missing, beside %d tables and %d logs: without it the tables cannot be read, and opening the directory would delete them", len(d.tables), len(d.vlogs)+len(d.mems)), Fix: recoverFix}), nil, nil
	}
	m, deleted, problem := readManifest(dir)
	if problem != "" {
		return append(out, &DirError{Dir: dir, File: badger.ManifestFilename, Problem: problem, Fix: recoverFix}), nil, nil
	}
	add := func(e *DirError) bool {
		out = append(out, e)
		return first
	}
	// Listed and present, in ID order: what Badger would open, and
	// delete.
	ids := slices.Sorted(maps.Keys(m.Tables))
	for _, id := range ids {
		if name := table.IDToFilename(id); !d.tables[id] {
			if add(&DirError{Dir: dir, File: name, Problem: "is missing (the MANIFEST lists it)", Fix: recoverFix}) {
				return out, nil, nil
			}
		}
	}
	// A table the MANIFEST does not list, Badger deletes. A crash leaves
	// such tables: one a compaction replaced (the MANIFEST records its
	// deletion; the file goes after), or one a flush or compaction wrote
	// whose entry never made it (everything in it is still in the tables
	// it was made from, or in the memtable logs). Either is a leftover,
	// which opening to write removes with nothing lost; anything else
	// holds what is nowhere else, and the MANIFEST lost entries.
	var elsewhere map[string]bool
	for _, id := range slices.Sorted(maps.Keys(d.tables)) {
		if _, ok := m.Tables[id]; ok {
			continue
		}
		name := table.IDToFilename(id)
		if deleted[id] {
			leftovers = append(leftovers, name)
			continue
		}
		if elsewhere == nil {
			if elsewhere, err = listedKeys(dir, m, d); err != nil {
				return nil, nil, err
			}
		}
		if covered(filepath.Join(dir, name), elsewhere) {
			leftovers = append(leftovers, name)
			continue
		}
		if add(&DirError{Dir: dir, File: name, Problem: "is not listed in the MANIFEST, which lists " + strconv.Itoa(len(m.Tables)) + " tables, and holds records no listed table or memtable log holds: the MANIFEST lost entries (cut short, or an older copy of it) or the table is not this directory's, and opening the directory would delete the table", Fix: recoverFix}) {
			return out, nil, nil
		}
	}
	// Every listed table, read in full; the value pointers it holds say
	// which value logs must be there, and how long.
	reach := map[uint32]vlogReach{}
	for _, id := range ids {
		name := table.IDToFilename(id)
		if !d.tables[id] {
			continue
		}
		if err := verifyTable(filepath.Join(dir, name), m.Tables[id].Compression, reach); err != nil {
			if add(&DirError{Dir: dir, File: name, Problem: "is damaged: " + err.Error(), Fix: recoverFix}) {
				return out, nil, nil
			}
		}
	}
	pointers := "the tables point to"
	var logDamaged []*DirError
	if mode == Write && len(d.mems) > 0 {
		// A write open replays the memtable logs: the values they point
		// to must be there too.
		pointers = "the tables and memtable logs point to"
		for _, name := range d.mems {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				return nil, nil, fmt.Errorf("data directory %s: %w", dir, err)
			}
			walkLog(b, func(meta byte, _, v []byte) {
				if meta&bitValuePointer != 0 && len(v) >= vptrSize {
					notePointer(reach, v)
				}
			})
			if end, after, found := logDamage(b); found {
				// Reported last: Open may be told to accept it
				// (Options.DiscardAfterLogDamage), and then no other
				// problem may hide behind it.
				logDamaged = append(logDamaged, &DirError{Dir: dir, File: name,
					Problem: fmt.Sprintf("is damaged at byte %d, and whole writes follow the damage (a transaction ends at byte %d): replayed, Badger would stop at the damage and drop them, with no error", end, after),
					Fix:     "Restore it from a backup (hearth restore FILE --data-dir NEW); or, to keep the writes before the damage and lose those after it, run hearth recover --discard-after-damage. See docs/recovery.md.",
					logTail: true})
			}
		}
	}
	for _, fid := range slices.Sorted(maps.Keys(reach)) {
		r := reach[fid]
		name := fmt.Sprintf("%06d.vlog", fid)
		size, ok := d.vlogs[fid]
		switch {
		case !ok:
			if add(&DirError{Dir: dir, File: name, Problem: fmt.Sprintf("is missing, and %d values %s are in it", r.values, pointers), Fix: recoverFix}) {
				return out, nil, nil
			}
		case size < int64(r.end):
			if add(&DirError{Dir: dir, File: name, Problem: fmt.Sprintf("holds %d bytes, but values %s reach byte %d: it was cut short", size, pointers, r.end), Fix: recoverFix}) {
				return out, nil, nil
			}
		}
	}
	if mode == Write && len(d.vlogs) > 0 {
		// A write open cuts the newest value log off after its last
		// whole entry: nothing pointed to may lie past it.
		newest := slices.Max(slices.Collect(maps.Keys(d.vlogs)))
		if r := reach[newest]; r.end > 0 && d.vlogs[newest] >= int64(r.end) {
			name := fmt.Sprintf("%06d.vlog", newest)
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				return nil, nil, fmt.Errorf("data directory %s: %w", dir, err)
			}
			if end := walkLog(b, nil); uint64(end) < r.end {
				if add(&DirError{Dir: dir, File: name, Problem: fmt.Sprintf("is damaged at byte %d (its entries stop being whole there), before values %s (up to byte %d): opened to write, Badger would cut them off", end, pointers, r.end), Fix: recoverFix}) {
					return out, nil, nil
				}
			}
		}
	}
	for _, e := range logDamaged {
		if add(e) {
			return out, nil, nil
		}
	}
	return out, leftovers, nil
}

// listedKeys is every key (with its version) of the tables the MANIFEST
// lists and of the memtable logs: what a table the MANIFEST does not
// list may hold, to be a leftover. Tables that cannot be read add
// nothing (they are reported as damaged).
func listedKeys(dir string, m badger.Manifest, d *dirFiles) (map[string]bool, error) {
	keys := map[string]bool{}
	for id, tm := range m.Tables {
		if d.tables[id] {
			_ = readTable(filepath.Join(dir, table.IDToFilename(id)), tm.Compression, func(k []byte, _ y.ValueStruct) bool {
				keys[string(k)] = true
				return true
			})
		}
	}
	for _, name := range d.mems {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("data directory %s: %w", dir, err)
		}
		walkLog(b, func(_ byte, k, _ []byte) { keys[string(k)] = true })
	}
	return keys, nil
}

// covered reports whether every key of the table at path is in keys. A
// table that cannot be read is not.
func covered(path string, keys map[string]bool) bool {
	ok := true
	// The MANIFEST, which does not list it, does not say its
	// compression: it is the one the store writes tables with.
	err := readTable(path, badger.DefaultOptions("").Compression, func(k []byte, _ y.ValueStruct) bool {
		ok = keys[string(k)]
		return ok
	})
	return ok && err == nil
}

// notePointer notes in reach the value pointer v (Badger's encoding).
func notePointer(reach map[uint32]vlogReach, v []byte) {
	fid := binary.NativeEndian.Uint32(v[0:])
	n := binary.NativeEndian.Uint32(v[4:])
	off := binary.NativeEndian.Uint32(v[8:])
	r := reach[fid]
	r.end = max(r.end, uint64(off)+uint64(n))
	r.values++
	reach[fid] = r
}

// readManifest reads dir's MANIFEST with Badger's reader, under recover
// (a damaged one must be an error, not a panic), and says what is wrong
// with it: "" when it parses, whole, to its last byte. deleted holds the
// tables its entries delete.
func readManifest(dir string) (m badger.Manifest, deleted map[uint64]bool, problem string) {
	b, err := os.ReadFile(filepath.Join(dir, badger.ManifestFilename))
	if err != nil {
		return m, nil, "cannot be read: " + err.Error()
	}
	f, err := os.Open(filepath.Join(dir, badger.ManifestFilename))
	if err != nil {
		return m, nil, "cannot be read: " + err.Error()
	}
	defer f.Close()
	var end int64
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%v", r)
			}
		}()
		m, end, err = badger.ReplayManifestFile(f, 0, badger.DefaultOptions(dir))
	}()
	switch {
	case err != nil:
		return m, nil, "is damaged: " + err.Error()
	case end != int64(len(b)):
		// Badger would cut the partial entry off and open what is left,
		// deleting every table the lost entries listed.
		return m, nil, fmt.Sprintf("is cut short: its last %d of %d bytes are not a whole entry (a power loss or an interrupted copy cuts a file this way), so the tables it lists may not be all there are", int64(len(b))-end, len(b))
	}
	// The entries Badger just read, whole: 8 bytes of magic, then each a
	// length and a checksum (4 bytes each) and a change set.
	deleted = map[uint64]bool{}
	for off := 8; off+8 <= len(b); {
		n := int(binary.BigEndian.Uint32(b[off:]))
		var cs pb.ManifestChangeSet
		if off+8+n > len(b) || proto.Unmarshal(b[off+8:off+8+n], &cs) != nil {
			return m, nil, "is damaged: an entry at byte " + strconv.Itoa(off) + " does not decode"
		}
		for _, c := range cs.Changes {
			if c.Op == pb.ManifestChange_DELETE {
				deleted[c.Id] = true
			}
		}
		off += 8 + n
	}
	return m, deleted, ""
}

// vlogReach is how far into one value log the tables point.
type vlogReach struct {
	end    uint64 // the end of the furthest value
	values int
}

// Badger's value pointer, as it stores it in a table: its struct's
// memory, {Fid, Len, Offset uint32}, in the machine's byte order; and the
// meta bit that marks a value that is one.
const (
	vptrSize        = 12
	bitValuePointer = 1 << 1
)

// verifyTable reads every block of a table and checks its checksum, with
// Badger's reader, under recover, and notes in reach how far its values
// reach into each value log.
func verifyTable(path string, c options.CompressionType, reach map[uint32]vlogReach) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Size() == 0 {
		return errors.New("it is empty")
	}
	var bad error
	err = readTable(path, c, func(_ []byte, v y.ValueStruct) bool {
		if v.Meta&bitValuePointer == 0 {
			return true
		}
		if len(v.Value) < vptrSize {
			bad = fmt.Errorf("a value pointer holds %d bytes, not %d", len(v.Value), vptrSize)
			return false
		}
		notePointer(reach, v.Value)
		return true
	})
	if err != nil {
		// Badger's message repeats the path; keep the cause.
		msg := err.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 && strings.Contains(msg[:i], "checksum") {
			return errors.New("a block fails its checksum")
		}
		return err
	}
	return bad
}

// readTable opens the table at path with Badger's reader, which reads
// and checks every block, and calls fn with each entry (its key with its
// version, and its value) until fn returns false; under recover. The
// file is opened read-only and closed, never deleted (a table's last
// DecrRef would delete it: the iterator holds a reference of its own and
// drops it on Close, the first is never dropped).
func readTable(path string, c options.CompressionType, fn func(k []byte, v y.ValueStruct) bool) (err error) {
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil && !errors.Is(err, z.NewFile) {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("it cannot be read (%v)", r)
		}
		_ = mf.Close(-1)
	}()
	// OpenTable with OnTableRead reads and checks every block.
	t, err := table.OpenTable(mf, table.Options{ReadOnly: true, ChkMode: options.OnTableRead, BlockSize: 4 << 10, Compression: c})
	if err != nil {
		return err
	}
	it := t.NewIterator(0)
	defer it.Close()
	for it.Rewind(); it.Valid() && fn(it.Key(), it.Value()); it.Next() {
	}
	return nil
}
