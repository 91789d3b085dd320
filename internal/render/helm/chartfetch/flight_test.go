package chartfetch

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// TestFlightRunsOnce proves that callers asking for a key at the same
// time, and later, share one run of its work, result and error alike.
func TestFlightRunsOnce(t *testing.T) {
	var f flight[string, int]
	var runs atomic.Int32
	release := make(chan struct{})
	work := func(context.Context) (int, error) {
		runs.Add(1)
		<-release
		return 7, nil
	}
	var wg sync.WaitGroup
	results := make([]int, 8)
	for i := range results {
		wg.Go(func() {
			v, err := f.do(t.Context(), "a", work)
			if err != nil {
				t.Error(err)
			}
			results[i] = v
		})
	}
	close(release)
	wg.Wait()
	if v, _ := f.do(t.Context(), "a", work); v != 7 {
		t.Errorf("a later call = %d, want 7", v)
	}
	for i, v := range results {
		if v != 7 {
			t.Errorf("caller %d got %d, want 7", i, v)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("work ran %d times, want 1", n)
	}

	failed := errors.New("no such chart")
	for range 2 {
		if _, err := f.do(t.Context(), "b", func(context.Context) (int, error) { runs.Add(1); return 0, failed }); !errors.Is(err, failed) {
			t.Errorf("do() = %v, want %v", err, failed)
		}
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("work ran %d times for two keys, want 2: an error is kept for the run", n)
	}
}

// TestFlightForgetsCancelled proves that work ended by its caller's
// context is not kept: a caller waiting on it, whose context is alive,
// runs it again, and the next caller gets that result.
func TestFlightForgetsCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f flight[string, int]
		ctx, cancel := context.WithCancel(t.Context())
		leader := make(chan error, 1)
		go func() {
			_, err := f.do(ctx, "a", func(ctx context.Context) (int, error) {
				<-ctx.Done()
				return 0, ctx.Err()
			})
			leader <- err
		}()
		synctest.Wait() // the work has started

		waiter := make(chan int, 1)
		go func() {
			v, err := f.do(t.Context(), "a", func(context.Context) (int, error) { return 2, nil })
			if err != nil {
				t.Error(err)
			}
			waiter <- v
		}()
		synctest.Wait() // the second caller waits for the work
		cancel()
		if err := <-leader; !errors.Is(err, context.Canceled) {
			t.Errorf("the cancelled caller got %v, want context.Canceled", err)
		}
		if v := <-waiter; v != 2 {
			t.Errorf("the waiting caller got %d, want 2 from running the work again", v)
		}
		if v, err := f.do(t.Context(), "a", func(context.Context) (int, error) { return 3, nil }); v != 2 || err != nil {
			t.Errorf("a later call = %d, %v, want the waiter's 2 kept", v, err)
		}
	})
}

// TestFlightWaiterCancelled proves that a waiting caller leaves when its
// own context ends, without ending the work.
func TestFlightWaiterCancelled(t *testing.T) {
	var f flight[string, int]
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan int, 1)
	go func() {
		v, _ := f.do(t.Context(), "a", func(context.Context) (int, error) {
			close(started)
			<-release
			return 5, nil
		})
		done <- v
	}()
	<-started
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := f.do(ctx, "a", func(context.Context) (int, error) { return 0, nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled waiter got %v, want context.Canceled", err)
	}
	close(release)
	if v := <-done; v != 5 {
		t.Errorf("the work's caller got %d, want 5", v)
	}
}
