// Package envelope is the header of package encrypt's envelope (its format is
// documented there): the one thing other packages (jobs, redrive) read of an encrypted
// message, without linking the KMS client.
package envelope

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Format constants of the envelope header (see the package documentation).
const (
	// Version is the envelope format version, the header's first byte.
	Version byte = 1
	// AlgorithmAES256GCM encrypts the whole body: AES-256-GCM with a 96-bit random nonce
	// and a 128-bit tag.
	AlgorithmAES256GCM byte = 1
	// AlgorithmAES256GCMFields encrypts named top-level fields of a JSON object body,
	// each with AES-256-GCM under the header's nonce with the field's index (from 1)
	// XORed into its last 4 bytes; the header lists the fields.
	AlgorithmAES256GCMFields byte = 2

	// NonceSize is the length of the nonce, in bytes.
	NonceSize = 12
	// maxFieldBytes bounds each length-prefixed header field (a key ARN is at most
	// 2,048 bytes, a KMS ciphertext blob of a 256-bit data key about 200).
	maxFieldBytes = 4096
)

// Header is the decoded envelope header: what travels in the
// sqsworker.AttributeEncryption message attribute.
type Header struct {
	// KeyARN is the ARN of the KMS key that encrypted the data key (GenerateDataKey's
	// KeyId, always a key ARN).
	KeyARN string
	// KeyMaterialID is the key material the data key was encrypted under
	// (GenerateDataKey's KeyMaterialId), which changes when KMS rotates the key; empty
	// when KMS returned none (moto returns none).
	KeyMaterialID string
	// EncryptedDataKey is KMS's CiphertextBlob of the data key.
	EncryptedDataKey []byte
	// Nonce is the AES-GCM nonce of this body (12 bytes, random per message).
	Nonce []byte
	// Fields are the encrypted top-level fields of a JSON object body, in order
	// (AlgorithmAES256GCMFields); empty when the whole body is encrypted.
	Fields []string
}

// algorithm returns the header's algorithm byte.
func (h Header) algorithm() byte {
	if len(h.Fields) > 0 {
		return AlgorithmAES256GCMFields
	}
	return AlgorithmAES256GCM
}

// MalformedError is a header or body that is not of this format. It is never
// retried: encrypt.Decrypter.Middleware fails such a message with encrypt.ReasonMalformed.
type MalformedError struct{ Reason string }

// Error says what is malformed.
func (e *MalformedError) Error() string { return "encrypt: malformed envelope: " + e.Reason }

// Marshal encodes the header: version, algorithm, nonce, then the key ARN, the key
// material id and the encrypted data key, each with a big-endian uint16 length.
func (h Header) Marshal() []byte {
	out := make([]byte, 0, 2+NonceSize+6+len(h.KeyARN)+len(h.KeyMaterialID)+len(h.EncryptedDataKey))
	out = append(out, Version, h.algorithm())
	out = append(out, h.Nonce...)
	fields := [][]byte{[]byte(h.KeyARN), []byte(h.KeyMaterialID), h.EncryptedDataKey}
	if len(h.Fields) > 0 {
		fields = append(fields, []byte(strings.Join(h.Fields, "\n")))
	}
	for _, field := range fields {
		out = binary.BigEndian.AppendUint16(out, uint16(len(field)))
		out = append(out, field...)
	}
	return out
}

// String returns the header as the attribute's value: base64 (standard, padded) of its
// bytes.
func (h Header) String() string { return base64.StdEncoding.EncodeToString(h.Marshal()) }

// ParseHeader decodes the value of the sqsworker.AttributeEncryption attribute. Its
// error is a [*MalformedError]: not base64, an unknown version or algorithm, a field
// past the end or longer than 4,096 bytes, a key ARN that is not UTF-8, an empty
// encrypted data key, or bytes after the last field.
func ParseHeader(value string) (Header, error) {
	raw, err := base64.StdEncoding.DecodeString(value)
	if err != nil {
		return Header{}, &MalformedError{Reason: "the header is not base64"}
	}
	if len(raw) < 2+NonceSize {
		return Header{}, &MalformedError{Reason: fmt.Sprintf("the header has %d bytes, fewer than %d", len(raw), 2+NonceSize)}
	}
	if raw[0] != Version {
		return Header{}, &MalformedError{Reason: fmt.Sprintf("unknown format version %d (this worker reads version %d)", raw[0], Version)}
	}
	if raw[1] != AlgorithmAES256GCM && raw[1] != AlgorithmAES256GCMFields {
		return Header{}, &MalformedError{Reason: fmt.Sprintf("unknown algorithm %d", raw[1])}
	}
	h := Header{Nonce: raw[2 : 2+NonceSize]}
	rest := raw[2+NonceSize:]
	fields := make([][]byte, 3, 4)
	if raw[1] == AlgorithmAES256GCMFields {
		fields = fields[:4]
	}
	for i := range fields {
		if len(rest) < 2 {
			return Header{}, &MalformedError{Reason: "the header ends inside a field length"}
		}
		n := int(binary.BigEndian.Uint16(rest))
		if n > maxFieldBytes || len(rest) < 2+n {
			return Header{}, &MalformedError{Reason: fmt.Sprintf("header field %d of %d bytes does not fit", i+1, n)}
		}
		fields[i], rest = rest[2:2+n], rest[2+n:]
	}
	if len(rest) != 0 {
		return Header{}, &MalformedError{Reason: fmt.Sprintf("%d bytes after the header's last field", len(rest))}
	}
	if !utf8.Valid(fields[0]) || !utf8.Valid(fields[1]) {
		return Header{}, &MalformedError{Reason: "the key ARN or key material id is not UTF-8"}
	}
	if len(fields[2]) == 0 {
		return Header{}, &MalformedError{Reason: "the encrypted data key is empty"}
	}
	h.KeyARN, h.KeyMaterialID, h.EncryptedDataKey = string(fields[0]), string(fields[1]), fields[2]
	if len(fields) == 4 {
		if !utf8.Valid(fields[3]) || len(fields[3]) == 0 {
			return Header{}, &MalformedError{Reason: "the encrypted field names are empty or not UTF-8"}
		}
		h.Fields = strings.Split(string(fields[3]), "\n")
	}
	return h, nil
}
