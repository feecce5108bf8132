package claimcheck

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sqsworker/sqsworker"
)

// Cleaner deletes the S3 payload of a message once SQS has confirmed the delete of the
// message itself after it was handled. It never deletes the payload of a message that
// was dead-lettered (the dead-letter queue's copy still points to it), of one whose
// delete failed (it will be delivered again and must still resolve), or of one that is
// still in flight. See the package documentation for how a host tells it.
type Cleaner struct {
	client S3API
	logger *slog.Logger
}

// NewCleaner returns a cleaner deleting objects with client (s3:DeleteObject). logger
// receives failed deletes; if nil, they are discarded (the error is still returned).
// It panics when client is nil.
func NewCleaner(client S3API, logger *slog.Logger) *Cleaner {
	if client == nil {
		panic("claimcheck: NewCleaner: nil S3 client")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Cleaner{client: client, logger: logger}
}

// Deleted deletes the payload object of message, which SQS has just confirmed deleted
// after its handler succeeded. A message without a pointer (or with a malformed one) is
// left alone. message must be as received, with the pointer body: [Middleware] restores
// it after the handler returns.
//
// S3's DeleteObject succeeds for a key that is already gone, so calling Deleted twice is
// harmless. A failed delete is logged and returned; the object is then an orphan for
// the bucket's lifecycle rule, and the message is not affected.
func (c *Cleaner) Deleted(ctx context.Context, message *sqsworker.Message) error {
	pointer, _, ok, err := PointerOf(message)
	if !ok || err != nil {
		return nil
	}
	_, err = c.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(pointer.Bucket), Key: aws.String(pointer.Key)})
	if err != nil {
		err = fmt.Errorf("claimcheck: deleting payload %s of deleted message %s: %w", pointer, message.ID, err)
		c.logger.LogAttrs(ctx, slog.LevelWarn, "claimcheck: payload not deleted; the bucket's lifecycle rule must expire it",
			slog.String("message_id", message.ID), slog.String("payload", pointer.String()), slog.Any("error", err))
		return err
	}
	c.logger.LogAttrs(ctx, slog.LevelDebug, "claimcheck: payload deleted",
		slog.String("message_id", message.ID), slog.String("payload", pointer.String()))
	return nil
}
