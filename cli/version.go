package cli

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Set at build time:
//
//	go build -ldflags "-X main.version=v0.3.0 -X main.commit=$(git rev-parse --short HEAD)" ./cmd/openctl
var (
	version = "dev"
	commit  = ""
)

// versionInfo is what "openctl version" reports.
type versionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

func currentVersion() versionInfo {
	v := versionInfo{Version: version, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if v.Commit == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					v.Commit = s.Value
				}
			}
		}
	}
	return v
}

func (a *app) versionCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := currentVersion()
			switch format {
			case "":
				commit := v.Commit
				if commit == "" {
					commit = "unknown"
				}
				_, err := fmt.Fprintf(a.stdout, "openctl %s (commit %s, %s, %s)\n", v.Version, commit, v.GoVersion, v.Platform)
				return err
			case "json":
				b, err := json.Marshal(v)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(a.stdout, "%s\n", b)
				return err
			}
			return usagef("-o: want json or nothing, got %q", format)
		},
	}
	cmd.Flags().StringVarP(&format, "output", "o", "", "output format: json")
	return cmd
}
