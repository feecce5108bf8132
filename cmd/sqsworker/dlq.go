package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/opspage/humantime"
	"github.com/sqsworker/sqsworker/redrive"
)

func newDLQCommand(a *app) *cobra.Command {
	return newGroup("dlq", "Look at dead-letter queue messages (peek, list)",
		newDLQPeekCommand(a, "peek", 10),
		newDLQPeekCommand(a, "list", 100),
	)
}

// newDLQPeekCommand builds `dlq peek` (each message in full) and `dlq list` (one line
// per message); both receive and release, as redrive.Peek does.
func newDLQPeekCommand(a *app, name string, defaultMax int) *cobra.Command {
	var options redrive.PeekOptions
	var decryption decryptFlags
	short := "Show dead letters in full: failure reason, error, source queue, receives, sent and expiry, attributes, body"
	if name == "list" {
		short = "List dead letters, one line each: id, failure reason, source queue, receives, sent, expiry, error"
	}
	cmd := &cobra.Command{
		Use:   name + " QUEUE",
		Short: short,
		Long: short + `.

QUEUE is the dead-letter queue itself (name, URL or ARN). SQS has no read-only peek: the
messages are received (hidden for --visibility so each is seen once), then all released
with visibility 0, and each receive adds one to the message's ApproximateReceiveCount. The
output says how many receives were used.

A queue that has a redrive policy (a source queue, or a chained DLQ) is refused unless you
pass --force: every receive counts toward its maxReceiveCount, so looking could push
messages into its dead-letter queue.

Expiry, following the AWS rule ("Setting-up dead-letter queue retention", SQS Developer
Guide): a standard queue keeps a message's original enqueue time when the redrive policy
moves it to the DLQ, so it expires at sent time + the DLQ's retention. A FIFO DLQ resets
the enqueue time on that move, a time SQS does not report, so only the earliest possible
expiry is known ("after"). Messages a host dead-lettered itself (with a failure-reason)
are new messages: exact. peek names the basis of each expiry; -o json has it as
expiry_basis, and retention_seconds in seconds.

An encrypted payload (package encrypt) is shown as "encrypted (key ARN)", never in clear,
unless you pass --decrypt with the key ARNs you mean to use (--kms-key, or
SQSWORKER_KMS_KEYS): each is then decrypted with KMS Decrypt under your credentials
(kms:Decrypt on the key), and -o json has the plaintext body with "decrypted": true. A
payload under a key you did not name, or that KMS refuses, stays encrypted, with the
reason on stderr (exit 1).`,
		Example: fmt.Sprintf(`  sqsworker dlq %s orders-dlq
  sqsworker dlq %s orders-dlq --max 500 -o json
  sqsworker dlq %s orders-dlq --decrypt --kms-key arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab`, name, name, name),
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := options.Validate(); err != nil {
				return usageError(err)
			}
			decrypter, err := decryption.decrypter(ctx, a)
			if err != nil {
				return err
			}
			client, err := a.sqs(ctx)
			if err != nil {
				return err
			}
			url, err := resolveQueue(ctx, client, args[0])
			if err != nil {
				return err
			}
			result, err := redrive.Peek(ctx, client, url, options)
			if errors.Is(err, redrive.ErrPeekNeedsForce) {
				return err
			}
			if result == nil {
				return err
			}
			if decrypter != nil {
				err = errors.Join(err, a.decryptLetters(ctx, decrypter, result.Messages))
			}
			if result.ReceivesUsed > 0 {
				a.warn("looking used %s on %s (SQS has no read-only peek): each added one to that message's ApproximateReceiveCount, "+
					"which a redrive policy counts", plural(result.ReceivesUsed, "receive"), queueName(url))
			}
			if a.json() {
				if printErr := a.printJSON(result); printErr != nil {
					return printErr
				}
				return err
			}
			now := time.Now()
			if name == "list" {
				a.printDeadLetterList(result, now)
			} else {
				a.printDeadLetters(result, now)
			}
			return err
		},
	}
	cmd.Flags().IntVar(&options.MaxMessages, "max", defaultMax, "look at this many messages at most")
	cmd.Flags().BoolVar(&options.Force, "force", false, "peek a queue that has a redrive policy (receives count toward its maxReceiveCount)")
	decryption.add(cmd)
	cmd.Flags().DurationVar(&options.VisibilityTimeout, "visibility", 30*time.Second, "how long each message stays hidden during the peek (released at the end): 1s to 15m")
	return cmd
}

func (a *app) peekSummary(result *redrive.PeekResult) {
	kind := "standard"
	if result.FIFO {
		kind = "FIFO"
	}
	fmt.Fprintf(a.stdout, "Queue %s (%s, retention %s): %s seen, %s used, %d released.\n",
		queueName(result.QueueURL), kind, humantime.Short(result.Retention), plural(len(result.Messages), "message"), plural(result.ReceivesUsed, "receive"), result.Released)
	if policy := result.RedrivePolicy; policy != nil {
		fmt.Fprintf(a.stdout, "This queue has a redrive policy (maxReceiveCount %d -> %s): each message seen used one of its receives.\n",
			policy.MaxReceiveCount, queueName(policy.DeadLetterTargetARN))
	}
}

