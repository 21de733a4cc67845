package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/evosteer/evosteer-go/internal/rundir"
)

func newInitCmd() *cobra.Command {
	var path, run string
	cmd := &cobra.Command{
		Use:   "init --run DIR [--config FILE]",
		Short: "Create a run folder with its resolved configuration",
		Long: `Create the run folder DIR with run.yaml: the resolved configuration (the built-in
pipeline.yaml with --config overlaid), its sha256 and the code version. Every stage checks that
hash, so a run's configuration cannot drift. DIR must not exist or be empty.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(path)
			if err != nil {
				return err
			}
			r, err := rundir.Init(run, cfg, codeVersion())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "initialised run %s in %s (config sha256 %s)\n", r.Name, r.Dir, cfg.SHA256())
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "config", "", "configuration file overlaid on the built-in pipeline.yaml")
	cmd.Flags().StringVar(&run, "run", "", "run folder to create (required)")
	cmd.MarkFlagRequired("run")
	return cmd
}
