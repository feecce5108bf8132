package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/spf13/cobra"

	"github.com/sqsworker/sqsworker/producer"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// fileMessage is one line of `send --file`.
type fileMessage struct {
	// Body is the message body: a JSON string is sent as its text, any other JSON value
	// as its compact JSON.
	Body json.RawMessage `json:"body"`
	// Attributes are message attributes; a name "NAME:TYPE" (for example "count:Number")
	// sets the data type, otherwise String.
	Attributes map[string]string `json:"attributes"`
	// Group and Dedup are the FIFO message group and deduplication ids.
	Group string `json:"group"`
	Dedup string `json:"dedup"`
	// Type is the job type, sent as the job-type attribute a ServeMux routes on.
	Type string `json:"type"`
	// DelaySeconds delays delivery (standard queues only): up to 900 through
	// DelaySeconds, longer through hops (see newSendCommand), at most 14 days.
	DelaySeconds int64 `json:"delay_seconds"`
}

// sentMessage and sendFailure are the JSON output of `send`.
type sentMessage struct {
	Line  int    `json:"line"`
	ID    string `json:"id"`
	JobID string `json:"job_id"` // the job-id attribute: what `sqsworker jobs get` takes
}

type sendFailure struct {
	Line  int    `json:"line"`
	Error string `json:"error"`
}

type sendReport struct {
	Queue  string        `json:"queue"`
	Sent   []sentMessage `json:"sent"`
	Failed []sendFailure `json:"failed,omitempty"`
	// Error is the SendMessageBatch call that failed and stopped the send; the lines it
	// held and every later line are in Failed.
	Error string `json:"error,omitempty"`
}

// maxDelay bounds --delay and delay_seconds: SQS's longest message retention (14 days),
// so a typo (seconds for milliseconds) is refused rather than parked for months. Delays
// past SQS's 900-second DelaySeconds hop (sqsworker.DelayMiddleware with producer.Producer.Hop).
const maxDelay = sqsinfo.MaxRetention

// delayRange is how the errors name the accepted delays.
const delayRange = "0 to 14 days (up to 15m through SQS's DelaySeconds, longer through hops)"

// parseDelay reads --delay: whole seconds ("90") or a Go duration in whole seconds
// ("90s", "15m", "40m", "36h"), 0 to 14 days.
func parseDelay(text string) (time.Duration, error) {
	if seconds, err := strconv.ParseInt(text, 10, 64); err == nil {
		if seconds < 0 || seconds > int64(maxDelay/time.Second) {
			return 0, fmt.Errorf("--delay %s: the delay is %s", text, delayRange)
		}
		return time.Duration(seconds) * time.Second, nil
	}
	delay, err := time.ParseDuration(text)
	if err != nil || delay < 0 || delay > maxDelay || delay%time.Second != 0 {
		return 0, fmt.Errorf("--delay %q: the delay is %s, in whole seconds, such as 90, 90s or 40m", text, delayRange)
	}
	return delay, nil
}

// sendAPI is the SQS client `send` sends through, once it knows the queue.
type sendAPI = producer.API

