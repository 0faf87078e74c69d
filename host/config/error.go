package config

import (
	"fmt"
	"io"
	"strings"

	"github.com/hashicorp/hcl/v2"
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

// Write prints the problems as HCL does: position, summary, the offending
// source lines with the spot underlined, and the detail saying what to do.
// width wraps the detail text (0: no wrapping); color adds terminal colors.
func (e *Error) Write(w io.Writer, width uint, color bool) error {
	return hcl.NewDiagnosticTextWriter(w, e.files, width, color).WriteDiagnostics(e.Diagnostics)
}
