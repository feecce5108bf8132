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
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/spf13/cobra"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/redrive"
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
	// DelaySeconds delays delivery (standard queues only, 0 to 900).
	DelaySeconds int32 `json:"delay_seconds"`
}

// sentMessage and sendFailure are the JSON output of `send`.
type sentMessage struct {
	Line int    `json:"line"`
	ID   string `json:"id"`
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

// maxDelaySeconds is SQS's limit on DelaySeconds (15 minutes; SendMessage API reference).
const maxDelaySeconds = 900

// parseDelay reads --delay: whole seconds ("90") or a Go duration in whole seconds
// ("90s", "15m"), 0 to 900.
func parseDelay(text string) (int32, error) {
	if seconds, err := strconv.ParseInt(text, 10, 64); err == nil {
		if seconds < 0 || seconds > maxDelaySeconds {
			return 0, fmt.Errorf("--delay %s: SQS accepts 0 to 900 seconds (15m)", text)
		}
		return int32(seconds), nil
	}
	delay, err := time.ParseDuration(text)
	if err != nil || delay < 0 || delay > maxDelaySeconds*time.Second || delay%time.Second != 0 {
		return 0, fmt.Errorf("--delay %q: SQS accepts 0 to 900 seconds (15m), in whole seconds, such as 90 or 90s", text)
	}
	return int32(delay / time.Second), nil
}

// sendAPI is the SQS call `send` makes once it knows the queue.
type sendAPI interface {
	SendMessageBatch(ctx context.Context, input *sqs.SendMessageBatchInput, options ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
}

func newSendCommand(a *app) *cobra.Command {
	var body, file, group, dedup string
	var attributes []string
	var delay string
	cmd := &cobra.Command{
		Use:   "send QUEUE (--body TEXT | --file FILE)",
		Short: "Send one message, or a file of JSON lines, to a queue (for tests and manual retries)",
		Long: `Send one message (--body) or many (--file, one JSON object per line, '-' for stdin) to
QUEUE. Files are sent with SendMessageBatch, packed by count (10) and by the queue's
MaximumMessageSize in bytes.

A line of --file looks like:
  {"body": {"id": 1}, "attributes": {"type": "invoice", "count:Number": "3"}, "group": "g1", "dedup": "k1"}
"body" is sent as its text when it is a JSON string, as compact JSON otherwise. --attr,
--group and --dedup apply to lines that do not set them.

--attr NAME=VALUE adds a String attribute; NAME:TYPE=VALUE sets the type (Number, String,
or a custom String.x / Number.x). FIFO queues need --group, and --dedup unless the queue
has content-based deduplication.

--delay (and a line's "delay_seconds") is 0 to 900 seconds, SQS's limit: 90, 90s or 15m.

When a batch call fails, send stops and reports what it sent before (text and -o json,
whose "error" names the failed call) and every line not sent.

Exit: 0 when everything was sent, 3 when some lines were sent and some not, 1 when none
was sent or on error, 2 on bad usage.`,
		Example: `  sqsworker send orders --body '{"id":42}' --attr type=invoice
  sqsworker send orders.fifo --body k2 --group g1 --dedup k2-retry
  sqsworker send orders --file messages.jsonl -o json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if (body == "") == (file == "") {
				return usageError(errors.New("give exactly one of --body and --file"))
			}
			delaySeconds, err := parseDelay(delay)
			if err != nil {
				return usageError(err)
			}
			defaults := fileMessage{Group: group, Dedup: dedup, DelaySeconds: delaySeconds, Attributes: map[string]string{}}
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
			url, err := redrive.QueueURL(ctx, client, args[0])
			if err != nil {
				return err
			}
			queue, err := sqsworker.LoadQueue(ctx, client, url)
			if err != nil {
				return err
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
	cmd.Flags().StringVar(&delay, "delay", "0", "delivery delay: 0 to 900 seconds, as 90, 90s or 15m (standard queues)")
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
	scanner.Buffer(make([]byte, 64*1024), 2*redrive.MaxMessageSize)
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
		if message.DelaySeconds < 0 || message.DelaySeconds > maxDelaySeconds {
			return nil, usageError(fmt.Errorf("%s line %d: delay_seconds %d: SQS accepts 0 to 900 seconds", file, line, message.DelaySeconds))
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

// entry converts a message into a batch entry and its size as SQS counts it.
func (m fileMessage) entry(id string) (types.SendMessageBatchRequestEntry, int, error) {
	var text string
	if err := json.Unmarshal(m.Body, &text); err != nil {
		var compact bytes.Buffer
		if err := json.Compact(&compact, m.Body); err != nil {
			return types.SendMessageBatchRequestEntry{}, 0, err
		}
		text = compact.String()
	}
	entry := types.SendMessageBatchRequestEntry{Id: aws.String(id), MessageBody: aws.String(text), DelaySeconds: m.DelaySeconds}
	size := len(text)
	for key, value := range m.Attributes {
		name, dataType, ok := strings.Cut(key, ":")
		if !ok {
			dataType = "String"
		}
		if entry.MessageAttributes == nil {
			entry.MessageAttributes = map[string]types.MessageAttributeValue{}
		}
		entry.MessageAttributes[name] = types.MessageAttributeValue{DataType: aws.String(dataType), StringValue: aws.String(value)}
		size += len(name) + len(dataType) + len(value)
	}
	if m.Group != "" {
		entry.MessageGroupId = aws.String(m.Group)
	}
	if m.Dedup != "" {
		entry.MessageDeduplicationId = aws.String(m.Dedup)
	}
	return entry, size, nil
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
			fmt.Fprintf(a.stdout, "Sent message %s to %s.\n", report.Sent[0].ID, queueName(report.Queue))
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

// sendMessages sends messages in batches packed by count and by the queue's
// MaximumMessageSize, and reports each line's outcome. A failed SendMessageBatch call
// stops the send: the report then lists what was sent before, the failed batch's lines
// and every later line as not sent, and the error is returned with it.
func (a *app) sendMessages(ctx context.Context, client sendAPI, queue *sqsworker.Queue, messages []fileMessage) (*sendReport, error) {
	report := &sendReport{Queue: queue.URL, Sent: []sentMessage{}}
	limit := queue.MaximumMessageSize
	if limit <= 0 {
		limit = redrive.DefaultMaximumMessageSize
	}
	bar := a.progress("sending")
	defer bar.done()
	var batch []types.SendMessageBatchRequestEntry
	var batchLines []int
	lines := map[string]int{}
	bytes := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		output, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queue.URL), Entries: batch})
		if err != nil {
			err = fmt.Errorf("sqsworker: sending to %s: %w", queue.URL, err)
			for _, line := range batchLines {
				report.Failed = append(report.Failed, sendFailure{Line: line, Error: err.Error()})
			}
			return err
		}
		for _, ok := range output.Successful {
			report.Sent = append(report.Sent, sentMessage{Line: lines[aws.ToString(ok.Id)], ID: aws.ToString(ok.MessageId)})
		}
		for _, failed := range output.Failed {
			report.Failed = append(report.Failed, sendFailure{Line: lines[aws.ToString(failed.Id)], Error: aws.ToString(failed.Code) + ": " + aws.ToString(failed.Message)})
		}
		bar.set(int64(len(report.Sent)+len(report.Failed)), int64(len(messages)))
		batch, batchLines, bytes, lines = nil, nil, 0, map[string]int{}
		return nil
	}
	// notAttempted lists the lines after index i that have a body as not sent.
	notAttempted := func(i int, cause error) {
		for j := i; j < len(messages); j++ {
			if len(messages[j].Body) > 0 {
				report.Failed = append(report.Failed, sendFailure{Line: j + 1, Error: "not attempted: an earlier batch failed: " + cause.Error()})
			}
		}
	}
	for i, message := range messages {
		if len(message.Body) == 0 {
			continue
		}
		line := i + 1
		id := "l" + strconv.Itoa(line)
		entry, size, err := message.entry(id)
		if err != nil {
			report.Failed = append(report.Failed, sendFailure{Line: line, Error: err.Error()})
			continue
		}
		if size > limit {
			report.Failed = append(report.Failed, sendFailure{Line: line, Error: fmt.Sprintf("%d bytes, more than the queue's MaximumMessageSize %d", size, limit)})
			continue
		}
		if len(batch) == redrive.MaxBatchEntries || bytes+size > limit {
			if err := flush(); err != nil {
				notAttempted(i, err)
				return report, err
			}
		}
		batch = append(batch, entry)
		batchLines = append(batchLines, line)
		lines[id] = line
		bytes += size
	}
	if err := flush(); err != nil {
		return report, err
	}
	return report, nil
}
