package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/hearth-dev/hearth/sdk/plugin"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = "dev"

type versionInfo struct {
	Version         string `json:"version"`
	Commit          string `json:"commit,omitempty"`
	Go              string `json:"go"`
	ProtocolVersion int    `json:"protocol_version"`
}

func buildInfo() versionInfo {
	v := versionInfo{Version: version, Go: runtime.Version(), ProtocolVersion: plugin.ProtocolVersion}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v.Commit = s.Value
			}
		}
		if v.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
	}
	return v
}

func (m *Main) versionCommand() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "version",
		Short: "Print hearth's version and the agent protocol it speaks",
		Args:  exactArgs(),
		RunE: func(*cobra.Command, []string) error {
			v := buildInfo()
			if asJSON {
				return m.printJSON(v)
			}
			fmt.Fprintf(m.Stdout, "hearth %s (%s, agent protocol %d)\n", v.Version, v.Go, v.ProtocolVersion)
			if v.Commit != "" {
				fmt.Fprintf(m.Stdout, "commit %s\n", v.Commit)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
