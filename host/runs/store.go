package runs

import (
	"context"
	"io"

	"github.com/hearth-dev/hearth/host/record"
)

// Store is what the run engine needs of the store: runs' records, the
// writes that record a run's steps, and the files runs carry. The engine
// hands it its store (package host/store) through it. Writes are queued
// and committed in the order they are made; each returns its Pending.
type Store interface {
	// SaveRun queues w, one atomic write of run id's records and the
	// events that report them.
	SaveRun(id string, w record.RunWrite) Pending
	// SaveRunStatus queues run id's head alone, as a status record: the
	// store takes it below the free space ordinary writes need, so that
	// a run stopped by a full disk records that it paused.
	SaveRunStatus(id string, head *record.Run) Pending

	// RunRecord reads run id's head; its error wraps
	// hearth.ErrUnknownRun when there is no such run.
	RunRecord(id string) (*record.Run, error)
	// RunRecords reads the head of every run.
	RunRecords() ([]*record.Run, error)
	// RunGraph reads run id's pipeline, as it was when the run was made.
	RunGraph(id string) (*record.Graph, error)
	// RunTasks reads run id's task records, by task name.
	RunTasks(id string) (map[string]*record.Task, error)
	// TaskOutputs reads every output version of run id's tasks.
	TaskOutputs(id string) ([]*record.Output, error)
	// Checkpoints reads run id's checkpoints, oldest first.
	Checkpoints(id string) ([]*record.Checkpoint, error)
	// Checkpoint reads checkpoint seq of run id.
	Checkpoint(id string, seq uint64) (*record.Checkpoint, error)
	// NewestCheckpoint is the number of run id's newest checkpoint on
	// disk, 0 for none.
	NewestCheckpoint(id string) (uint64, error)
	// ResolveRunID finds the run an ID, or a prefix of one no other run
	// shares, names.
	ResolveRunID(id string) (string, error)
	// DeleteRun deletes run id's records, and returns the files no run
	// refers to any more.
	DeleteRun(ctx context.Context, id string) (unreferenced []string, err error)

	// PutFile keeps the content of r once, read-only and durable, and
	// returns its SHA-256 and size.
	PutFile(r io.Reader) (sha string, size int64, err error)
	// BlobPath is where the file with the SHA-256 sha is kept.
	BlobPath(sha string) string
	// RemoveFiles removes the files with the SHA-256s shas, unless a run
	// refers to one again.
	RemoveFiles(shas []string) error
}

// Pending is a queued write: durable once Wait returns nil.
type Pending interface {
	Wait(ctx context.Context) error
}

// refused is a write not even queued: it fails with err.
type refused struct{ err error }

func (r refused) Wait(context.Context) error { return r.err }
