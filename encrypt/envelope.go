package encrypt

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/sqsworker/sqsworker/internal/envelope"
)

// Format constants of the envelope header (see the package documentation).
const (
	// Version is the envelope format version, the header's first byte.
	Version = envelope.Version
	// AlgorithmAES256GCM encrypts the whole body: AES-256-GCM with a 96-bit random nonce
	// and a 128-bit tag.
	AlgorithmAES256GCM = envelope.AlgorithmAES256GCM
	// AlgorithmAES256GCMFields encrypts named top-level fields of a JSON object body,
	// each with AES-256-GCM under the header's nonce with the field's index (from 1)
	// XORed into its last 4 bytes; the header lists the fields.
	AlgorithmAES256GCMFields = envelope.AlgorithmAES256GCMFields

	nonceSize = envelope.NonceSize
	aadLabel  = "sqsworker/encrypt/v1\x00"
)

// Header is the decoded envelope header: what travels in the
// [sqsworker.AttributeEncryption] message attribute (fields KeyARN, KeyMaterialID,
// EncryptedDataKey, Nonce and, for the field-level form, Fields). Its String method
// returns the attribute's value.
type Header = envelope.Header

// MalformedError is a header or body that is not of this format. It is never
// retried: [Decrypter.Middleware] fails such a message with [ReasonMalformed].
type MalformedError = envelope.MalformedError

// ParseHeader decodes the value of the [sqsworker.AttributeEncryption] attribute. Its
// error is a [*MalformedError]: not base64, an unknown version or algorithm, a field
// past the end or longer than 4,096 bytes, a key ARN or field name that is not UTF-8,
// an empty encrypted data key, or bytes after the last field.
func ParseHeader(value string) (Header, error) { return envelope.ParseHeader(value) }

// aad is the additional authenticated data of a body: a label, the header bytes, the
// job type and the job id, so a body moved under another header, job type or job id
// does not open.
func aad(header []byte, binding Binding) []byte {
	out := append([]byte(aadLabel), header...)
	for _, field := range []string{binding.JobType, binding.JobID} {
		out = binary.BigEndian.AppendUint32(out, uint32(len(field)))
		out = append(out, field...)
	}
	return out
}

// Binding is what a ciphertext is bound to besides its header: the job type (also in
// the KMS encryption context of the data key) and the job id (in the AES-GCM
// additional data). Both come from the message's attributes.
type Binding struct {
	JobType string
	JobID   string
}

// seal encrypts plaintext under dataKey (32 bytes) with header h and returns the body:
// base64 of ciphertext and tag.
func seal(dataKey []byte, h Header, binding Binding, plaintext []byte) (string, error) {
	aead, err := newGCM(dataKey)
	if err != nil {
		return "", err
	}
	sealed := aead.Seal(nil, h.Nonce, plaintext, aad(h.Marshal(), binding))
	return base64.StdEncoding.EncodeToString(sealed), nil
}

// errTampered is the error of a body that does not authenticate.
var errTampered = errors.New("encrypt: the body does not authenticate under its header, job type and job id (tampered, or moved from another job)")

// open decrypts a body made by seal.
func open(dataKey []byte, h Header, binding Binding, body string) ([]byte, error) {
	sealed, err := base64.StdEncoding.DecodeString(body)
	if err != nil {
		return nil, &MalformedError{Reason: "the body is not base64"}
	}
	aead, err := newGCM(dataKey)
	if err != nil {
		return nil, err
	}
	plaintext, err := aead.Open(nil, h.Nonce, sealed, aad(h.Marshal(), binding))
	if err != nil {
		return nil, errTampered
	}
	return plaintext, nil
}

func newGCM(dataKey []byte) (cipher.AEAD, error) {
	if len(dataKey) != 32 {
		return nil, fmt.Errorf("encrypt: the data key has %d bytes, AES-256 needs 32", len(dataKey))
	}
	block, err := aes.NewCipher(dataKey)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
