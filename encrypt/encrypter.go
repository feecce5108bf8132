package encrypt

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
)

// GenerateDataKeyAPI is the part of the KMS client an [Encrypter] uses; *kms.Client
// satisfies it.
type GenerateDataKeyAPI interface {
	GenerateDataKey(ctx context.Context, input *kms.GenerateDataKeyInput, optFns ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error)
}

var _ GenerateDataKeyAPI = (*kms.Client)(nil)

// Defaults of [EncrypterConfig].
const (
	// DefaultDataKeyMaxAge is how long an Encrypter uses one data key.
	DefaultDataKeyMaxAge = 5 * time.Minute
	// DefaultDataKeyMaxMessages is how many bodies an Encrypter encrypts under one data key.
	DefaultDataKeyMaxMessages = 10_000
	// MaxDataKeyMaxMessages bounds EncrypterConfig.MaxMessages: with 96-bit random
	// nonces, NIST SP 800-38D keeps the chance of a repeated nonce negligible up to 2^32
	// messages per key; this package stays far below.
	MaxDataKeyMaxMessages = 1 << 24
	// maxJobTypes bounds the data keys held at once (one per job type).
	maxJobTypes = 1024
)

// EncrypterConfig configures an [Encrypter].
type EncrypterConfig struct {
	// KeyID names the KMS key: a key id, key ARN, alias name ("alias/jobs") or alias
	// ARN. The envelope carries the key ARN KMS returns, which workers must allow
	// (DecrypterConfig.AllowedKeys). Required.
	KeyID string
	// MaxAge is how long one data key is used for new bodies of a job type (the AWS
	// Encryption SDK's caching "max age"); if zero, DefaultDataKeyMaxAge (5 min).
	MaxAge time.Duration
	// MaxMessages is how many bodies one data key encrypts; if zero,
	// DefaultDataKeyMaxMessages; 1 asks KMS for a new data key per body. At most
	// MaxDataKeyMaxMessages.
	MaxMessages int
	// Fields, if not empty, encrypts only these top-level fields of a JSON object body
	// (the field-level form: the others stay readable, and the body is re-encoded with
	// its keys sorted); a body with none of them is encrypted whole, and a body that is
	// not a JSON object fails the send. Empty encrypts the whole body.
	Fields []string
	// Now is the clock of MaxAge; if nil, time.Now.
	Now func() time.Time
}

// Encrypter encrypts job bodies on the producer side: set it as producer.Config.Encrypter.
// It is safe for concurrent use.
//
// Cost: one KMS GenerateDataKey request per job type per MaxAge or MaxMessages,
// whichever ends first, instead of one per job (KMS bills $0.03 per 10,000 requests,
// https://aws.amazon.com/kms/pricing/, and throttles by a per-account request quota).
// The price is a plaintext data key held in memory up to MaxAge, one per job type.
type Encrypter struct {
	client GenerateDataKeyAPI
	config EncrypterConfig

	mu   sync.Mutex
	keys *cache[*dataKey]
}

// dataKey is a data key in use: its plaintext, header fields and uses so far.
type dataKey struct {
	plaintext []byte
	header    Header
	uses      int
}

