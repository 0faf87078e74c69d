package cluster

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hearth-dev/hearth"
)

// Completions: a task forwarded to a host completes there when that host
// writes the task's completion to etcd, in a transaction that succeeds
// only while its lease holds (the host's record is still bound to that
// lease). etcd is the referee of the lease, so it is the one place that
// can refuse a stale completion: the fencing token of Kleppmann's "How
// to do distributed locking" is the lease, checked by the store that
// takes the write. A host paused for longer than its lease wakes with a
// result etcd refuses; the forwarding host, before it places a task
// again elsewhere, reads whether the task completed (CompletionKey) and,
// if it did, takes that result instead: a result complete before the
// lease was lost is delivered, never run again.
//
// Completions live outside Prefix, which every host lists and watches:
// a host reads one completion, by key, only when a host it forwarded to
// left. Each is bound to a lease of CompletionTTL, which the writing host
// renews by granting a new one, so a completion lives between half of it
// and all of it: forwards end within a task's deadline.

// CompletionsPrefix holds one key per completed forwarded task, by its
// idempotency key.
const CompletionsPrefix = "/hearth/completions/v1/"

// CompletionTTL bounds how long a completion is kept in etcd.
const CompletionTTL = time.Hour

// MaxCompletionBytes bounds an encoded completion. A result larger than
// MaxCompletionOutcomeBytes is left out of it (OnHost says so): the
// forwarding host then waits for the host that completed the task to
// answer with it.
const (
	MaxCompletionBytes        = 600 << 10
	MaxCompletionOutcomeBytes = 512 << 10
	maxCompletionKeyBytes     = 512
)

// CompletionKey is the key of the completion of the forwarded task with
// idempotency key key.
func CompletionKey(key string) string { return CompletionsPrefix + key }

// Completion says that a forwarded task completed, where, under which
// lease, and with what result.
type Completion struct {
	// Key is the task's idempotency key (the key's last segment, not
	// part of the value).
	Key string
	// Host completed it, under lease Epoch, for host From, at Finished.
	Host     string
	Epoch    int64
	From     string
	Finished time.Time
	// Result is the task's result; when it was too large for etcd,
	// OnHost is set and Result is empty: Host keeps it (its store, the
	// idempotency window) and answers with it.
	Result Result
	OnHost bool
}

type completionRecord struct {
	V         int             `json:"v"`
	Host      string          `json:"host"`
	Epoch     int64           `json:"epoch"`
	From      string          `json:"from,omitempty"`
	Finished  time.Time       `json:"finished"`
	Outcome   *hearth.Outcome `json:"outcome,omitempty"`
	Error     string          `json:"error,omitempty"`
	ErrorKind string          `json:"error_kind,omitempty"`
	OnHost    bool            `json:"on_host,omitempty"`
}

// EncodeCompletion returns the value written for c. A result too large
// for etcd is left out, with OnHost set.
func EncodeCompletion(c Completion) ([]byte, error) {
	if err := checkCompletionKey(c.Key); err != nil {
		return nil, fmt.Errorf("completion of task %q: key %w", c.Key, err)
	}
	if err := CheckHostID(c.Host); err != nil {
		return nil, fmt.Errorf("completion of task %s: host ID %q %w", c.Key, c.Host, err)
	}
	rec := completionRecord{V: recordVersion, Host: c.Host, Epoch: c.Epoch, From: c.From, Finished: c.Finished.Round(0).UTC(), OnHost: c.OnHost}
	if !c.OnHost {
		if c.Result.Err != nil {
			rec.Error, rec.ErrorKind = c.Result.Err.Error(), ErrorKind(c.Result.Err)
		} else {
			rec.Outcome = c.Result.Outcome
		}
	}
	b, err := json.Marshal(&rec)
	if err != nil {
		return nil, fmt.Errorf("completion of task %s: %w", c.Key, err)
	}
	if len(b) > MaxCompletionOutcomeBytes && !rec.OnHost {
		rec.Outcome, rec.Error, rec.ErrorKind, rec.OnHost = nil, "", "", true
		if b, err = json.Marshal(&rec); err != nil {
			return nil, fmt.Errorf("completion of task %s: %w", c.Key, err)
		}
	}
	if len(b) > MaxCompletionBytes {
		return nil, fmt.Errorf("completion of task %s: %d bytes, more than %d", c.Key, len(b), MaxCompletionBytes)
	}
	return b, nil
}

// DecodeCompletion reads the completion of the task with idempotency key
// key. Anything out of bounds is an error wrapping [ErrBadRecord].
func DecodeCompletion(key string, b []byte) (Completion, error) {
	var rec completionRecord
	if err := decodeRecord(b, MaxCompletionBytes, &rec, &rec.V); err != nil {
		return Completion{}, fmt.Errorf("completion of task %q: %w", key, err)
	}
	var problems []string
	if err := checkCompletionKey(key); err != nil {
		problems = append(problems, "key "+err.Error())
	}
	if err := CheckHostID(rec.Host); err != nil {
		problems = append(problems, "host ID "+err.Error())
	}
	if !rec.OnHost && rec.Outcome == nil && rec.Error == "" {
		problems = append(problems, "neither an outcome nor an error, nor on_host")
	}
	if len(problems) > 0 {
		return Completion{}, fmt.Errorf("%w: completion of task %q: %s", ErrBadRecord, key, strings.Join(problems, "; "))
	}
	c := Completion{Key: key, Host: rec.Host, Epoch: rec.Epoch, From: rec.From, Finished: rec.Finished, OnHost: rec.OnHost}
	switch {
	case rec.OnHost:
	case rec.Outcome != nil:
		c.Result.Outcome = rec.Outcome
	default:
		c.Result.Err = KeptError(rec.Error, rec.ErrorKind)
	}
	return c, nil
}

func checkCompletionKey(k string) error {
	if k == "" || len(k) > maxCompletionKeyBytes || !utf8.ValidString(k) {
		return fmt.Errorf("is not 1 to %d bytes of UTF-8", maxCompletionKeyBytes)
	}
	return nil
}
