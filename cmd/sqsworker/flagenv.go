package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Environment variables that stand in for flags a deployment sets once: a flag given on the
// command line wins over its variable. (The operations page's access token is read only from
// SQSWORKER_UI_TOKEN or --token-file, never from a flag: ui_access.go.)
const (
	// tableVariable names the one sqsworker DynamoDB table (package table: idempotency
	// records, unique jobs, the scheduler's lease) for --table of idempotency get/delete,
	// schedules and ui.
	tableVariable = "SQSWORKER_TABLE"
	// resultsBucketVariable and resultsPrefixVariable name where the workers keep large
	// job results (jobs.Config.LargeResults.Location), for --results-bucket and
	// --results-prefix of jobs get.
	resultsBucketVariable = "SQSWORKER_RESULTS_BUCKET"
	resultsPrefixVariable = "SQSWORKER_RESULTS_PREFIX"
)

// flagEnvAnnotation is the flag annotation that names a flag's environment variable.
const flagEnvAnnotation = "sqsworker_env"

// envFlag makes the environment variable the default of cmd's flag name (which must
// exist), and says so in the flag's help.
func envFlag(cmd *cobra.Command, name, variable string) {
	flag := cmd.Flags().Lookup(name)
	if flag == nil {
		panic(fmt.Sprintf("sqsworker: %s has no flag --%s", cmd.CommandPath(), name))
	}
	_ = cmd.Flags().SetAnnotation(name, flagEnvAnnotation, []string{variable})
	flag.Usage += " (env " + variable + ")"
}

// applyFlagEnv sets every flag of cmd that has an environment variable, was not given on
// the command line and whose variable is set and not empty, from that variable. It runs
// before cobra checks required flags, so a variable satisfies one.
func applyFlagEnv(cmd *cobra.Command, lookup func(string) (string, bool)) error {
	var err error
	cmd.Flags().VisitAll(func(flag *pflag.Flag) {
		variables := flag.Annotations[flagEnvAnnotation]
		if err != nil || flag.Changed || len(variables) == 0 {
			return
		}
		value, ok := lookup(variables[0])
		if !ok || value == "" {
			return
		}
		if setErr := cmd.Flags().Set(flag.Name, value); setErr != nil {
			err = usageError(fmt.Errorf("%s=%q (for --%s): %w", variables[0], value, flag.Name, setErr))
		}
	})
	return err
}
