package client

import (
	"context"
	"sync"

	"github.com/hearth-dev/hearth"
)

// followKinds are the kinds of event that say how a task goes.
var followKinds = []hearth.EventKind{
	hearth.EventDecision, hearth.EventSessionSpawned, hearth.EventSessionRehydrated,
	hearth.EventTaskStarted, hearth.EventTaskProgress, hearth.EventToolUsed, hearth.EventGuardFired,
	hearth.EventTaskSucceeded, hearth.EventTaskFailed,
}

// FollowTask returns the events of task id, tool uses included, from now
// until stop is called or ctx is done; stop closes the channel. It
// returns once the daemon streams, so a task submitted after it is
// followed from its placement on.
func (c *Client) FollowTask(ctx context.Context, id string) (<-chan hearth.Event, func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	es, err := c.Events(ctx, EventFilter{Kinds: followKinds})
	if err != nil {
		cancel()
		return nil, nil, err
	}
	out := make(chan hearth.Event, 256)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(out)
		for ev := range es.C {
			if ev.Task == id {
				select {
				case out <- ev:
				default:
				}
			}
		}
	})
	var once sync.Once
	return out, func() {
		once.Do(func() {
			cancel()
			es.Close()
			wg.Wait()
		})
	}, nil
}
