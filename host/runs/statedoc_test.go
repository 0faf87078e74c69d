package runs

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/sdk"
)

// TestStateDocument: the pipeline's owner blocks decide which agent
// reads and writes which section; sections set from outside are set all
// or none; the document the head keeps and the one guards read follow
// every change.
func TestStateDocument(t *testing.T) {
	owners := hearth.State{Owners: []*hearth.Owner{
		{Agent: "writer", Writes: []string{"draft"}, Reads: []string{"draft", "brief"}},
		{Agent: "editor", Writes: []string{"notes"}}, // reads all
	}}
	open := hearth.State{} // no owner blocks: every agent reads and writes all
	type op struct {
		agent, verb, section string            // verb: read, write, set
		value                string            // JSON written
		sections             map[string]string // sections set, as raw bytes
		want                 string            // what a read answers
		err                  string            // what the error says, "" for none
		notOwner             bool              // the error is sdk.ErrNotOwner
	}
	for _, tc := range []struct {
		name   string
		owners hearth.State
		first  string // the head's state, "" for none
		ops    []op
		after  string // the document encoded after the ops
		guards map[string]any
	}{
		{name: "an owner writes its section and reads it back", owners: owners,
			ops: []op{
				{agent: "writer", verb: "write", section: "draft", value: `{"words": 900}`},
				{agent: "writer", verb: "read", section: "draft", want: `{"words": 900}`},
			},
			after: `{"draft":{"words":900}}`, guards: map[string]any{"draft": map[string]any{"words": 900.0}}},
		{name: "an owner may not write another section", owners: owners,
			ops: []op{{agent: "writer", verb: "write", section: "brief", value: `"x"`, notOwner: true,
				err: `agent "writer" may not write section "brief" of run essay-1's state; it writes draft`}},
			after: `{}`, guards: map[string]any{}},
		{name: "an agent without an owner block writes nothing", owners: owners,
			ops:   []op{{agent: "critic", verb: "write", section: "draft", value: `"x"`, notOwner: true, err: "it has no owner block, so it writes nothing"}},
			after: `{}`, guards: map[string]any{}},
		{name: "an owner reads only what its block lists", owners: owners, first: `{"brief":"b","notes":"n"}`,
			ops: []op{
				{agent: "writer", verb: "read", section: "notes", notOwner: true, err: "it reads draft, brief"},
				{agent: "writer", verb: "read", section: "", want: `{"brief":"b"}`},
				{agent: "editor", verb: "read", section: "", want: `{"brief":"b","notes":"n"}`},
				{agent: "critic", verb: "read", section: "notes", want: `"n"`},
			},
			after: `{"brief":"b","notes":"n"}`, guards: map[string]any{"brief": "b", "notes": "n"}},
		{name: "null or nothing deletes a section", owners: open, first: `{"a":1,"b":2,"c":3}`,
			ops: []op{
				{agent: "any", verb: "write", section: "a", value: `null`},
				{agent: "any", verb: "write", section: "b", value: ``},
				{agent: "any", verb: "read", section: "a", want: ``},
			},
			after: `{"c":3}`, guards: map[string]any{"c": 3.0}},
		{name: "a document kept as null has no sections, and takes one", owners: open, first: `null`,
			ops: []op{
				{agent: "any", verb: "read", section: "", want: `{}`},
				{agent: "any", verb: "write", section: "a", value: `1`},
			},
			after: `{"a":1}`, guards: map[string]any{"a": 1.0}},
		{name: "sections set from outside, past the owner blocks", owners: owners, first: `{"draft":"old","gone":1}`,
			ops:   []op{{verb: "set", sections: map[string]string{"draft": `"new"`, "gone": `null`, "mood": `"calm"`}}},
			after: `{"draft":"new","mood":"calm"}`, guards: map[string]any{"draft": "new", "mood": "calm"}},
		{name: "sections set from outside: all or none", owners: open, first: `{"a":1}`,
			ops: []op{
				{verb: "set", sections: map[string]string{"a": `2`, "b": `not json`}, err: `state section "b" is not valid JSON`},
				{verb: "set", sections: map[string]string{"a": `2`, " ": `1`}, err: "a state section needs a name"},
			},
			after: `{"a":1}`, guards: map[string]any{"a": 1.0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := newStateDoc("essay-1", tc.owners, []byte(tc.first))
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range tc.ops {
				var got json.RawMessage
				switch o.verb {
				case "read":
					got, err = d.read(o.agent, o.section)
				case "write":
					err = d.write(o.agent, o.section, []byte(o.value))
				case "set":
					sections := make(map[string]json.RawMessage, len(o.sections))
					for k, v := range o.sections {
						sections[k] = json.RawMessage(v)
					}
					_, err = d.set(sections)
				}
				if o.err == "" && err != nil || o.err != "" && (err == nil || !strings.Contains(err.Error(), o.err)) {
					t.Fatalf("%s %s by %q: got %v, want an error saying %q", o.verb, o.section, o.agent, err, o.err)
				}
				if errors.Is(err, sdk.ErrNotOwner) != o.notOwner {
					t.Errorf("%s %s by %q: %v, want ErrNotOwner %v", o.verb, o.section, o.agent, err, o.notOwner)
				}
				if o.verb == "read" && err == nil && string(got) != o.want {
					t.Errorf("read %q by %q: %s, want %s", o.section, o.agent, got, o.want)
				}
			}
			if b, err := d.encode(); err != nil || string(b) != tc.after {
				t.Errorf("encoded: %s, %v; want %s", b, err, tc.after)
			}
			if got, _ := json.Marshal(d.values()); string(got) != mustJSON(t, tc.guards) {
				t.Errorf("as guards read it: %s, want %s", got, mustJSON(t, tc.guards))
			}
		})
	}
	if _, err := newStateDoc("essay-1", open, []byte(`{"a":`)); err == nil || !strings.Contains(err.Error(), "run essay-1: state document") {
		t.Errorf("a head whose state does not decode: %v", err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
