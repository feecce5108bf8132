package main

import (
	"bufio"
	"bytes"
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
}

func newSendCommand(a *app) *cobra.Command {
	var body, file, group, dedup string
	var attributes []string
	var delay time.Duration
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

Exit: 0 when everything was sent, 3 when some lines failed, 1 on error.`,
		Example: `  sqsworker send orders --body '{"id":42}' --attr type=invoice
  sqsworker send orders.fifo --body k2 --group g1 --dedup k2-retry
  sqsworker send orders --file messages.jsonl -o json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if (body == "") == (file == "") {
				return usageError(errors.New("give exactly one of --body and --file"))
			}
			defaults := fileMessage{Group: group, Dedup: dedup, DelaySeconds: int32(delay / time.Second), Attributes: map[string]string{}}
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
			report, err := a.sendMessages(cmd, client, queue, messages)
			if err != nil {
				return err
			}
			if a.json() {
				if err := a.printJSON(report); err != nil {
					return err
				}
			} else {
				if len(report.Sent) == 1 && len(messages) == 1 {
					fmt.Fprintf(a.stdout, "Sent message %s to %s.\n", report.Sent[0].ID, queueName(url))
				} else {
					fmt.Fprintf(a.stdout, "Sent %d of %d messages to %s.\n", len(report.Sent), len(messages), queueName(url))
				}
				for _, failure := range report.Failed {
					fmt.Fprintf(a.stdout, "Line %d not sent: %s\n", failure.Line, failure.Error)
				}
			}
			if len(report.Failed) > 0 {
				if len(report.Sent) == 0 {
					return fmt.Errorf("sqsworker: no message sent to %s", queueName(url))
				}
				return partial()
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&body, "body", "", "message body")
	cmd.Flags().StringVar(&file, "file", "", "file of JSON lines to send ('-': stdin)")
	cmd.Flags().StringArrayVar(&attributes, "attr", nil, "message attribute NAME=VALUE or NAME:TYPE=VALUE (repeatable)")
	cmd.Flags().StringVar(&group, "group", "", "FIFO message group id")
	cmd.Flags().StringVar(&dedup, "dedup", "", "FIFO message deduplication id")
	cmd.Flags().DurationVar(&delay, "delay", 0, "delivery delay, whole seconds up to 15m (standard queues)")
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

// sendMessages sends messages in batches packed by count and by the queue's
// MaximumMessageSize, and reports each line's outcome.
func (a *app) sendMessages(cmd *cobra.Command, client *sqs.Client, queue *sqsworker.Queue, messages []fileMessage) (*sendReport, error) {
	report := &sendReport{Queue: queue.URL, Sent: []sentMessage{}}
	limit := queue.MaximumMessageSize
	if limit <= 0 {
		limit = redrive.DefaultMaximumMessageSize
	}
	bar := a.progress("sending")
	defer bar.done()
	var batch []types.SendMessageBatchRequestEntry
	lines := map[string]int{}
	bytes := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		output, err := client.SendMessageBatch(cmd.Context(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(queue.URL), Entries: batch})
		if err != nil {
			return fmt.Errorf("sqsworker: sending to %s: %w", queue.URL, err)
		}
		for _, ok := range output.Successful {
			report.Sent = append(report.Sent, sentMessage{Line: lines[aws.ToString(ok.Id)], ID: aws.ToString(ok.MessageId)})
		}
		for _, failed := range output.Failed {
			report.Failed = append(report.Failed, sendFailure{Line: lines[aws.ToString(failed.Id)], Error: aws.ToString(failed.Code) + ": " + aws.ToString(failed.Message)})
		}
		bar.set(int64(len(report.Sent)+len(report.Failed)), int64(len(messages)))
		batch, bytes, lines = nil, 0, map[string]int{}
		return nil
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
				return nil, err
			}
		}
		batch = append(batch, entry)
		lines[id] = line
		bytes += size
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return report, nil
}
