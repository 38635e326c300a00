package readonly

import (
	"flag"
	"testing"
)

func TestChecked(t *testing.T) {
	bench := flag.Lookup("test.bench")
	if bench == nil {
		t.Fatal("the test binary registers no -test.bench flag")
	}
	old := bench.Value.String()
	t.Cleanup(func() { _ = bench.Value.Set(old) })
	for _, tc := range []struct {
		bench string
		want  bool
	}{
		{"", true},   // go test
		{".", false}, // go test -bench .
		{"BenchmarkPromotionPass10000", false},
	} {
		if err := bench.Value.Set(tc.bench); err != nil {
			t.Fatal(err)
		}
		if got := Checked(); got != tc.want {
			t.Errorf("with -test.bench=%q, Checked() = %v, want %v", tc.bench, got, tc.want)
		}
	}
}