func newSendCommand(a *app) *cobra.Command {
	var body, file, group, dedup, jobType string
	var attributes []string
	var delay string
	cmd := &cobra.Command{
		Use:   "send QUEUE (--body TEXT | --file FILE)",
		Short: "Send one message, or a file of JSON lines, to a queue (for tests and manual retries)",
		Long: `Send one message (--body) or many (--file, one JSON object per line, '-' for stdin) to
QUEUE. Files are sent with SendMessageBatch, packed by count (10) and by the queue's
MaximumMessageSize in bytes.

A line of --file looks like:
  {"body": {"id": 1}, "type": "invoice", "attributes": {"count:Number": "3"}, "group": "g1", "dedup": "k1"}
"body" is sent as its text when it is a JSON string, as compact JSON otherwise. --job-type,
--attr, --group, --dedup and --delay apply to lines that do not set them.

--job-type TYPE (a line's "type") sets the job-type attribute a sqsworker.ServeMux routes
on.

--attr NAME=VALUE adds a String attribute; NAME:TYPE=VALUE sets the type (Number, String,
or a custom String.x / Number.x). FIFO queues need --group, and --dedup unless the queue
has content-based deduplication.

--delay (a line's "delay_seconds") is 0 to 14 days: 90, 90s, 15m, 40m, 36h. Up to 15m it is
SQS's DelaySeconds; longer delays are sent as hops of 15m with the due time in the due-at
attribute, and the worker must run sqsworker.DelayMiddleware (with a producer.Producer),
which sends the job on until it is due (a ServeMux without it defers the job through its visibility timeout).
FIFO queues take no per-message delay.

When a batch call fails, send stops and reports what it sent before (text and -o json,
whose "error" names the failed call) and every line not sent.

Exit: 0 when everything was sent, 3 when some lines were sent and some not, 1 when none
was sent or on error, 2 on bad usage.`,
		Example: `  sqsworker send orders --body '{"id":42}' --job-type invoice
  sqsworker send orders --body '{"month":"2026-11"}' --job-type report --delay 40m
  sqsworker send orders.fifo --body k2 --group g1 --dedup k2-retry
  sqsworker send orders --file messages.jsonl -o json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if (body == "") == (file == "") {
				return usageError(errors.New("give exactly one of --body and --file"))
			}
			delayed, err := parseDelay(delay)
			if err != nil {
				return usageError(err)
			}
			defaults := fileMessage{Type: jobType, Group: group, Dedup: dedup, DelaySeconds: int64(delayed / time.Second), Attributes: map[string]string{}}
			for _, attribute := range attributes {
				name, value, ok := strings.Cut(attribute, "=")
				if !ok || name == "" {
					return usageError(fmt.Errorf("--attr %q: want NAME=VALUE or NAME:TYPE=VALUE", attribute))
				}
				defaults.Attributes[name] = value
			}
			var messages []fileMessage
			if body != "" {
				text, _ := json.Marshal(body)
				message := defaults
				message.Body = text
				messages = append(messages, message)
			} else {
				var err error
				if messages, err = readMessages(cmd.InOrStdin(), file, defaults); err != nil {
					return err
				}
			}
			client, err := a.sqs(ctx)
			if err != nil {
				return err
			}
			url, err := resolveQueue(ctx, client, args[0])
			if err != nil {
				return err
			}
			queue, err := sqsinfo.LoadQueue(ctx, client, url)
			if err != nil {
				return err
			}
			if err := needGroups(queue, messages); err != nil {
				return usageError(err)
			}
			report, sendErr := a.sendMessages(ctx, client, queue, messages)
			return a.printSendReport(report, len(messages), sendErr)
		},
	}
	cmd.Flags().StringVar(&body, "body", "", "message body")
	cmd.Flags().StringVar(&file, "file", "", "file of JSON lines to send ('-': stdin)")
	cmd.Flags().StringArrayVar(&attributes, "attr", nil, "message attribute NAME=VALUE or NAME:TYPE=VALUE (repeatable)")
	cmd.Flags().StringVar(&group, "group", "", "FIFO message group id")
	cmd.Flags().StringVar(&dedup, "dedup", "", "FIFO message deduplication id")
	cmd.Flags().StringVar(&delay, "delay", "0", "delivery delay: 0 to 14 days, as 90, 90s, 15m or 40m; past 15m through hops (standard queues)")
	cmd.Flags().StringVar(&jobType, "job-type", "", "job type (the job-type attribute a ServeMux routes on)")
	return cmd
}

func readMessages(stdin io.Reader, file string, defaults fileMessage) ([]fileMessage, error) {
	input := stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("sqsworker: %w", err)
		}
		defer f.Close()
		input = f
	}
	var messages []fileMessage
	scanner := bufio.NewScanner(input)
	scanner.Buffer(make([]byte, 64*1024), 2*sqsinfo.MaxMessageBytes)
	for line := 1; scanner.Scan(); line++ {
		text := bytes.TrimSpace(scanner.Bytes())
		if len(text) == 0 {
			messages = append(messages, fileMessage{}) // keeps line numbers; skipped when sending
			continue
		}
		message := defaults
		message.Attributes = nil
		if err := json.Unmarshal(text, &message); err != nil {
			return nil, usageError(fmt.Errorf("%s line %d: %w", file, line, err))
		}
		if len(message.Body) == 0 {
			return nil, usageError(fmt.Errorf("%s line %d: no \"body\"", file, line))
		}
		if message.DelaySeconds < 0 || message.DelaySeconds > int64(maxDelay/time.Second) {
			return nil, usageError(fmt.Errorf("%s line %d: delay_seconds %d: the delay is %s", file, line, message.DelaySeconds, delayRange))
		}
		if message.Attributes == nil {
			message.Attributes = defaults.Attributes
		}
		messages = append(messages, message)
	}
	if err := scanner.Err(); err != nil {
		return nil, fmt.Errorf("sqsworker: reading %s: %w", file, err)
	}
	return messages, nil
}

// prepare converts a line into the producer's job and prepares it for queueURL (the
// producer's checks, before anything is sent).
func (m fileMessage) prepare(queueURL string) (producer.Prepared, error) {
	var text string
	if err := json.Unmarshal(m.Body, &text); err != nil {
		var compact bytes.Buffer
		if err := json.Compact(&compact, m.Body); err != nil {
			return producer.Prepared{}, err
		}
		text = compact.String()
	}
	job := producer.Job{
		Type: m.Type, Body: text, Delay: time.Duration(m.DelaySeconds) * time.Second,
		GroupID: m.Group, DeduplicationID: m.Dedup,
	}
	for key, value := range m.Attributes {
		name, dataType, ok := strings.Cut(key, ":")
		if !ok {
			dataType = "String"
		}
		if job.Attributes == nil {
			job.Attributes = map[string]types.MessageAttributeValue{}
		}
		job.Attributes[name] = types.MessageAttributeValue{DataType: aws.String(dataType), StringValue: aws.String(value)}
	}
	return producer.Prepare(queueURL, job)
}

// printSendReport prints what sendMessages did and returns the command's error: nil
// when every line was sent, partial() (exit 3) when some were, else an error (exit 1).
func (a *app) printSendReport(report *sendReport, total int, sendErr error) error {
	if sendErr != nil {
		report.Error = sendErr.Error()
	}
	if a.json() {
		if err := a.printJSON(report); err != nil {
			return err
		}
	} else {
		if len(report.Sent) == 1 && total == 1 {
			fmt.Fprintf(a.stdout, "Sent message %s (job %s) to %s.\n", report.Sent[0].ID, report.Sent[0].JobID, queueName(report.Queue))
		} else {
			fmt.Fprintf(a.stdout, "Sent %d of %d messages to %s.\n", len(report.Sent), total, queueName(report.Queue))
		}
		for _, failure := range report.Failed {
			fmt.Fprintf(a.stdout, "Line %d not sent: %s\n", failure.Line, failure.Error)
		}
	}
	switch {
	case len(report.Failed) == 0 && sendErr == nil:
		return nil
	case len(report.Sent) > 0:
		return partial()
	case sendErr != nil:
		return sendErr
	default:
		return fmt.Errorf("sqsworker: no message sent to %s", queueName(report.Queue))
	}
}

// sendMessages sends messages through the producer, ten lines per SendMessageBatch
// (split further by the 1 MiB batch limit), each checked against the queue's
// MaximumMessageSize, and reports each line's outcome. A failed SendMessageBatch call
// stops the send: the report then lists what was sent before, the failed batch's lines
// and every later line as not sent, and the error is returned with it.
func (a *app) sendMessages(ctx context.Context, client sendAPI, queue *sqsinfo.Queue, messages []fileMessage) (*sendReport, error) {
	report := &sendReport{Queue: queue.URL, Sent: []sentMessage{}}
	jobs, err := producer.New(client, producer.Config{})
	if err != nil {
		return report, err
	}
	bar := a.progress("sending")
	defer bar.done()
	var lines []int // line numbers of the lines with a body
	for i, message := range messages {
		if len(message.Body) > 0 {
			lines = append(lines, i+1)
		}
	}
	for start := 0; start < len(lines); start += sqsinfo.MaxBatchEntries {
		chunk := lines[start:min(start+sqsinfo.MaxBatchEntries, len(lines))]
		var batch []producer.Prepared
		var batchLines []int
		for _, line := range chunk {
			message, err := messages[line-1].prepare(queue.URL)
			if err != nil {
				report.Failed = append(report.Failed, sendFailure{Line: line, Error: err.Error()})
				continue
			}
			batch = append(batch, message)
			batchLines = append(batchLines, line)
		}
		results, _ := jobs.SendPreparedBatch(ctx, batch)
		var callErr error
		for i, result := range results {
			if result.Err == nil {
				report.Sent = append(report.Sent, sentMessage{Line: batchLines[i], ID: result.MessageID, JobID: batch[i].JobID()})
				continue
			}
			report.Failed = append(report.Failed, sendFailure{Line: batchLines[i], Error: result.Err.Error()})
			if producer.IsBatchCallError(result.Err) && callErr == nil {
				callErr = result.Err
			}
		}
		bar.set(int64(len(report.Sent)+len(report.Failed)), int64(len(lines)))
		if callErr != nil {
			for _, line := range lines[start+len(chunk):] {
				report.Failed = append(report.Failed, sendFailure{Line: line, Error: "not attempted: an earlier batch failed: " + callErr.Error()})
			}
			return report, callErr
		}
	}
	return report, nil
}

// needGroups refuses, before anything is sent, messages for a FIFO queue without a message
// group id (SQS requires one on every FIFO message), naming the flag that sets it.
func needGroups(queue *sqsinfo.Queue, messages []fileMessage) error {
	if !queue.FIFO {
		return nil
	}
	for i, m := range messages {
		if m.Group == "" {
			if len(messages) == 1 {
				return fmt.Errorf("%s is a FIFO queue: every message needs a message group id; give --group", queue.URL)
			}
			return fmt.Errorf("%s is a FIFO queue: every message needs a message group id; line %d has none (give --group, or \"group\" in the line); nothing was sent", queue.URL, i+1)
		}
	}
	return nil
}
