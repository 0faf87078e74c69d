package store

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/host/record"
	"github.com/hearth-dev/hearth/host/store/internal/storepb"
)

// graphElsewhere are the fields of a pipeline a run keeps in its head,
// not in its graph: the run's budget (which `runs resume --budget`
// changes), its files (attached, by content) and its state document
// (whose first value the initial state is). The graph drops them on
// purpose; every other field must survive it.
var graphElsewhere = []string{"Budget", "Files", "State.Initial"}

// TestGraphRoundTrip: every field of a run's pipeline, its tasks and its
// stages survives the store, filled by reflection, so that a field added
// to hearth.Pipeline, hearth.PipelineTask or hearth.Stage (a new stage
// rule, say) and dropped by the store fails here, where the store lives,
// and not in a run that forgets it after a restart.
func TestGraphRoundTrip(t *testing.T) {
	t.Parallel()
	var p hearth.Pipeline
	fillAll(t, reflect.ValueOf(&p).Elem(), new(int))
	want := p
	for _, path := range graphElsewhere {
		f := fieldAt(reflect.ValueOf(&want).Elem(), path)
		if !f.IsValid() {
			t.Fatalf("graphElsewhere names %s, which hearth.Pipeline no longer has: remove it from the list", path)
		}
		f.SetZero()
	}

	s := MustOpen(t, t.TempDir())
	g := &record.Graph{Pipeline: &p, Config: "/etc/hearth/hearth.hcl"}
	if err := s.SaveRun("podcast-1", record.RunWrite{Graph: g}).Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := s.RunGraph("podcast-1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Config != g.Config {
		t.Errorf("config: got %q, want %q", got.Config, g.Config)
	}
	if !reflect.DeepEqual(*got.Pipeline, want) {
		t.Errorf("pipeline through the store:\n got %+v\nwant %+v", *got.Pipeline, want)
		for i := range len(want.Stages) {
			t.Logf("stage %d: got %+v, want %+v", i, got.Pipeline.Stages[i], want.Stages[i])
		}
	}
}

// TestGraphWithoutStages: a graph written before stages had rules (no
// stages field) reads as no stages; one whose stages do not decode is an
// error that says so, not a pipeline without its rules.
func TestGraphWithoutStages(t *testing.T) {
	t.Parallel()
	g, err := graphFromPB(&storepb.RunGraph{Pipeline: "p", Tasks: []*storepb.GraphTask{{Name: "a", Stage: "deploy"}}})
	if err != nil || g.Pipeline.Stages != nil || g.Pipeline.Tasks[0].Stage != "deploy" {
		t.Errorf("an old record: got %+v, %v; want its task's stage and no stage rules", g, err)
	}
	if _, err := graphFromPB(&storepb.RunGraph{Pipeline: "p", Stages: []byte(`[{"name":"deploy","not_before":"soon"}]`)}); err == nil || !strings.Contains(err.Error(), `stages of pipeline "p"`) {
		t.Errorf("damaged stages: got %v, want an error naming them", err)
	}
	m, err := graphToPB(&record.Graph{Pipeline: &hearth.Pipeline{Name: "p"}})
	if err != nil || m.Stages != nil {
		t.Errorf("a pipeline without stage rules: got %q, %v; want no stages field, as before", m.GetStages(), err)
	}
}

// fillAll sets every exported field under v to a value of its own,
// counting with n, so that two fields never hold the same value.
func fillAll(t *testing.T, v reflect.Value, n *int) {
	t.Helper()
	*n++
	if v.Type() == reflect.TypeFor[time.Time]() {
		// UTC: the zone is not part of an instant the store keeps.
		v.Set(reflect.ValueOf(time.Unix(1_800_000_000+int64(*n), int64(*n)).UTC()))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillAll(t, v.Field(i), n)
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillAll(t, v.Elem(), n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fillAll(t, v.Index(0), n)
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k := reflect.New(v.Type().Key()).Elem()
		fillAll(t, k, n)
		e := reflect.New(v.Type().Elem()).Elem()
		fillAll(t, e, n)
		v.SetMapIndex(k, e)
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", *n))
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint8:
		v.SetUint(uint64('0' + *n%10))
	case reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	case reflect.Bool:
		v.SetBool(true)
	default:
		t.Fatalf("fillAll: a field of kind %s (%s): teach fillAll, and the store, about it", v.Kind(), v.Type())
	}
}

// fieldAt is the field at a dotted path under struct v, or the zero
// Value when there is none.
func fieldAt(v reflect.Value, path string) reflect.Value {
	for name := range strings.SplitSeq(path, ".") {
		if v.Kind() != reflect.Struct {
			return reflect.Value{}
		}
		v = v.FieldByName(name)
		if !v.IsValid() {
			return v
		}
	}
	return v
}
