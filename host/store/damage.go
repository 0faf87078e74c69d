package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/hearth-dev/hearth/host/store/internal/storepb"
)

// A record that cannot be read is an error that names it, never different
// data: Badger checks every value-log entry's CRC on read
// (VerifyValueChecksum) and hands back an empty value for one that fails
// (it only logs why); every record starts with a version byte, so an
// empty value is damage, as is one that does not decode.

// DamageError is a record that cannot be read.
type DamageError struct {
	// Key is the record's key; What names it for people ("output v2 of
	// task draft of run R").
	Key, What string
	Err       error
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("%s is damaged (%v); hearth verify lists all damage, docs/recovery.md says what to do", e.What, e.Err)
}

func (e *DamageError) Unwrap() []error { return []error{ErrDamaged, e.Err} }

// damaged wraps err, met reading key, as a *DamageError; nil and
// ErrNotFound-like errors pass through.
func damaged(key []byte, err error) error {
	if err == nil {
		return nil
	}
	var de *DamageError
	if errors.As(err, &de) {
		return err
	}
	return &DamageError{Key: string(key), What: describeKey(key), Err: err}
}

// decodeAt decodes the record under key.
func decodeAt(key, b []byte, m proto.Message) error {
	if err := decode(b, m); err != nil {
		if errors.Is(err, ErrNewerLayout) {
			return err
		}
		return damaged(key, err)
	}
	return nil
}

// describeKey names the record under key for people.
func describeKey(key []byte) string {
	k := string(key)
	prefix, rest, _ := strings.Cut(k, "/")
	seq := func(s string) string {
		if len(s) >= 8 {
			return strconv.FormatUint(binary.BigEndian.Uint64([]byte(s[len(s)-8:])), 10)
		}
		return strconv.Quote(s)
	}
	switch prefix {
	case "s":
		return "session " + rest
	case "t":
		return "the saved state of session " + rest
	case "e":
		if i := len(rest) - 9; i > 0 && rest[i] == '/' {
			return "events from " + seq(rest[i+1:]) + " of " + rest[:i]
		}
		return "events of " + rest
	case "d":
		return "placement decision " + seq(rest)
	case "r":
		return "run " + rest
	case "g":
		return "the pipeline of run " + rest
	case "rt":
		run, task, _ := strings.Cut(rest, "/")
		return "task " + task + " of run " + run
	case "c":
		if i := len(rest) - 9; i > 0 && rest[i] == '/' {
			return "checkpoint " + seq(rest[i+1:]) + " of run " + rest[:i]
		}
	case "o":
		parts := strings.Split(rest, "/")
		if len(parts) >= 3 {
			v := parts[len(parts)-1]
			if len(v) == 4 {
				v = strconv.FormatUint(uint64(binary.BigEndian.Uint32([]byte(v))), 10)
			}
			return "output v" + v + " of task " + strings.Join(parts[1:len(parts)-1], "/") + " of run " + parts[0]
		}
	case "m":
		return "the layout version"
	case "fw":
		return "forwarded task " + rest
	}
	return "record " + strconv.Quote(k)
}

// recordType is the message stored under a key's prefix, for verify;
// nil for keys whose value is not a record (markers, raw state, Badger's
// sequence).
func recordType(key []byte) proto.Message {
	prefix, _, _ := strings.Cut(string(key), "/")
	switch prefix {
	case "s":
		return &storepb.Session{}
	case "e":
		return &storepb.EventChunk{}
	case "d":
		return &storepb.Event{}
	case "r":
		return &storepb.Run{}
	case "g":
		return &storepb.RunGraph{}
	case "rt":
		return &storepb.RunTask{}
	case "c":
		return &storepb.Checkpoint{}
	case "o":
		return &storepb.TaskOutput{}
	case "fw":
		return &storepb.Forward{}
	}
	return nil
}
