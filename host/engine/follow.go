package engine

import (
	"context"
	"sync"

	"github.com/hearth-dev/hearth"
)

// followBuffer is how many events of one task a slow follower may fall
// behind by before it misses some.
const followBuffer = 1024

// FollowTask returns the events of task id, tool uses included, from now
// until stop is called or ctx is done; stop closes the channel. A
// follower that falls behind misses events rather than slowing the host.
// hearth's MCP server follows a submitted task with it, for progress.
func (e *Engine) FollowTask(ctx context.Context, id string) (<-chan hearth.Event, func(), error) {
	sub := e.Subscribe(followBuffer)
	out := make(chan hearth.Event, followBuffer)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(out)
		for {
			select {
			case ev, ok := <-sub.C:
				if !ok {
					return
				}
				if ev.Task != id {
					continue
				}
				select {
				case out <- ev:
				default:
				}
			case <-ctx.Done():
				return
			}
		}
	})
	var once sync.Once
	return out, func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			sub.Close()
		})
	}, nil
}
