package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// newRootCommand builds the command tree. Sub-commands are added in one place, below.
func newRootCommand(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "sqsworker",
		Short: "Operate sqsworker queues: statistics, dead letters, redrive, test messages, idempotency records, schedules, operations page",
		Long: `sqsworker operates the queues of an sqsworker deployment.

AWS configuration comes from the standard chain: --profile or AWS_PROFILE, --region or
AWS_REGION, the usual credentials, and endpoint overrides such as AWS_ENDPOINT_URL_SQS,
AWS_ENDPOINT_URL_DYNAMODB and AWS_ENDPOINT_URL_CLOUDWATCH (for example the local emulator:
eval "$(localstack/env)").

A QUEUE argument is a queue name, URL or ARN.

Environment: SQSWORKER_TABLE is --table of idempotency, schedules and ui (the flag wins);
the operations page's token comes from SQSWORKER_UI_TOKEN or --token-file.

Shell completion: 'sqsworker completion bash|zsh|fish|powershell --help' says how to load
it; queue names complete from ListQueues with the current AWS configuration.

Exit codes:
  0  success
  1  error (AWS call failed, queue or record not found, refused operation)
  2  usage error (unknown command or flag, bad argument)
  3  partial: some of the work was not done (messages not moved or not sent, task cancelled)`,
		Version:       buildVersion(debug.ReadBuildInfo()),
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          groupArgs,
		RunE:          groupRun,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if a.output != outputText && a.output != outputJSON {
				return usageError(fmt.Errorf("--output %q: want text or json", a.output))
			}
			return applyFlagEnv(cmd, a.lookupEnv)
		},
	}
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usageError(err) })
	flags := root.PersistentFlags()
	flags.StringVarP(&a.output, "output", "o", outputText, "output format: text or json (json for scripts)")
	flags.StringVar(&a.region, "region", "", "AWS region (default: AWS_REGION or the profile's region)")
	flags.StringVar(&a.profile, "profile", "", "AWS shared config profile (default: AWS_PROFILE)")

	// Sub-commands: every command of the CLI is added here, one constructor per file
	// (for example newESMCommand from esm.go).
	root.AddCommand(
		newQueuesCommand(a),
		newStatsCommand(a),
		newDLQCommand(a),
		newRedriveCommand(a),
		newSendCommand(a),
		newIdempotencyCommand(a),
		newJobsCommand(a),
		newBatchesCommand(a),
		newESMCommand(a),
		newCreateCommand(a),
		newSchedulesCommand(a),
		newOutboxCommand(a),
		newUICommand(a),
	)
	addQueueCompletion(a, root)
	return root
}

// newGroup returns a command that only holds sub-commands: run alone or with an
// unknown sub-command, it is a usage error (exit 2).
func newGroup(use, short string, children ...*cobra.Command) *cobra.Command {
	group := &cobra.Command{Use: use, Short: short, Args: groupArgs, RunE: groupRun}
	group.AddCommand(children...)
	return group
}

func groupArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError(fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath()))
	}
	return nil
}

func groupRun(cmd *cobra.Command, args []string) error {
	var names []string
	for _, child := range cmd.Commands() {
		if child.IsAvailableCommand() {
			names = append(names, child.Name())
		}
	}
	return usageError(fmt.Errorf("%s needs a command: %s", cmd.CommandPath(), strings.Join(names, ", ")))
}

// exactArgs wraps cobra.ExactArgs so that a wrong count is a usage error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return usageError(err)
		}
		return nil
	}
}
