package guard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// MaxInput bounds a sample input.
const MaxInput = 1 << 20

// DecodeInput reads a hook's environment from JSON, for trying guards on a
// sample: the same names as in conditions, unknown ones refused. Durations
// (a session's age and idle) may be written as "5m"; an input without now
// gets the now given. The Match is taken from the input: the task's agent
// and name, and a transition's stages.
func DecodeInput(h Hook, b []byte, now time.Time) (any, Match, error) {
	zero, ok := envs[h]
	if !ok {
		return nil, Match{}, fmt.Errorf("unknown hook %q; hooks: %s", h, hookList())
	}
	if len(b) > MaxInput {
		return nil, Match{}, fmt.Errorf("the input is %d bytes, more than %d", len(b), MaxInput)
	}
	var raw map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&raw); err != nil {
		return nil, Match{}, fmt.Errorf("the input is not a JSON object: %w", err)
	}
	if h == PreToolUse {
		for _, k := range []string{"targets", "unread"} {
			if _, ok := raw[k]; ok {
				return nil, Match{}, fmt.Errorf("the input sets %s, which is read from the call (tool, kind, input, paths, cwd); leave it out", k)
			}
		}
	}
	if err := durationsToNanos(raw); err != nil {
		return nil, Match{}, err
	}
	nb, _ := json.Marshal(raw)
	env := reflect.New(reflect.TypeOf(zero))
	d = json.NewDecoder(bytes.NewReader(nb))
	d.DisallowUnknownFields()
	if err := d.Decode(env.Interface()); err != nil {
		msg := err.Error()
		if field, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
			return nil, Match{}, fmt.Errorf("the input has a field %s that a %s condition cannot see; %s", field, h, Describe(h))
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, Match{}, fmt.Errorf("the input's %s should be %s, not a JSON %s", te.Field, jsonKind(te.Type), te.Value)
		}
		return nil, Match{}, fmt.Errorf("the input does not fit a %s condition: %w", h, err)
	}
	if f := env.Elem().FieldByName("Now"); f.IsValid() && f.Interface().(time.Time).IsZero() {
		f.Set(reflect.ValueOf(now))
	}
	out := env.Elem().Interface()
	return out, matchOf(out), nil
}

// durationsToNanos rewrites "age" and "idle" given as "5m" into
// nanoseconds, at any depth.
func durationsToNanos(v any) error {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if s, ok := x.(string); ok && (k == "age" || k == "idle") {
				d, err := time.ParseDuration(s)
				if err != nil {
					return fmt.Errorf("%s: %q is not a duration such as \"90s\" or \"5m\"", k, s)
				}
				t[k] = int64(d)
				continue
			}
			if err := durationsToNanos(x); err != nil {
				return err
			}
		}
	case []any:
		for _, x := range t {
			if err := durationsToNanos(x); err != nil {
				return err
			}
		}
	}
	return nil
}

func matchOf(env any) Match {
	switch e := env.(type) {
	case ToolUseEnv:
		return Match{Agent: e.Task.Agent, Task: e.Task.Name}
	case AdmissionEnv:
		return Match{Agent: e.Task.Agent, Task: e.Task.Name}
	case ResultEnv:
		return Match{Agent: e.Task.Agent, Task: e.Task.Name}
	case ReuseEnv:
		return Match{Agent: e.Task.Agent, Task: e.Task.Name}
	case TransitionEnv:
		return Match{From: e.From, To: e.To}
	}
	return Match{}
}

func hookList() string {
	s := make([]string, len(Hooks))
	for i, h := range Hooks {
		s[i] = string(h)
	}
	return strings.Join(s, ", ")
}

// jsonKind names a Go type as the JSON a sample input should hold.
func jsonKind(t reflect.Type) string {
	if t == reflect.TypeOf(time.Time{}) {
		return "a time (RFC 3339)"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(jsonKind(t.Elem()), "a "), "an ") + "s"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a " + t.String()
}
