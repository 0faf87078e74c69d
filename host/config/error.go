package config

import (
	"fmt"
	"io"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/hearth-dev/hearth"
)

// Error is an invalid configuration: every problem found, each with its
// position in the file.
type Error struct {
	Diagnostics hcl.Diagnostics
	files       map[string]*hcl.File
}

// Error lists the problems one per line as file:line:col: summary; detail.
func (e *Error) Error() string {
	var b strings.Builder
	for i, d := range e.Diagnostics {
		if i > 0 {
			b.WriteByte('\n')
		}
		if d.Subject != nil {
			fmt.Fprintf(&b, "%s:%d:%d: ", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column)
		}
		b.WriteString(d.Summary)
		if d.Detail != "" {
			b.WriteString("; ")
			b.WriteString(d.Detail)
		}
	}
	return b.String()
}

// Is makes every Error a hearth.ErrConfig.
func (e *Error) Is(target error) bool { return target == hearth.ErrConfig }

// Write prints the problems as HCL does: summary, the offending source
// lines with the spot underlined (on a terminal), and the detail saying
// what to do. Each summary starts with file:line:col, which HCL's own
// header ("on FILE line N") leaves out: without color, nothing else
// shows the column. width wraps the detail text (0: no wrapping); color
// adds terminal colors.
func (e *Error) Write(w io.Writer, width uint, color bool) error {
	return writeDiagnostics(w, e.files, e.Diagnostics, width, color)
}

// WriteWarnings prints the file's warnings (Config.Warnings) as Error's
// Write prints errors.
func (c *Config) WriteWarnings(w io.Writer, width uint, color bool) error {
	return writeDiagnostics(w, c.files, c.Warnings, width, color)
}

func writeDiagnostics(w io.Writer, files map[string]*hcl.File, ds hcl.Diagnostics, width uint, color bool) error {
	diags := make(hcl.Diagnostics, len(ds))
	for i, d := range ds {
		cp := *d
		if d.Subject != nil {
			cp.Summary = fmt.Sprintf("%s:%d:%d: %s", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, d.Summary)
		}
		diags[i] = &cp
	}
	return hcl.NewDiagnosticTextWriter(w, files, width, color).WriteDiagnostics(diags)
}
