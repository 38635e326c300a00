package keys

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSortedLikeTakesAnOrderOnlyWhenItHolds(t *testing.T) {
	m := map[string]int{"b": 1, "a": 2, "c": 3}
	for _, tc := range []struct {
		name   string
		sorted []string
		same   bool // the very slice given comes back
	}{
		{"the same keys", []string{"a", "b", "c"}, true},
		{"none", nil, false},
		{"one key fewer", []string{"a", "b"}, false},
		{"as many keys, one other", []string{"a", "b", "d"}, false},
		{"one key more", []string{"a", "b", "c", "d"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SortedLike(m, tc.sorted)
			if want := []string{"a", "b", "c"}; !slices.Equal(got, want) {
				t.Fatalf("SortedLike = %v, want %v", got, want)
			}
			if same := len(tc.sorted) > 0 && &got[0] == &tc.sorted[0]; same != tc.same {
				t.Errorf("the given order taken: %v, want %v", same, tc.same)
			}
		})
	}
}

func TestAbsentIsWhatAPruneRemovesInOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		m, from := map[string]bool{}, map[string]int{}
		var want []string
		for i := range 200 {
			k := fmt.Sprintf("k%03d", r.IntN(400))
			m[k] = true
			if i%3 != round%3 {
				from[k] = i
			}
		}
		for _, k := range Sorted(m) {
			if _, ok := from[k]; !ok {
				want = append(want, k)
			}
		}
		if got := Absent(m, from); !slices.Equal(got, want) {
			t.Fatalf("round %d: Absent = %v, want %v", round, got, want)
		}
	}
	if got := Absent(map[string]int{"a": 1}, map[string]int{"a": 1}); got != nil {
		t.Errorf("Absent of a map whose keys are all there = %v, want none", got)
	}
}
