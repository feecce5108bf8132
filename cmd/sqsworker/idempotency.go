package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/spf13/cobra"

	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/opspage/humantime"
	"github.com/sqsworker/sqsworker/table"
)

// recordView is the output of `idempotency get` and `delete`.
type recordView struct {
	Table               string             `json:"table"`
	Key                 string             `json:"key"`
	Status              idempotency.Status `json:"status"`
	ExpiresAt           time.Time          `json:"expires_at"`
	Expired             bool               `json:"expired"`
	InProgressExpiresAt *time.Time         `json:"in_progress_expires_at,omitempty"`
	LeaseExpired        bool               `json:"lease_expired"`
	Lease               string             `json:"lease,omitempty"`
	PayloadHash         string             `json:"payload_hash,omitempty"`
	ResultBytes         int                `json:"result_bytes"`
	Result              []byte             `json:"result,omitempty"`
	Deleted             bool               `json:"deleted"`
}

func newIdempotencyCommand(a *app) *cobra.Command {
	var flags idempotencyFlags
	get := &cobra.Command{
		Use:   "get KEY --table TABLE",
		Short: "Show an idempotency record: status, expiry, lease, payload hash, stored result",
		Long: `Show the idempotency record of KEY in the DynamoDB table TABLE (a consistent read), as
the idempotency package stores it: status IN_PROGRESS or COMPLETED, expiration, in-progress
lease end, lease token, payload hash and stored result. KEY is the idempotency key as the
key function returns it; the stored key is derived from it as the middleware does
(idempotency.StoredKey): "idempotency#P#KEY" with --prefix P ("idempotency##KEY" without),
and "sha256:<hex>" in place of KEY for a key over 1024 bytes, one that would exceed
DynamoDB's 2048-byte key limit, one that is not UTF-8, or one that itself starts with
"sha256:". With --stored, KEY is the stored key itself, as the worker logs it
(idempotency_key); it must be in the idempotency namespace.`,
		Example: `  sqsworker idempotency get 7f3a --table webhook-idempotency --prefix webhook`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			view, _, err := flags.load(cmd.Context(), a, args[0])
			if err != nil {
				return err
			}
			return a.printRecord(view, time.Now())
		},
	}
	var force bool
	remove := &cobra.Command{
		Use:   "delete KEY --table TABLE [--force]",
		Short: "Delete an idempotency record to release a stuck key (COMPLETED needs --force)",
		Long: `Delete the idempotency record of KEY, for example one left IN_PROGRESS by a worker that
died, so that the next delivery of the message runs the handler.

A COMPLETED record is refused without --force: deleting it lets the next duplicate of the
message run the handler again (a second side effect). Deleting an IN_PROGRESS record whose
lease still runs warns that a handler may still be running.

The delete is conditioned on the record's lease token as read, so a record that was
claimed again in between is never deleted. An item under the key that is not an
idempotency record (the worker logs "not an idempotency record" and fails its messages)
is deleted only with --force, as it is.`,
		Example: `  sqsworker idempotency delete 7f3a --table webhook-idempotency --prefix webhook
  sqsworker idempotency delete 7f3a --table webhook-idempotency --force`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			view, store, err := flags.load(ctx, a, args[0])
			if errors.Is(err, idempotency.ErrMalformedRecord) && force {
				return flags.deleteMalformed(ctx, a, args[0], err)
			}
			if err != nil {
				return err
			}
			now := time.Now()
			if view.Status == idempotency.StatusCompleted && !force {
				return fmt.Errorf("sqsworker: refusing to delete the COMPLETED record %q: the next duplicate of its message would run "+
					"the handler again; pass --force to delete it anyway", view.Key)
			}
			if view.Status == idempotency.StatusInProgress && !view.LeaseExpired && view.InProgressExpiresAt != nil {
				a.warn("the in-progress lease of %q runs %s more: a handler may still be running, and a duplicate may now run beside it",
					view.Key, view.InProgressExpiresAt.Sub(now).Round(time.Second))
			}
			if err := store.Delete(ctx, view.Key, view.Lease); err != nil {
				if !errors.Is(err, idempotency.ErrLeaseLost) {
					return fmt.Errorf("sqsworker: %w", err)
				}
				// The lease condition failed. Either the record was claimed again (it is
				// there under another lease) or it is gone: deleted by someone else, or by
				// this very call when the SDK retried a DeleteItem whose response was lost.
				// Only the first is a failure; the record the user asked to delete is absent.
				if _, getErr := store.Get(ctx, view.Key); !errors.Is(getErr, idempotency.ErrNotFound) {
					return fmt.Errorf("sqsworker: record %q changed since it was read (claimed again); nothing deleted: %w", view.Key, err)
				}
			}
			view.Deleted = true
			if a.json() {
				return a.printJSON(view)
			}
			fmt.Fprintf(a.stdout, "Deleted the %s record %q from %s.\n", view.Status, view.Key, view.Table)
			return nil
		},
	}
	remove.Flags().BoolVar(&force, "force", false, "delete a COMPLETED record too, or an item that is not an idempotency record")
	for _, cmd := range []*cobra.Command{get, remove} {
		cmd.Flags().StringVar(&flags.table, "table", "", "DynamoDB table of the idempotency records (required)")
		cmd.Flags().StringVar(&flags.prefix, "prefix", "", `key prefix (Config.KeyPrefix): the stored key is "idempotency#PREFIX#KEY" (see idempotency.StoredKey)`)
		cmd.Flags().BoolVar(&flags.stored, "stored", false, `KEY is the stored key as logged ("idempotency#PREFIX#KEY"), not the key function's`)
		_ = cmd.MarkFlagRequired("table")
		envFlag(cmd, "table", tableVariable)
	}
	return newGroup("idempotency", "Inspect or release idempotency records (get, delete)", get, remove)
}

