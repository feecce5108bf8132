package encrypt

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
)

const testKey = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"

// fakeKMS hands out data keys whose "blob" is the plaintext itself, and answers Decrypt
// with err when set. Unit tests only: KMS behaviour is tested on moto.
type fakeKMS struct {
	mu        sync.Mutex
	generated int
	decrypts  int
	err       error
}

func (f *fakeKMS) GenerateDataKey(_ context.Context, input *kms.GenerateDataKeyInput, _ ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error) {
	f.mu.Lock()
	f.generated++
	f.mu.Unlock()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return &kms.GenerateDataKeyOutput{KeyId: aws.String(testKey), Plaintext: key, CiphertextBlob: append([]byte(nil), key...)}, nil
}

func (f *fakeKMS) Decrypt(_ context.Context, input *kms.DecryptInput, _ ...func(*kms.Options)) (*kms.DecryptOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.decrypts++
	if f.err != nil {
		return nil, f.err
	}
	return &kms.DecryptOutput{KeyId: input.KeyId, Plaintext: append([]byte(nil), input.CiphertextBlob...)}, nil
}

func attrs(jobType, jobID string) map[string]types.MessageAttributeValue {
	return map[string]types.MessageAttributeValue{
		sqsworker.AttributeJobType: {DataType: aws.String("String"), StringValue: aws.String(jobType)},
		sqsworker.AttributeJobID:   {DataType: aws.String("String"), StringValue: aws.String(jobID)},
	}
}

func received(body string, sent map[string]types.MessageAttributeValue, envelope types.MessageAttributeValue) map[string]sqsworker.MessageAttribute {
	out := map[string]sqsworker.MessageAttribute{sqsworker.AttributeEncryption: {DataType: "String", StringValue: aws.ToString(envelope.StringValue)}}
	for name, value := range sent {
		out[name] = sqsworker.MessageAttribute{DataType: "String", StringValue: aws.ToString(value.StringValue)}
	}
	return out
}

func TestHeaderRoundTripsAndRefusesMalformedInput(t *testing.T) {
	h := Header{KeyARN: testKey, KeyMaterialID: "m-1", EncryptedDataKey: []byte{1, 2, 3}, Nonce: make([]byte, nonceSize)}
	parsed, err := ParseHeader(h.String())
	require.NoError(t, err)
	assert.Equal(t, h, parsed)

	raw := h.Marshal()
	for name, value := range map[string]string{
		"not base64":        "%%%",
		"short":             "AQE=",
		"unknown version":   versioned(Header{KeyARN: "k", EncryptedDataKey: []byte{1}, Nonce: make([]byte, 12)}, 2),
		"truncated":         encode(raw[:len(raw)-1]),
		"trailing bytes":    encode(append(append([]byte(nil), raw...), 0)),
		"empty data key":    Header{KeyARN: testKey, Nonce: make([]byte, 12)}.String(),
		"key ARN not UTF-8": Header{KeyARN: "\xff", EncryptedDataKey: []byte{1}, Nonce: make([]byte, 12)}.String(),
	} {
		_, err := ParseHeader(value)
		var malformed *MalformedError
		assert.ErrorAs(t, err, &malformed, name)
	}
}

func TestEncrypterReusesADataKeyWithinItsLimits(t *testing.T) {
	fake := &fakeKMS{}
	now := time.Unix(1_000_000, 0)
	e, err := NewEncrypter(fake, EncrypterConfig{KeyID: "alias/jobs", MaxMessages: 3, MaxAge: time.Minute, Now: func() time.Time { return now }})
	require.NoError(t, err)
	ctx := context.Background()
	for range 3 {
		_, _, err := e.Encrypt(ctx, "x", attrs("a", "1"))
		require.NoError(t, err)
	}
	assert.Equal(t, 1, fake.generated, "three bodies of one type under one data key")
	_, _, err = e.Encrypt(ctx, "x", attrs("a", "1"))
	require.NoError(t, err)
	assert.Equal(t, 2, fake.generated, "the fourth body (MaxMessages 3) gets a new data key")
	_, _, err = e.Encrypt(ctx, "x", attrs("b", "1"))
	require.NoError(t, err)
	assert.Equal(t, 3, fake.generated, "another job type, another data key")
	now = now.Add(time.Minute)
	_, _, err = e.Encrypt(ctx, "x", attrs("a", "1"))
	require.NoError(t, err)
	assert.Equal(t, 4, fake.generated, "a data key MaxAge old is not used")
}

