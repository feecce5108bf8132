package main

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/spf13/cobra"
)

// Shell completion is cobra's (`sqsworker completion bash|zsh|fish|powershell`); queue names
// complete from ListQueues with the command line's AWS configuration.

// queueFlags are the flags that take a queue (name, URL or ARN) wherever they appear.
var queueFlags = []string{"queue", "from", "to"}

// maxCompletedQueues bounds the ListQueues pages one completion reads (1000 names each).
const maxCompletedQueues = 1000

// addQueueCompletion walks the command tree under cmd: a command whose first argument is
// a queue (its Use reads "NAME QUEUE ..." or "NAME DLQ ...") completes that argument with
// queue names, and so does every flag of queueFlags.
func addQueueCompletion(a *app, cmd *cobra.Command) {
	if words := strings.Fields(cmd.Use); len(words) > 1 && (words[1] == "QUEUE" || words[1] == "DLQ") && cmd.ValidArgsFunction == nil {
		cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return a.completeQueues(cmd, toComplete)
		}
	}
	for _, name := range queueFlags {
		if cmd.LocalNonPersistentFlags().Lookup(name) != nil {
			_ = cmd.RegisterFlagCompletionFunc(name, func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
				return a.completeQueues(cmd, toComplete)
			})
		}
	}
	for _, child := range cmd.Commands() {
		addQueueCompletion(a, child)
	}
}

// completeQueues lists the queues whose names start with toComplete (a URL or ARN being
// typed completes to nothing). A failed AWS call ends the completion without candidates.
func (a *app) completeQueues(cmd *cobra.Command, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if strings.Contains(toComplete, "/") || strings.Contains(toComplete, ":") {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx := cmd.Context()
	client, err := a.sqs(ctx)
	if err != nil {
		cobra.CompDebugln(err.Error(), true)
		return nil, cobra.ShellCompDirectiveError
	}
	input := &sqs.ListQueuesInput{MaxResults: aws.Int32(1000)}
	if toComplete != "" {
		input.QueueNamePrefix = aws.String(toComplete)
	}
	var names []cobra.Completion
	for pages := sqs.NewListQueuesPaginator(client, input); pages.HasMorePages() && len(names) < maxCompletedQueues; {
		page, err := pages.NextPage(ctx)
		if err != nil {
			cobra.CompDebugln(err.Error(), true)
			return nil, cobra.ShellCompDirectiveError
		}
		for _, url := range page.QueueUrls {
			names = append(names, url[strings.LastIndex(url, "/")+1:])
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}
