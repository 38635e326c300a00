package memo

import (
	"fmt"
	"sync"
	"testing"
)

func TestBoundedRemembersUpToMax(t *testing.T) {
	b := Bounded[string, int]{Max: 3}
	for i := range 3 {
		b.Put(fmt.Sprint(i), i)
	}
	for i := range 3 {
		if v, ok := b.Get(fmt.Sprint(i)); !ok || v != i {
			t.Fatalf("Get(%d) = %d, %v", i, v, ok)
		}
	}
	b.Put("3", 3) // full: starts over
	if b.Len() != 1 {
		t.Errorf("%d remembered after a Put beyond Max, want 1", b.Len())
	}
	if _, ok := b.Get("0"); ok {
		t.Errorf("an answer from before the start over is still remembered")
	}
	if v, ok := b.Get("3"); !ok || v != 3 {
		t.Errorf("Get(3) = %d, %v", v, ok)
	}
}

func TestBoundedConcurrentUse(t *testing.T) {
	b := Bounded[int, int]{Max: 64}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				k := (g*1000 + i) % 100
				if v, ok := b.Get(k); ok && v != k*2 {
					t.Errorf("Get(%d) = %d", k, v)
				}
				b.Put(k, k*2)
			}
		})
	}
	wg.Wait()
}
