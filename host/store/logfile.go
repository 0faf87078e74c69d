package store

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
)

// Badger's log files (value logs, NNNNNN.vlog, and memtable logs,
// NNNNN.mem) are a 20-byte header (an encryption key ID and an IV) and
// entries, each: meta and user-meta bytes, the key's length, the value's
// length and the expiry as uvarints, the key, the value, and a CRC-32C
// of all of that, big-endian. Badger's reader of them is unexported; this
// is the same walk, for the checks before it opens a directory to write:
// a write open replays the memtable logs, and cuts the newest value log
// off after its last whole entry.

// logHeaderSize is Badger's vlogHeaderSize.
const logHeaderSize = 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// walkLog calls fn with each whole entry of the log file b, in order, and
// returns the end of the last one: where Badger's replay stops (a zeroed
// entry, a short one, one failing its CRC, a key longer than 64 KiB).
func walkLog(b []byte, fn func(meta byte, key, value []byte)) int {
	off := logHeaderSize
	for off < len(b) {
		h := b[off:]
		if len(h) < 2 {
			break
		}
		meta := h[0]
		n := 2
		klen, k := binary.Uvarint(h[n:])
		if k <= 0 {
			break
		}
		n += k
		vlen, k := binary.Uvarint(h[n:])
		if k <= 0 {
			break
		}
		n += k
		if _, k = binary.Uvarint(h[n:]); k <= 0 {
			break
		}
		n += k
		if klen > 1<<16 || vlen > uint64(len(h)) || uint64(n)+klen+vlen+4 > uint64(len(h)) {
			break
		}
		body := n + int(klen) + int(vlen)
		if crc32.Checksum(h[:body], castagnoli) != binary.BigEndian.Uint32(h[body:]) {
			break
		}
		if fn != nil {
			fn(meta, h[n:n+int(klen)], h[n+int(klen):body])
		}
		off += body + 4
	}
	return min(off, len(b))
}

// replaySize is how many bytes of whole entries dir's memtable logs hold:
// what a write open replays, and writes again as tables.
func replaySize(dir string) uint64 {
	mems, _ := filepath.Glob(filepath.Join(dir, "*.mem"))
	var n uint64
	for _, p := range mems {
		if b, err := os.ReadFile(p); err == nil {
			n += uint64(walkLog(b, nil))
		}
	}
	return n
}
