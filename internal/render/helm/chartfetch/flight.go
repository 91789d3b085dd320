package chartfetch

import (
	"context"
	"sync"
)

// flight runs the work for each key once and hands its result to every
// caller, then and later: the run's cache of indexes, tag lists and
// charts. Work ended by its caller's context is forgotten, so the next
// caller runs it again, and callers that waited for it retry.
type flight[K comparable, V any] struct {
	mu    sync.Mutex
	calls map[K]*flightCall[V]
}

type flightCall[V any] struct {
	done chan struct{}
	val  V
	err  error
	// abandoned means the work ended with its caller's context, or
	// panicked, and says nothing about the key.
	abandoned bool
}

func (f *flight[K, V]) do(ctx context.Context, key K, work func(context.Context) (V, error)) (V, error) {
	for {
		f.mu.Lock()
		if f.calls == nil {
			f.calls = map[K]*flightCall[V]{}
		}
		c, ok := f.calls[key]
		if !ok {
			c = &flightCall[V]{done: make(chan struct{})}
			f.calls[key] = c
			f.mu.Unlock()
			f.run(ctx, key, c, work)
			return c.val, c.err
		}
		f.mu.Unlock()
		select {
		case <-ctx.Done():
			var zero V
			return zero, ctx.Err()
		case <-c.done:
		}
		if !c.abandoned {
			return c.val, c.err
		}
	}
}

func (f *flight[K, V]) run(ctx context.Context, key K, c *flightCall[V], work func(context.Context) (V, error)) {
	finished := false
	defer func() {
		if !finished || (c.err != nil && ctx.Err() != nil) {
			c.abandoned = true
			f.mu.Lock()
			delete(f.calls, key)
			f.mu.Unlock()
		}
		close(c.done)
	}()
	c.val, c.err = work(ctx)
	finished = true
}
