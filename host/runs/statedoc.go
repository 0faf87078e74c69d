package runs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hearth-dev/hearth"
	"github.com/hearth-dev/hearth/internal/text"
	"github.com/hearth-dev/hearth/sdk"
)

// maxSection bounds one section of a run's state document: the whole
// document travels with every checkpoint.
const maxSection = 1 << 20

// stateDoc is a run's state document: its top-level sections, as JSON,
// and who may read and write which (the pipeline's owner blocks,
// hearth.State). It decides and changes nothing else: the schedule puts
// its JSON in the run's head (encode) and records each change with the
// event that reports it.
type stateDoc struct {
	run      string
	owners   hearth.State
	sections map[string]json.RawMessage
}

// newStateDoc reads the state document of run from its head's JSON (b,
// empty for none).
func newStateDoc(run string, owners hearth.State, b []byte) (*stateDoc, error) {
	d := &stateDoc{run: run, owners: owners, sections: make(map[string]json.RawMessage)}
	if len(b) > 0 {
		if err := json.Unmarshal(b, &d.sections); err != nil {
			return nil, fmt.Errorf("run %s: state document: %w", run, err)
		}
	}
	if d.sections == nil {
		// JSON null decodes to no map at all: a document with no
		// sections, which a write must still be able to add to.
		d.sections = make(map[string]json.RawMessage)
	}
	return d, nil
}

// read is a section of the document, or the whole of what agent may read
// when section is "".
func (d *stateDoc) read(agent, section string) (json.RawMessage, error) {
	if section != "" {
		if !d.owners.CanRead(agent, section) {
			return nil, d.ownerError(agent, "read", section)
		}
		return slices.Clone(d.sections[section]), nil
	}
	view := make(map[string]json.RawMessage, len(d.sections))
	for k, v := range d.sections {
		if d.owners.CanRead(agent, k) {
			view[k] = v
		}
	}
	return json.Marshal(view)
}

// write replaces section with b (JSON; empty or null deletes it) for
// agent, if agent may write it.
func (d *stateDoc) write(agent, section string, b []byte) error {
	if !d.owners.CanWrite(agent, section) {
		return d.ownerError(agent, "write", section)
	}
	d.put(section, b)
	return nil
}

// set sets sections from outside the run's agents (a person resuming or
// forking it), all or none: it answers their names in the order set, or
// why none was.
func (d *stateDoc) set(sections map[string]json.RawMessage) ([]string, error) {
	if err := checkSections(sections); err != nil {
		return nil, err
	}
	names := slices.Sorted(maps.Keys(sections))
	for _, k := range names {
		d.put(k, sections[k])
	}
	return names, nil
}

// put replaces section with b; empty or null deletes it.
func (d *stateDoc) put(section string, b []byte) {
	if len(b) == 0 || bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		delete(d.sections, section)
		return
	}
	d.sections[section] = slices.Clone(b)
}

// encode is the document as the run's head keeps it.
func (d *stateDoc) encode() ([]byte, error) { return json.Marshal(d.sections) }

// values is the document decoded, as guards read it; a section that does
// not decode is left out.
func (d *stateDoc) values() map[string]any {
	out := make(map[string]any, len(d.sections))
	for k, v := range d.sections {
		var x any
		if json.Unmarshal(v, &x) == nil {
			out[k] = x
		}
	}
	return out
}

// ownerError says an agent went outside its sections.
func (d *stateDoc) ownerError(agent, verb, section string) error {
	o := d.owners.Owner(agent)
	var own string
	switch {
	case o == nil:
		own = "it has no owner block, so it writes nothing"
	case verb == "write":
		own = "it writes " + text.OrNone(o.Writes)
	default:
		own = "it reads " + text.OrNone(o.Reads)
	}
	return fmt.Errorf("agent %q may not %s section %q of run %s's state; %s (the pipeline's state owner blocks decide): %w",
		agent, verb, section, d.run, own, sdk.ErrNotOwner)
}

// checkSections checks state sections given from outside the run.
func checkSections(sections map[string]json.RawMessage) error {
	for _, k := range slices.Sorted(maps.Keys(sections)) {
		if strings.TrimSpace(k) == "" {
			return errors.New("a state section needs a name")
		}
		if !json.Valid(sections[k]) {
			return fmt.Errorf("state section %q is not valid JSON", k)
		}
	}
	return nil
}
