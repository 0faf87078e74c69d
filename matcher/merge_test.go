package matcher

import (
	"reflect"
	"testing"
)

// TestMergeMatchesScan splits random worlds into parts, decides each part
// with its own Index, and checks that merging the parts' decisions gives
// what Scan gives over the whole world.
func TestMergeMatchesScan(t *testing.T) {
	for seed := range uint64(300) {
		w := newWorld(seed)
		cfg := DefaultConfig()
		cfg.TopK = 1 + w.rng.IntN(6)
		parts := 1 + w.rng.IntN(4)
		ixs := make([]*Index, parts)
		for i := range ixs {
			ix, err := NewIndex(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ixs[i] = ix
		}
		var all []Candidate
		for _, id := range w.ids {
			c := w.candidate(id)
			all = append(all, c)
			ixs[w.rng.IntN(parts)].Put(c)
		}
		for q := range 20 {
			h, ex := w.hints(), w.exclude()
			want := Scan(cfg, all, h, w.now, ex...)
			var ds []Decision
			for _, ix := range ixs {
				ds = append(ds, ix.Decide(h, w.now, ex...))
			}
			got := Merge(cfg, ds...)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d query %d (%d parts): Merge gives\n%v\n%+v\nScan gives\n%v\n%+v", seed, q, parts, got, got, want, want)
			}
		}
	}
}

func TestMergeNothing(t *testing.T) {
	d := Merge(DefaultConfig())
	if d.Outcome != SpawnNoCandidates || d.Ranked != nil {
		t.Fatalf("got %v (%+v), want spawn-no-candidates with nothing ranked", d, d)
	}
}
