package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/evosteer/evosteer-go/internal/config"
)

// loadConfig reads --config, or the built-in pipeline.yaml when the flag is empty.
func loadConfig(path string) (*config.Config, error) {
	if path == "" {
		return config.Default()
	}
	return config.Load(path)
}

func newConfigCmd() *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print the resolved configuration and its sha256",
		Long: `Print the configuration a run would use: the built-in pipeline.yaml with --config FILE
overlaid on it, after strict checking (unknown keys, wrong types and out-of-range values fail
with file, line and column). The last line is the sha256 that run folders and file lineage
record.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(path)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			out.Write(cfg.YAML())
			fmt.Fprintf(out, "# sha256: %s\n", cfg.SHA256())
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "config", "", "configuration file overlaid on the built-in pipeline.yaml")
	return cmd
}