type idempotencyFlags struct {
	table  string
	prefix string
	stored bool
}

// storedKey is the stored key KEY names: StoredKey(--prefix, KEY), or KEY itself with
// --stored, which must then be in the idempotency namespace (this command touches no other
// subsystem's items).
func (f *idempotencyFlags) storedKey(key string) (string, error) {
	if !f.stored {
		stored, err := idempotency.StoredKey(f.prefix, key)
		if err != nil {
			return "", fmt.Errorf("sqsworker: %w", err)
		}
		return stored, nil
	}
	if f.prefix != "" {
		return "", usageError(errors.New("--stored takes the whole stored key; --prefix does not apply"))
	}
	if ns, ok := table.NamespaceOf(key); !ok || ns != table.Idempotency {
		return "", usageError(fmt.Errorf("--stored: %q is not an idempotency record's key (they start with %q)", key, string(table.Idempotency)+table.Separator))
	}
	return key, nil
}

// load reads the record of key with the idempotency package's DynamoDB store.
func (f *idempotencyFlags) load(ctx context.Context, a *app, key string) (*recordView, *idempotency.DynamoDBStore, error) {
	key, err := f.storedKey(key)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := a.awsConfig(ctx)
	if err != nil {
		return nil, nil, err
	}
	store := idempotency.NewDynamoDBStore(dynamodb.NewFromConfig(cfg), f.table)
	record, err := store.Get(ctx, key)
	if errors.Is(err, idempotency.ErrNotFound) {
		return nil, nil, fmt.Errorf("sqsworker: no idempotency record for key %q in table %s", key, f.table)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("sqsworker: %w", err) // an ErrMalformedRecord names the item's attributes
	}
	now := time.Now()
	view := &recordView{
		Table:        f.table,
		Key:          record.Key,
		Status:       record.Status,
		ExpiresAt:    record.ExpiresAt,
		Expired:      record.Expired(now),
		LeaseExpired: record.LeaseExpired(now),
		Lease:        record.Lease,
		PayloadHash:  record.PayloadHash,
		ResultBytes:  len(record.Result),
		Result:       record.Result,
	}
	if !record.InProgressExpiresAt.IsZero() {
		view.InProgressExpiresAt = &record.InProgressExpiresAt
	}
	return view, store, nil
}

func (a *app) printRecord(view *recordView, now time.Time) error {
	if a.json() {
		return a.printJSON(view)
	}
	out := a.stdout
	fmt.Fprintf(out, "Key:          %s (table %s)\n", view.Key, view.Table)
	fmt.Fprintf(out, "Status:       %s\n", view.Status)
	expired := ""
	if view.Expired {
		expired = ", expired: a new claim may replace it"
	}
	fmt.Fprintf(out, "Expires:      %s (%s%s)\n", humantime.Timestamp(view.ExpiresAt), humantime.Until(view.ExpiresAt, now), expired)
	if view.InProgressExpiresAt != nil {
		state := "running"
		if view.LeaseExpired {
			state = "ended: a new claim may take the key over"
		}
		fmt.Fprintf(out, "Lease ends:   %s (%s, %s)\n", humantime.Timestamp(*view.InProgressExpiresAt), humantime.Until(*view.InProgressExpiresAt, now), state)
	}
	fmt.Fprintf(out, "Lease:        %s\n", orDash(view.Lease, "-"))
	fmt.Fprintf(out, "Payload hash: %s\n", orDash(view.PayloadHash, "-"))
	fmt.Fprintf(out, "Result:       %d bytes\n", view.ResultBytes)
	return nil
}

// deleteMalformed deletes the item under key that is not an idempotency record (cause
// says why), as it is: there is no lease to condition the delete on. The key is in the
// idempotency namespace (storedKey), so no other subsystem's item is reachable.
func (f *idempotencyFlags) deleteMalformed(ctx context.Context, a *app, key string, cause error) error {
	key, err := f.storedKey(key)
	if err != nil {
		return err
	}
	cfg, err := a.awsConfig(ctx)
	if err != nil {
		return err
	}
	a.warn("%v; deleting it as it is (--force)", cause)
	if _, err := dynamodb.NewFromConfig(cfg).DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(f.table), Key: table.KeyAttribute(key)}); err != nil {
		return fmt.Errorf("sqsworker: deleting %q from %s: %w", key, f.table, err)
	}
	if a.json() {
		return a.printJSON(recordView{Table: f.table, Key: key, Deleted: true})
	}
	fmt.Fprintf(a.stdout, "Deleted the item %q (not an idempotency record) from %s.\n", key, f.table)
	return nil
}
