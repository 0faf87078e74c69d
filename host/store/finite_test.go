package store

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/sdk"
)

// poison sets every float64 that v reaches (through pointers, slices and
// structs it holds already) to x.
func poison(v reflect.Value, x float64, seen map[uintptr]bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return
		}
		seen[v.Pointer()] = true
		poison(v.Elem(), x, seen)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				poison(v.Field(i), x, seen)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			poison(v.Index(i), x, seen)
		}
	case reflect.Map:
		if v.Type().Elem().Kind() == reflect.Float64 {
			for _, k := range v.MapKeys() {
				v.SetMapIndex(k, reflect.ValueOf(x))
			}
		}
	case reflect.Float64:
		if v.CanSet() {
			v.SetFloat(x)
		}
	}
}

// TestNonFiniteNumbersReadAsZero: every number of every record the
// store reads back is finite, whatever its writer put there (an agent's
// reported cost, a peer's decision, a corrupt record): NaN and ±Inf read
// as 0. The records are written with every float they hold poisoned, and
// each read back must encode as JSON, which has no NaN nor Inf: so no
// field is left out, whichever a later change adds.
func TestNonFiniteNumbersReadAsZero(t *testing.T) {
	t.Parallel()
	for _, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		s := MustOpen(t, t.TempDir())
		f := []hearth.Factor{{Name: "directory", Applied: true}, {Name: "live", Applied: true}}
		d := hearth.Decision{Task: "t-1", Agent: "coder", Action: hearth.ActionReused, Session: "s-1",
			Candidates: []hearth.Candidate{{Session: "s-1", Eligible: true, Capacity: 1, Factors: f}}}
		e := hearth.Event{Kind: hearth.EventDecision, Time: time.Now(), Agent: "coder", Task: "t-1", Decision: &d,
			ToolUse: &sdk.ToolUse{Tool: "Read"}}
		poison(reflect.ValueOf(&e), x, map[uintptr]bool{})
		if _, p := s.Append(e); p.Wait(context.Background()) != nil {
			t.Fatal(p.Wait(context.Background()))
		}
		w := saveRun(t, s, "essay-1")
		w.Outputs[0].Metrics = map[string]float64{"tokens": 1}
		poison(reflect.ValueOf(&w), x, map[uintptr]bool{})
		if err := s.SaveRun("essay-1", w).Wait(context.Background()); err != nil {
			t.Fatal(err)
		}

		evs, err := s.Decisions(10)
		if err != nil || len(evs) != 1 {
			t.Fatalf("decisions %v, %v", evs, err)
		}
		head, err := s.RunRecord("essay-1")
		if err != nil {
			t.Fatal(err)
		}
		tasks, err := s.RunTasks("essay-1")
		if err != nil {
			t.Fatal(err)
		}
		outs, err := s.TaskOutputs("essay-1")
		if err != nil {
			t.Fatal(err)
		}
		cps, err := s.Checkpoints("essay-1")
		if err != nil {
			t.Fatal(err)
		}
		for what, v := range map[string]any{"the decision's event": evs, "the run's head": head, "its tasks": tasks, "its outputs": outs, "its checkpoints": cps} {
			if _, err := json.Marshal(v); err != nil {
				t.Errorf("written with every number %v, %s reads back with one that is not finite: %v", x, what, err)
			}
		}
		if c := evs[0].Decision.Candidates[0].Factors[1]; c.Share != 0 || c.Score != 0 || c.Weight != 0 {
			t.Errorf("written %v, the factor reads back %+v; want 0s", x, c)
		}
	}
}
