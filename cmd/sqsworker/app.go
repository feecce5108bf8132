package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"golang.org/x/term"

	"github.com/sqsworker/sqsworker/redrive"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// Output formats of --output.
const (
	outputText = "text"
	outputJSON = "json"
)

// app holds the global flags and the outputs shared by every command.
type app struct {
	stdout, stderr io.Writer
	output         string
	region         string
	profile        string
	cfg            *aws.Config
	// lookupEnv reads the environment variables of flags (flagenv.go).
	lookupEnv func(string) (string, bool)
}

func newApp(stdout, stderr io.Writer) *app {
	return &app{stdout: stdout, stderr: stderr, lookupEnv: os.LookupEnv}
}

// awsConfig loads the AWS configuration once, from the standard chain plus --region
// and --profile. Endpoints come only from that chain (AWS_ENDPOINT_URL_*).
func (a *app) awsConfig(ctx context.Context) (aws.Config, error) {
	if a.cfg != nil {
		return *a.cfg, nil
	}
	var options []func(*config.LoadOptions) error
	if a.region != "" {
		options = append(options, config.WithRegion(a.region))
	}
	if a.profile != "" {
		options = append(options, config.WithSharedConfigProfile(a.profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, options...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("sqsworker: loading AWS configuration: %w", err)
	}
	a.cfg = &cfg
	return cfg, nil
}

func (a *app) sqs(ctx context.Context) (*sqs.Client, error) {
	cfg, err := a.awsConfig(ctx)
	if err != nil {
		return nil, err
	}
	return sqs.NewFromConfig(cfg), nil
}

func (a *app) json() bool { return a.output == outputJSON }

// printJSON writes v as indented JSON on stdout.
func (a *app) printJSON(v any) error {
	encoder := json.NewEncoder(a.stdout)
	encoder.SetIndent("", "  ")
	return encoder.Encode(v)
}

// table returns a tab-aligned writer on stdout; call Flush when done.
func (a *app) table() *tabwriter.Writer {
	return tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
}

// warn prints a warning line on stderr.
func (a *app) warn(format string, args ...any) {
	fmt.Fprintf(a.stderr, "warning: "+format+"\n", args...)
}

// stderrIsTerminal reports whether stderr is a terminal (progress bars go there only then).
func (a *app) stderrIsTerminal() bool {
	file, ok := a.stderr.(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}

// queueName returns the name of a queue from its ARN (sqsinfo.ParseQueueARN) or the last
// path element of its URL.
func queueName(ref string) string {
	if arn, err := sqsinfo.ParseQueueARN(ref); err == nil {
		return arn.Name
	}
	if i := strings.LastIndexAny(ref, "/:"); i >= 0 {
		return ref[i+1:]
	}
	return ref
}

// oneLine shortens text to one line of at most n characters.
func oneLine(text string, n int) string {
	text = strings.Join(strings.Fields(text), " ")
	if len(text) > n {
		return text[:n-1] + "…"
	}
	return text
}

// resolveQueue resolves a queue name, URL or ARN to its URL (sqsinfo.ResolveQueueURL); a
// queue that does not exist gives an error matching redrive.ErrQueueNotFound.
func resolveQueue(ctx context.Context, client sqsinfo.QueueURLAPI, ref string) (string, error) {
	url, err := sqsinfo.ResolveQueueURL(ctx, client, ref)
	if err != nil && !errors.Is(err, redrive.ErrQueueNotFound) {
		return "", fmt.Errorf("sqsworker: %w", err)
	}
	return url, err
}