func TestDecryptOpensWhatEncryptSealedAndNothingMoved(t *testing.T) {
	fake := &fakeKMS{}
	e, err := NewEncrypter(fake, EncrypterConfig{KeyID: testKey})
	require.NoError(t, err)
	d, err := NewDecrypter(fake, DecrypterConfig{AllowedKeys: []string{testKey}})
	require.NoError(t, err)
	ctx := context.Background()
	sent := attrs("charge", "01J0")
	body, envelope, err := e.Encrypt(ctx, "card 4111-1111", sent)
	require.NoError(t, err)
	assert.NotContains(t, body, "4111-1111")
	plaintext, err := d.Decrypt(ctx, body, received(body, sent, envelope))
	require.NoError(t, err)
	assert.Equal(t, "card 4111-1111", plaintext)

	moved := received(body, attrs("charge", "01J1"), envelope)
	_, err = d.Decrypt(ctx, body, moved)
	assertReason(t, err, ReasonTampered)
}

func assertReason(t *testing.T, err error, reason string) {
	t.Helper()
	var permanent *sqsworker.PermanentError
	require.ErrorAs(t, err, &permanent)
	assert.Equal(t, reason, permanent.Reason)
}

func TestKMSAnswersAreClassified(t *testing.T) {
	for _, tc := range []struct {
		err    error
		reason string // "" for an ordinary, retried error
	}{
		{&kmstypes.DisabledException{}, ReasonKeyRefused},
		{&kmstypes.KMSInvalidStateException{}, ReasonKeyRefused},
		{&kmstypes.NotFoundException{}, ReasonKeyRefused},
		{&kmstypes.IncorrectKeyException{}, ReasonKeyRefused},
		{&smithy.GenericAPIError{Code: "AccessDeniedException"}, ReasonKeyRefused},
		{&kmstypes.InvalidCiphertextException{}, ReasonTampered},
		{&kmstypes.KeyUnavailableException{}, ""},
		{&kmstypes.DependencyTimeoutException{}, ""},
		{&smithy.GenericAPIError{Code: "ThrottlingException"}, ""},
		{errors.New("connection reset"), ""},
	} {
		fake := &fakeKMS{}
		e, err := NewEncrypter(fake, EncrypterConfig{KeyID: testKey})
		require.NoError(t, err)
		d, err := NewDecrypter(fake, DecrypterConfig{AllowedKeys: []string{testKey}})
		require.NoError(t, err)
		sent := attrs("t", "1")
		body, envelope, err := e.Encrypt(context.Background(), "x", sent)
		require.NoError(t, err)
		fake.err = tc.err
		_, err = d.Decrypt(context.Background(), body, received(body, sent, envelope))
		require.ErrorIs(t, err, tc.err)
		if tc.reason == "" {
			assert.NotErrorIs(t, err, sqsworker.ErrPermanent, "%T is retried", tc.err)
			continue
		}
		assertReason(t, err, tc.reason)
	}
}

func TestDecrypterCachesDataKeysBoundedAndForATime(t *testing.T) {
	fake := &fakeKMS{}
	now := time.Unix(1_000_000, 0)
	e, err := NewEncrypter(fake, EncrypterConfig{KeyID: testKey, MaxMessages: 1})
	require.NoError(t, err)
	d, err := NewDecrypter(fake, DecrypterConfig{AllowedKeys: []string{testKey}, CacheSize: 2, CacheTTL: time.Minute, Now: func() time.Time { return now }})
	require.NoError(t, err)
	ctx := context.Background()
	type sealed struct {
		body  string
		attrs map[string]sqsworker.MessageAttribute
	}
	var messages []sealed
	for range 3 { // three data keys (MaxMessages 1)
		sent := attrs("t", "1")
		body, envelope, err := e.Encrypt(ctx, "x", sent)
		require.NoError(t, err)
		messages = append(messages, sealed{body, received(body, sent, envelope)})
	}
	open := func(i int) {
		t.Helper()
		_, err := d.Decrypt(ctx, messages[i].body, messages[i].attrs)
		require.NoError(t, err)
	}
	open(0)
	open(0)
	assert.Equal(t, Stats{KMSCalls: 1, CacheHits: 1}, d.Stats())
	open(1)
	open(2) // evicts 0, the least recently used
	open(0)
	assert.Equal(t, Stats{KMSCalls: 4, CacheHits: 1}, d.Stats())
	now = now.Add(time.Minute)
	open(0)
	assert.Equal(t, Stats{KMSCalls: 5, CacheHits: 1}, d.Stats(), "a data key CacheTTL old is asked again")
}

