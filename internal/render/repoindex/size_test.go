package repoindex

import (
	"testing"
	"testing/synctest"
)

// TestBudget checks the gate of the index's workers: a reader waits while
// the bytes it asks for are held by others, and one that asks for more
// than the whole budget waits to be alone.
func TestBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBudget(10)
		b.Acquire(6)
		second := make(chan struct{})
		go func() {
			b.Acquire(6)
			close(second)
		}()
		synctest.Wait()
		select {
		case <-second:
			t.Fatal("took 6 bytes of 10 while 6 were held")
		default:
		}
		b.Acquire(4) // what is left
		b.Release(4)
		b.Release(6)
		synctest.Wait()
		select {
		case <-second:
		default:
			t.Fatal("still waiting with the whole budget free")
		}
		huge := make(chan struct{})
		go func() {
			b.Acquire(1 << 40)
			close(huge)
		}()
		synctest.Wait()
		select {
		case <-huge:
			t.Fatal("a reader above the budget did not wait for the others")
		default:
		}
		b.Release(6)
		synctest.Wait()
		select {
		case <-huge:
		default:
			t.Fatal("a reader above the budget waits although it is alone")
		}
		b.Release(1 << 40)
		var none *Budget
		none.Acquire(1 << 40) // no limit: never waits
	})
}
