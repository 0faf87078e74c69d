package store

import (
	"bytes"
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
		meta, k, v, n := logEntry(b[off:])
		if n == 0 {
			break
		}
		if fn != nil {
			fn(meta, k, v)
		}
		off += n
	}
	return min(off, len(b))
}

// logEntry reads the entry at the start of h: its meta byte, key and
// value, and its length; n is 0 when h does not start with a whole entry.
func logEntry(h []byte) (meta byte, key, value []byte, n int) {
	if len(h) < 2 {
		return 0, nil, nil, 0
	}
	meta = h[0]
	hlen := 2
	klen, k := binary.Uvarint(h[hlen:])
	if k <= 0 {
		return 0, nil, nil, 0
	}
	hlen += k
	vlen, k := binary.Uvarint(h[hlen:])
	if k <= 0 {
		return 0, nil, nil, 0
	}
	hlen += k
	if _, k = binary.Uvarint(h[hlen:]); k <= 0 {
		return 0, nil, nil, 0
	}
	hlen += k
	if klen > 1<<16 || vlen > uint64(len(h)) || uint64(hlen)+klen+vlen+4 > uint64(len(h)) {
		return 0, nil, nil, 0
	}
	body := hlen + int(klen) + int(vlen)
	if crc32.Checksum(h[:body], castagnoli) != binary.BigEndian.Uint32(h[body:]) {
		return 0, nil, nil, 0
	}
	return meta, h[hlen : hlen+int(klen)], h[hlen+int(klen) : body], body + 4
}

// Damage in the middle of a memtable log. Badger replays a memtable log
// up to its first entry that is not whole and cuts the file there, with
// no error: what follows is lost. At the end of the log that is a crash's
// torn write (the transaction being written was never acknowledged); in
// the middle, it drops transactions that were. Badger ends each
// transaction with an entry of its own (meta bitFinTxn, key
// "!badger!txn" and the commit's version), written last: a whole one of
// those after the replay's stop means that whole writes follow the
// damage. Only the transaction being written when a crash came can be
// torn, and its end marker comes after all its entries, so a crash never
// looks like that.

// bitFinTxn is Badger's meta bit of the entry that ends a transaction.
const bitFinTxn = 1 << 7

// txnKey is the key of that entry, before its version.
var txnKey = []byte("!badger!txn")

// logDamage reports where replay of the memtable log b stops (end) and,
// when whole transactions follow it, the offset of the first one's end
// marker (after, found).
func logDamage(b []byte) (end, after int, found bool) {
	end = walkLog(b, nil)
	for off := end; off < len(b); {
		i := bytes.Index(b[off:], txnKey)
		if i < 0 {
			break
		}
		p := off + i
		// The key starts p: its entry's header (meta, user meta and three
		// uvarints) starts 5 to 2+3*MaxVarintLen64 bytes before.
		for s := max(end, p-2-3*binary.MaxVarintLen64); s <= p-5; s++ {
			meta, k, _, n := logEntry(b[s:])
			if n > 0 && meta&bitFinTxn != 0 && len(k) > 0 && &k[0] == &b[p] {
				return end, s, true
			}
		}
		off = p + 1
	}
	return end, 0, false
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