func TestMiddlewareRefusesWhatConfigDoesNotAllow(t *testing.T) {
	fake := &fakeKMS{}
	_, err := NewDecrypter(fake, DecrypterConfig{AllowedKeys: []string{"alias/jobs"}})
	assert.ErrorContains(t, err, "not a KMS key ARN")
	_, err = NewDecrypter(fake, DecrypterConfig{})
	assert.ErrorContains(t, err, "AllowedKeys is empty")

	d, err := NewDecrypter(fake, DecrypterConfig{AllowedKeys: []string{testKey}, Required: true})
	require.NoError(t, err)
	handler := d.Middleware()(sqsworker.HandlerFunc(func(context.Context, *sqsworker.Message) error {
		t.Error("the handler must not run")
		return nil
	}))
	err = handler.Handle(context.Background(), &sqsworker.Message{ID: "m", Body: "clear"})
	assertReason(t, err, ReasonNotEncrypted)

	other := Header{KeyARN: strings.Replace(testKey, "111122223333", "999999999999", 1), EncryptedDataKey: []byte{1}, Nonce: make([]byte, 12)}
	err = handler.Handle(context.Background(), &sqsworker.Message{ID: "m", Body: "AAAA", MessageAttributes: map[string]sqsworker.MessageAttribute{
		sqsworker.AttributeEncryption: {DataType: "String", StringValue: other.String()},
	}})
	assertReason(t, err, ReasonKeyNotAllowed)
	assert.Zero(t, fake.decrypts, "KMS was not called")
}

func TestFieldLevelFormEncryptsOnlyTheNamedFields(t *testing.T) {
	fake := &fakeKMS{}
	e, err := NewEncrypter(fake, EncrypterConfig{KeyID: testKey, Fields: []string{"card", "ssn", "absent"}})
	require.NoError(t, err)
	d, err := NewDecrypter(fake, DecrypterConfig{AllowedKeys: []string{testKey}})
	require.NoError(t, err)
	ctx := context.Background()
	sent := attrs("charge", "01J0")
	body, envelope, err := e.Encrypt(ctx, `{"order":"o-1","card":"4111-1111","ssn":{"n":"078-05-1120"}}`, sent)
	require.NoError(t, err)
	assert.Contains(t, body, `"order":"o-1"`, "the other fields stay readable")
	assert.NotContains(t, body, "4111-1111")
	assert.NotContains(t, body, "078-05")
	header, err := ParseHeader(aws.ToString(envelope.StringValue))
	require.NoError(t, err)
	assert.Equal(t, []string{"card", "ssn"}, header.Fields)
	plaintext, err := d.Decrypt(ctx, body, received(body, sent, envelope))
	require.NoError(t, err)
	assert.JSONEq(t, `{"order":"o-1","card":"4111-1111","ssn":{"n":"078-05-1120"}}`, plaintext)

	// Swapping two encrypted values, or replacing one with clear text, is caught.
	var object map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &object))
	object["card"], object["ssn"] = object["ssn"], object["card"]
	swapped, err := json.Marshal(object)
	require.NoError(t, err)
	_, err = d.Decrypt(ctx, string(swapped), received(string(swapped), sent, envelope))
	assertReason(t, err, ReasonTampered)
	object["card"] = "4111-1111"
	clear, err := json.Marshal(object)
	require.NoError(t, err)
	_, err = d.Decrypt(ctx, string(clear), received(string(clear), sent, envelope))
	assertReason(t, err, ReasonMalformed)

	// A body with none of the fields is encrypted whole; one not an object is refused.
	body, envelope, err = e.Encrypt(ctx, `{"order":"o-2"}`, sent)
	require.NoError(t, err)
	assert.NotContains(t, body, "o-2")
	plaintext, err = d.Decrypt(ctx, body, received(body, sent, envelope))
	require.NoError(t, err)
	assert.Equal(t, `{"order":"o-2"}`, plaintext)
	_, _, err = e.Encrypt(ctx, `["card"]`, sent)
	assert.ErrorContains(t, err, "not a JSON object")
	_, err = NewEncrypter(fake, EncrypterConfig{KeyID: testKey, Fields: []string{""}})
	assert.ErrorContains(t, err, "not a field name")
}

// slowKMS answers Decrypt after release is closed.
type slowKMS struct {
	fakeKMS
	release chan struct{}
}

func (s *slowKMS) Decrypt(ctx context.Context, input *kms.DecryptInput, optFns ...func(*kms.Options)) (*kms.DecryptOutput, error) {
	<-s.release
	return s.fakeKMS.Decrypt(ctx, input, optFns...)
}

// A batch of deliveries under one new data key makes one Decrypt, not one each.
func TestConcurrentDeliveriesShareOneDecrypt(t *testing.T) {
	fake := &slowKMS{release: make(chan struct{})}
	e, err := NewEncrypter(fake, EncrypterConfig{KeyID: testKey})
	require.NoError(t, err)
	d, err := NewDecrypter(fake, DecrypterConfig{AllowedKeys: []string{testKey}})
	require.NoError(t, err)
	sent := attrs("t", "1")
	body, envelope, err := e.Encrypt(context.Background(), "x", sent)
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for range 10 {
		wg.Go(func() {
			_, err := d.Decrypt(context.Background(), body, received(body, sent, envelope))
			errs <- err
		})
	}
	for d.lookups.Load() < 10 { // all ten are past the cache and waiting on the one Decrypt
		time.Sleep(time.Millisecond)
	}
	close(fake.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, 1, fake.decrypts)
	assert.Equal(t, Stats{KMSCalls: 1, CacheHits: 9}, d.Stats())
}