// expiryText is the expiry of a peeked message and the time it counts from
// (redrive.DeadLetter.ExpiryBasis).
func expiryText(letter redrive.DeadLetter, now time.Time) string {
	basis := ""
	if letter.ExpiryBasis != "" {
		basis = "; basis: " + letter.ExpiryBasis
	}
	if letter.ExpiryExact {
		return fmt.Sprintf("%s (%s%s)", humantime.Timestamp(letter.ExpiresAt), humantime.Until(letter.ExpiresAt, now), basis)
	}
	return fmt.Sprintf("after %s (%s%s)", humantime.Timestamp(letter.ExpiresAt), humantime.Until(letter.ExpiresAt, now), basis)
}

// noFailureReason is what a message without a failure-reason attribute is: in a
// dead-letter queue, one the redrive policy moved; in a queue that has a redrive policy
// itself (a source queue peeked with --force), one not dead-lettered at all.
func noFailureReason(result *redrive.PeekResult) string {
	if result.RedrivePolicy != nil {
		return "(none: not dead-lettered; this is not a dead-letter queue)"
	}
	return "(none: moved by the redrive policy after maxReceiveCount receives)"
}

func (a *app) printDeadLetters(result *redrive.PeekResult, now time.Time) {
	a.peekSummary(result)
	out := a.stdout
	for _, letter := range result.Messages {
		fmt.Fprintf(out, "\nMessage %s\n", letter.ID)
		fmt.Fprintf(out, "  failure reason:  %s\n", orDash(letter.FailureReason, noFailureReason(result)))
		fmt.Fprintf(out, "  error:           %s\n", orDash(letter.FailureError, "-"))
		fmt.Fprintf(out, "  source queue:    %s\n", orDash(letter.SourceQueue, "-"))
		failed := ""
		if letter.FailedReceiveCount > 0 {
			failed = fmt.Sprintf(" (failed at receive %d of its source queue)", letter.FailedReceiveCount)
		}
		fmt.Fprintf(out, "  receives:        %d%s\n", letter.ReceiveCount, failed)
		fmt.Fprintf(out, "  sent:            %s (%s)\n", humantime.Timestamp(letter.SentAt), humantime.Ago(letter.SentAt, now))
		fmt.Fprintf(out, "  expires:         %s\n", expiryText(letter, now))
		if letter.GroupID != "" {
			fmt.Fprintf(out, "  group:           %s (deduplication id %s)\n", letter.GroupID, letter.DeduplicationID)
		}
		if other := otherAttributes(letter); other != "" {
			fmt.Fprintf(out, "  attributes:      %s\n", other)
		}
		fmt.Fprintf(out, "  size:            %d bytes\n", letter.Size)
		body := letter.Body
		switch {
		case letter.Encrypted && !letter.Decrypted && len(letter.EncryptedFields) > 0:
			fmt.Fprintf(out, "  encryption:      fields %s encrypted (key %s; --decrypt --kms-key ARN shows them)\n", strings.Join(letter.EncryptedFields, ", "), letter.EncryptionKey)
		case letter.Encrypted && !letter.Decrypted:
			body = encryptedText(letter.EncryptionKey)
		case letter.Decrypted:
			fmt.Fprintf(out, "  encryption:      decrypted (key %s)\n", letter.EncryptionKey)
		}
		if len(body) > 2000 {
			body = body[:2000] + fmt.Sprintf("… (%d bytes; -o json for all)", len(letter.Body))
		}
		fmt.Fprintf(out, "  body:            %s\n", body)
	}
}

func (a *app) printDeadLetterList(result *redrive.PeekResult, now time.Time) {
	a.peekSummary(result)
	if len(result.Messages) == 0 {
		return
	}
	table := a.table()
	fmt.Fprintln(table, "ID\tREASON\tSOURCE\tRECEIVES\tSENT\tEXPIRES\tERROR")
	for _, letter := range result.Messages {
		expires := humantime.Until(letter.ExpiresAt, now)
		if !letter.ExpiryExact {
			expires = "after " + expires
		}
		fmt.Fprintf(table, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", letter.ID, orDash(letter.FailureReason, "-"), orDash(queueName(letter.SourceQueue), "-"),
			letter.ReceiveCount, humantime.Ago(letter.SentAt, now), expires, orDash(oneLine(letter.FailureError, 60), "-"))
	}
	_ = table.Flush()
}

// otherAttributes lists the message attributes other than the failure ones.
func otherAttributes(letter redrive.DeadLetter) string {
	var parts []string
	for name, value := range letter.MessageAttributes {
		if strings.HasPrefix(name, "failure-") || name == sqsworker.AttributeEncryption {
			continue
		}
		text := value.StringValue
		if value.BinaryValue != nil {
			text = fmt.Sprintf("(%d bytes)", len(value.BinaryValue))
		}
		parts = append(parts, fmt.Sprintf("%s=%s", name, text))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// plural returns "1 message", "2 messages".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	if strings.HasSuffix(noun, "ch") {
		return fmt.Sprintf("%d %ses", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func orDash(text, fallback string) string {
	if text == "" {
		return fallback
	}
	return text
}