// NewEncrypter returns an Encrypter asking client for data keys. Errors: nil client,
// empty KeyID, negative MaxAge or MaxMessages, MaxMessages above MaxDataKeyMaxMessages.
func NewEncrypter(client GenerateDataKeyAPI, config EncrypterConfig) (*Encrypter, error) {
	var errs []error
	if client == nil {
		errs = append(errs, errors.New("encrypt: nil KMS client"))
	}
	if config.KeyID == "" {
		errs = append(errs, errors.New("encrypt: EncrypterConfig.KeyID is empty"))
	}
	for _, field := range config.Fields {
		if field == "" || strings.Contains(field, "\n") || len(field) > 256 {
			errs = append(errs, fmt.Errorf("encrypt: EncrypterConfig.Fields: %q is not a field name (1 to 256 bytes, no newline)", field))
		}
	}
	if config.MaxAge < 0 || config.MaxMessages < 0 || config.MaxMessages > MaxDataKeyMaxMessages {
		errs = append(errs, fmt.Errorf("encrypt: EncrypterConfig.MaxAge (%s) and MaxMessages (%d) must not be negative, MaxMessages at most %d", config.MaxAge, config.MaxMessages, MaxDataKeyMaxMessages))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if config.MaxAge == 0 {
		config.MaxAge = DefaultDataKeyMaxAge
	}
	if config.MaxMessages == 0 {
		config.MaxMessages = DefaultDataKeyMaxMessages
	}
	if config.Now == nil {
		config.Now = time.Now
	}
	return &Encrypter{client: client, config: config, keys: newCache[*dataKey](maxJobTypes, config.MaxAge, config.Now)}, nil
}

// Encrypt encrypts body for a message with attrs (their job type and job id bind the
// ciphertext) and returns the new body (base64) and the [sqsworker.AttributeEncryption]
// attribute to send with it. Errors: GenerateDataKey's, wrapped with the key id; a data
// key KMS returned that is not 32 bytes.
func (e *Encrypter) Encrypt(ctx context.Context, body string, attrs map[string]types.MessageAttributeValue) (string, types.MessageAttributeValue, error) {
	binding := Binding{JobType: aws.ToString(attrs[sqsworker.AttributeJobType].StringValue), JobID: aws.ToString(attrs[sqsworker.AttributeJobID].StringValue)}
	key, err := e.dataKey(ctx, binding.JobType)
	if err != nil {
		return "", types.MessageAttributeValue{}, err
	}
	header := key.header
	header.Nonce = make([]byte, nonceSize)
	if _, err := rand.Read(header.Nonce); err != nil {
		return "", types.MessageAttributeValue{}, err
	}
	sealed, header, err := e.seal(key.plaintext, header, binding, body)
	if err != nil {
		return "", types.MessageAttributeValue{}, err
	}
	return sealed, types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(header.String())}, nil
}

// seal encrypts body whole, or its Fields when configured and present, and returns
// the header with the fields it encrypted.
func (e *Encrypter) seal(dataKey []byte, header Header, binding Binding, body string) (string, Header, error) {
	if len(e.config.Fields) == 0 {
		sealed, err := seal(dataKey, header, binding, []byte(body))
		return sealed, header, err
	}
	object, err := objectOf(body)
	if err != nil {
		return "", header, fmt.Errorf("encrypt: EncrypterConfig.Fields: %w", err)
	}
	header.Fields = present(object, e.config.Fields)
	if len(header.Fields) == 0 {
		sealed, err := seal(dataKey, header, binding, []byte(body))
		return sealed, header, err
	}
	sealed, err := sealFields(dataKey, header, binding, object)
	return sealed, header, err
}

// dataKey returns a data key for jobType with a use left, asking KMS for a new one when
// the current one is too old or used up.
func (e *Encrypter) dataKey(ctx context.Context, jobType string) (*dataKey, error) {
	e.mu.Lock()
	if key, ok := e.keys.get(jobType); ok && key.uses < e.config.MaxMessages {
		key.uses++
		e.mu.Unlock()
		return key, nil
	}
	e.mu.Unlock()
	output, err := e.client.GenerateDataKey(ctx, &kms.GenerateDataKeyInput{
		KeyId:             aws.String(e.config.KeyID),
		KeySpec:           kmstypes.DataKeySpecAes256,
		EncryptionContext: encryptionContext(jobType),
	})
	if err != nil {
		return nil, fmt.Errorf("encrypt: generating a data key under %s: %w", e.config.KeyID, err)
	}
	if len(output.Plaintext) != 32 {
		return nil, fmt.Errorf("encrypt: KMS returned a %d-byte data key, want 32", len(output.Plaintext))
	}
	key := &dataKey{plaintext: output.Plaintext, uses: 1, header: Header{
		KeyARN: aws.ToString(output.KeyId), KeyMaterialID: aws.ToString(output.KeyMaterialId), EncryptedDataKey: output.CiphertextBlob,
	}}
	e.mu.Lock()
	e.keys.put(jobType, key)
	e.mu.Unlock()
	return key, nil
}

// Encryption context keys of a data key (KMS binds the encrypted data key to them and
// logs them in CloudTrail).
const (
	ContextPurpose = "sqsworker:purpose"
	ContextJobType = "sqsworker:job-type"
	purposePayload = "job-payload"
)

// encryptionContext is the KMS encryption context of jobType's data keys.
func encryptionContext(jobType string) map[string]string {
	context := map[string]string{ContextPurpose: purposePayload}
	if jobType != "" {
		context[ContextJobType] = jobType
	}
	return context
}
