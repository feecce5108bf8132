package encrypt

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/smithy-go"
	"golang.org/x/sync/singleflight"

	"github.com/sqsworker/sqsworker"
)

// DecryptAPI is the part of the KMS client a [Decrypter] uses; *kms.Client satisfies it.
type DecryptAPI interface {
	Decrypt(ctx context.Context, input *kms.DecryptInput, optFns ...func(*kms.Options)) (*kms.DecryptOutput, error)
}

var _ DecryptAPI = (*kms.Client)(nil)

// Failure reasons of [Decrypter.Middleware]: each fails the message permanently (the
// host sends it to the dead-letter queue with the reason in its failure-reason
// attribute).
const (
	// ReasonKeyNotAllowed: the envelope names a key not in DecrypterConfig.AllowedKeys.
	// KMS is not called.
	ReasonKeyNotAllowed = "EncryptionKeyNotAllowed"
	// ReasonKeyRefused: KMS refused the data key's decryption with an answer a retry
	// does not change: access denied, a disabled key, a key pending deletion or
	// otherwise in an invalid state, no such key, or a data key not encrypted under
	// the named key (IncorrectKeyException).
	ReasonKeyRefused = "EncryptionKeyRefused"
	// ReasonTampered: the body, or the data key's encryption context (its job type),
	// does not authenticate: changed since it was sent, or moved from another job.
	ReasonTampered = "EncryptedPayloadTampered"
	// ReasonMalformed: the envelope header or the body is not of this format
	// ([*MalformedError]).
	ReasonMalformed = "MalformedEncryptedPayload"
	// ReasonNotEncrypted: DecrypterConfig.Required is set and the message has no
	// [sqsworker.AttributeEncryption] attribute.
	ReasonNotEncrypted = "PayloadNotEncrypted"
)

// Defaults of [DecrypterConfig].
const (
	// DefaultCacheSize is how many plaintext data keys a Decrypter keeps.
	DefaultCacheSize = 1000
	// DefaultCacheTTL is how long a Decrypter keeps a data key after KMS decrypted it.
	DefaultCacheTTL = 5 * time.Minute
)

// DecrypterConfig configures a [Decrypter].
type DecrypterConfig struct {
	// AllowedKeys are the ARNs of the KMS keys (arn:aws:kms:REGION:ACCOUNT:key/ID, not
	// aliases) whose envelopes this worker decrypts. A message naming another key fails
	// with ReasonKeyNotAllowed without a KMS call. During a key change, list the old
	// key and the new one until the old one's jobs are gone (the queue's retention
	// period). Required.
	AllowedKeys []string
	// CacheSize bounds the plaintext data keys kept (least recently used go first); if
	// zero, DefaultCacheSize; negative keeps none (one KMS Decrypt per message).
	CacheSize int
	// CacheTTL is how long a data key is kept after its Decrypt; if zero,
	// DefaultCacheTTL (5 min). A key disabled in KMS is still used for cached data keys
	// this long.
	CacheTTL time.Duration
	// Required fails a message without the encryption attribute with
	// ReasonNotEncrypted; otherwise such a message passes through unchanged (while
	// producers are being switched to encryption).
	Required bool
	// Now is the clock of CacheTTL; if nil, time.Now.
	Now func() time.Time
}

// Decrypter decrypts job bodies on the worker side ([Decrypter.Middleware]) and for
// tools ([Decrypter.Decrypt]). It is safe for concurrent use.
//
// Cost: one KMS Decrypt request per distinct encrypted data key per CacheTTL; with the
// Encrypter's defaults (one data key per job type per 5 minutes or 10,000 jobs), a
// worker makes about one Decrypt per job type and producer per 5 minutes, and retries
// of a message reuse the cached key.
type Decrypter struct {
	client  DecryptAPI
	config  DecrypterConfig
	keys    *cache[[]byte]
	flight  singleflight.Group // one Decrypt per data key at a time
	kmsCall atomic.Int64
	lookups atomic.Int64
}

// NewDecrypter returns a Decrypter calling client. Errors: nil client, no AllowedKeys,
// an allowed key that is not a KMS key ARN, a negative CacheTTL.
func NewDecrypter(client DecryptAPI, config DecrypterConfig) (*Decrypter, error) {
	var errs []error
	if client == nil {
		errs = append(errs, errors.New("encrypt: nil KMS client"))
	}
	if len(config.AllowedKeys) == 0 {
		errs = append(errs, errors.New("encrypt: DecrypterConfig.AllowedKeys is empty (no key would be used)"))
	}
	for _, key := range config.AllowedKeys {
		if !isKeyARN(key) {
			errs = append(errs, fmt.Errorf("encrypt: allowed key %q is not a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/ID)", key))
		}
	}
	if config.CacheTTL < 0 {
		errs = append(errs, fmt.Errorf("encrypt: DecrypterConfig.CacheTTL %s is negative", config.CacheTTL))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if config.CacheSize == 0 {
		config.CacheSize = DefaultCacheSize
	}
	if config.CacheTTL == 0 {
		config.CacheTTL = DefaultCacheTTL
	}
	if config.Now == nil {
		config.Now = time.Now
	}
	config.AllowedKeys = slices.Clone(config.AllowedKeys)
	return &Decrypter{client: client, config: config, keys: newCache[[]byte](config.CacheSize, config.CacheTTL, config.Now)}, nil
}

// isKeyARN reports whether s looks like a KMS key ARN (any partition).
func isKeyARN(s string) bool {
	parts := strings.SplitN(s, ":", 6)
	return len(parts) == 6 && parts[0] == "arn" && parts[2] == "kms" && strings.HasPrefix(parts[5], "key/") && len(parts[5]) > len("key/")
}

// Stats counts a Decrypter's data keys: KMSCalls Decrypt requests made, CacheHits data
// keys served without a Decrypt of their own (from the cache, or shared with a
// concurrent delivery's Decrypt of the same data key).
type Stats struct {
	KMSCalls  int64
	CacheHits int64
}

// Stats returns the counts so far.
func (d *Decrypter) Stats() Stats {
	calls := d.kmsCall.Load()
	return Stats{KMSCalls: calls, CacheHits: d.lookups.Load() - calls}
}

// Middleware decrypts the body of a message that has the [sqsworker.AttributeEncryption]
// attribute and hands the next handler a copy with the plaintext body (the host's
// message, which a dead-letter send copies, keeps the ciphertext). A message without
// the attribute passes through, or fails with ReasonNotEncrypted when Required.
//
// Failures: the reasons above, permanent; a KMS error a retry may fix (throttling,
// KeyUnavailableException, DependencyTimeoutException, KMSInternalException, network)
// is an ordinary error, retried with backoff and bounded by the redrive policy.
//
// Order: put it inside the claim-check resolver (which fetches the ciphertext from S3)
// and inside every middleware that re-sends the message as it received it
// (sqsworker.DelayMiddleware, fleetlimit), so those re-send the ciphertext; and outside
// the handler or mux.
func (d *Decrypter) Middleware() sqsworker.Middleware {
	return func(next sqsworker.Handler) sqsworker.Handler {
		return sqsworker.HandlerFunc(func(ctx context.Context, message *sqsworker.Message) error {
			if _, ok := message.MessageAttributes[sqsworker.AttributeEncryption]; !ok {
				if d.config.Required {
					return sqsworker.Permanent(ReasonNotEncrypted, fmt.Errorf("encrypt: message %s has no %s attribute and this worker takes encrypted payloads only", message.ID, sqsworker.AttributeEncryption))
				}
				return next.Handle(ctx, message)
			}
			plaintext, err := d.Decrypt(ctx, message.Body, message.MessageAttributes)
			if err != nil {
				return err
			}
			decrypted := *message
			decrypted.Body = plaintext
			return next.Handle(ctx, &decrypted)
		})
	}
}

// Decrypt returns the plaintext of an encrypted body with its message attributes (the
// envelope header, job type and job id). Its errors are permanent
// (sqsworker.Permanent, with the reasons above) except KMS errors a retry may fix.
func (d *Decrypter) Decrypt(ctx context.Context, body string, attributes map[string]sqsworker.MessageAttribute) (string, error) {
	value, ok := attributes[sqsworker.AttributeEncryption]
	if !ok {
		return "", sqsworker.Permanent(ReasonNotEncrypted, fmt.Errorf("encrypt: no %s attribute", sqsworker.AttributeEncryption))
	}
	header, err := ParseHeader(value.StringValue)
	if err != nil {
		return "", sqsworker.Permanent(ReasonMalformed, err)
	}
	if !slices.Contains(d.config.AllowedKeys, header.KeyARN) {
		return "", sqsworker.Permanent(ReasonKeyNotAllowed, fmt.Errorf("encrypt: the payload names KMS key %q, which this worker does not allow (DecrypterConfig.AllowedKeys)", header.KeyARN))
	}
	binding := Binding{JobType: attributes[sqsworker.AttributeJobType].StringValue, JobID: attributes[sqsworker.AttributeJobID].StringValue}
	dataKey, cacheKey, err := d.dataKey(ctx, header, binding.JobType)
	if err != nil {
		return "", err
	}
	var plaintext []byte
	if len(header.Fields) > 0 {
		plaintext, err = openFields(dataKey, header, binding, body)
	} else {
		plaintext, err = open(dataKey, header, binding, body)
	}
	var malformed *MalformedError
	switch {
	case errors.As(err, &malformed):
		return "", sqsworker.Permanent(ReasonMalformed, err)
	case err != nil:
		d.keys.remove(cacheKey) // a tampered body says nothing against the data key, but keep nothing it touched
		return "", sqsworker.Permanent(ReasonTampered, err)
	}
	return string(plaintext), nil
}

// dataKey returns the plaintext data key of header for jobType, from the cache or KMS.
func (d *Decrypter) dataKey(ctx context.Context, header Header, jobType string) ([]byte, string, error) {
	cacheKey := header.KeyARN + "\x00" + jobType + "\x00" + string(header.EncryptedDataKey)
	d.lookups.Add(1)
	if key, ok := d.keys.get(cacheKey); ok {
		return key, cacheKey, nil
	}
	// Concurrent deliveries under one new data key (a batch) share one Decrypt; the
	// first caller's context bounds it.
	key, err, _ := d.flight.Do(cacheKey, func() (any, error) {
		if key, ok := d.keys.get(cacheKey); ok {
			return key, nil
		}
		d.kmsCall.Add(1)
		output, err := d.client.Decrypt(ctx, &kms.DecryptInput{
			CiphertextBlob:    header.EncryptedDataKey,
			KeyId:             aws.String(header.KeyARN), // KMS uses this key only, whatever the blob says
			EncryptionContext: encryptionContext(jobType),
		})
		if err != nil {
			return nil, classify(header.KeyARN, err)
		}
		if len(output.Plaintext) != 32 {
			return nil, sqsworker.Permanent(ReasonMalformed, fmt.Errorf("encrypt: the data key under %s has %d bytes, want 32", header.KeyARN, len(output.Plaintext)))
		}
		d.keys.put(cacheKey, output.Plaintext)
		return output.Plaintext, nil
	})
	if err != nil {
		return nil, "", err
	}
	return key.([]byte), cacheKey, nil
}

// classify turns a KMS Decrypt error into a permanent failure when a retry cannot
// change KMS's answer.
func classify(keyARN string, err error) error {
	var (
		invalidCiphertext *kmstypes.InvalidCiphertextException
		incorrectKey      *kmstypes.IncorrectKeyException
		disabled          *kmstypes.DisabledException
		invalidState      *kmstypes.KMSInvalidStateException
		notFound          *kmstypes.NotFoundException
		keyUsage          *kmstypes.InvalidKeyUsageException
		api               smithy.APIError
	)
	wrapped := fmt.Errorf("encrypt: KMS Decrypt of the data key under %s: %w", keyARN, err)
	switch {
	case errors.As(err, &invalidCiphertext):
		return sqsworker.Permanent(ReasonTampered, wrapped)
	case errors.As(err, &incorrectKey), errors.As(err, &disabled), errors.As(err, &invalidState),
		errors.As(err, &notFound), errors.As(err, &keyUsage):
		return sqsworker.Permanent(ReasonKeyRefused, wrapped)
	case errors.As(err, &api) && api.ErrorCode() == "AccessDeniedException":
		return sqsworker.Permanent(ReasonKeyRefused, wrapped)
	}
	return wrapped
}
