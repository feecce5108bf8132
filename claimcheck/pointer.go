package claimcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/sqsworker/sqsworker"
)

// The wire format of the AWS extended client libraries (amazon-sqs-java-extended-client-lib
// with payload-offloading-java-common-lib, and amazon-sqs-extended-client for Python):
// a message whose payload is in S3 carries a size attribute (AttributePayloadSize or
// LegacyAttributePayloadSize, data type Number: the payload's size in bytes), and its body
// is the JSON array
//
//	["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"BUCKET","s3Key":"KEY"}]
//
// (Jackson's default typing of the Java PayloadS3Pointer class: the class name, then the
// object). The attribute, not the body, marks a message as a pointer. The bytes each
// client writes are kept in testdata/wire.
const (
	// AttributePayloadSize is the size attribute the store writes, and the one the Python
	// library writes by default and the Java library 2.x writes when its legacy name is
	// disabled (ExtendedClientConfiguration.withLegacyReservedAttributeNameDisabled).
	AttributePayloadSize = "ExtendedPayloadSize"
	// LegacyAttributePayloadSize is the size attribute the Java library writes by default
	// (1.x and 2.x, up to at least 2.1.1), and the Python library with
	// use_legacy_attribute. It is accepted when reading. Both libraries read both names.
	LegacyAttributePayloadSize = "SQSLargePayloadSize"
	// AttributePayloadShared, set to "1" (data type String) by a [Store] with
	// Config.Shared or publishing to an SNS topic, marks a pointer that several consumers
	// read (fan-out): no consumer's [Cleaner] deletes its object, the bucket's lifecycle
	// rule does.
	AttributePayloadShared = "sqsworker-payload-shared"
	// PointerClass is the class name written first in the pointer array, as the Java
	// library writes and requires it.
	PointerClass = "software.amazon.payloadoffloading.PayloadS3Pointer"
	// LegacyPointerClass is the class name of the pointer of Java 1.x and of the Python
	// library with use_legacy_attribute. It is accepted when reading (the Java library 2.x
	// reads it too).
	LegacyPointerClass = "com.amazon.sqs.javamessaging.MessageS3Pointer"
)

// ErrMalformedPointer is wrapped by the errors [ParsePointer] and [PointerOf] return for
// a message that is marked as a pointer but whose body is not one of the known shapes,
// or whose size attribute is not a byte count.
var ErrMalformedPointer = errors.New("claimcheck: malformed S3 pointer")

// Pointer names the S3 object that holds a message's payload.
type Pointer struct {
	// Bucket is the S3 bucket name (s3BucketName).
	Bucket string
	// Key is the object key (s3Key).
	Key string
}

// pointerObject is the pointer object: the array's second element, or the whole body.
type pointerObject struct {
	Bucket string `json:"s3BucketName"`
	Key    string `json:"s3Key"`
}

// Body returns the message body that refers to p, in the extended client libraries'
// format (see the package documentation).
func (p Pointer) Body() string {
	encoded, err := json.Marshal([]any{PointerClass, pointerObject{Bucket: p.Bucket, Key: p.Key}})
	if err != nil {
		panic(fmt.Sprintf("claimcheck: encoding a pointer cannot fail: %v", err)) // strings only
	}
	return string(encoded)
}

// String returns "s3://BUCKET/KEY", for logs and errors.
func (p Pointer) String() string {
	return "s3://" + p.Bucket + "/" + p.Key
}

// ParsePointer decodes a pointer body in either of the two shapes in use:
//
//   - the JSON array of the class name (PointerClass or LegacyPointerClass) and an
//     object with s3BucketName and s3Key, as the Java and Python libraries write it (the
//     Python library with a space after each "," and ":");
//   - the bare object {"s3BucketName": ..., "s3Key": ...}, as the Node.js
//     sqs-extended-client writes it in its Java-compatible mode.
//
// Both fields must be non-empty strings; unknown fields of the object are ignored, as the
// Java library ignores them.
//
// Errors wrap [ErrMalformedPointer] and say what is wrong.
func ParsePointer(body string) (Pointer, error) {
	trimmed := bytes.TrimLeft([]byte(body), " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return parseObject([]byte(body), "the body")
	}
	var parts []json.RawMessage
	if err := json.Unmarshal([]byte(body), &parts); err != nil {
		return Pointer{}, fmt.Errorf("%w: the body is neither a JSON array [class, pointer] nor a pointer object: %v", ErrMalformedPointer, err)
	}
	if len(parts) != 2 {
		return Pointer{}, fmt.Errorf("%w: the body is a JSON array of %d elements, not 2 (class name, pointer)", ErrMalformedPointer, len(parts))
	}
	var class string
	if err := json.Unmarshal(parts[0], &class); err != nil {
		return Pointer{}, fmt.Errorf("%w: the first element is not a class name string", ErrMalformedPointer)
	}
	if class != PointerClass && class != LegacyPointerClass {
		return Pointer{}, fmt.Errorf("%w: unknown pointer class %q (want %s or %s)", ErrMalformedPointer, class, PointerClass, LegacyPointerClass)
	}
	return parseObject(parts[1], "the second element")
}

// parseObject decodes the pointer object; what names it in errors.
func parseObject(data []byte, what string) (Pointer, error) {
	var object pointerObject
	if err := json.Unmarshal(data, &object); err != nil {
		return Pointer{}, fmt.Errorf("%w: %s is not an object with string fields s3BucketName and s3Key: %v", ErrMalformedPointer, what, err)
	}
	if object.Bucket == "" || object.Key == "" {
		return Pointer{}, fmt.Errorf("%w: s3BucketName or s3Key is empty or missing", ErrMalformedPointer)
	}
	return Pointer{Bucket: object.Bucket, Key: object.Key}, nil
}

// payloadSizeAttribute returns the name of the size attribute message carries, current
// name first, or "" when it carries neither.
func payloadSizeAttribute(attributes map[string]sqsworker.MessageAttribute) string {
	if _, ok := attributes[AttributePayloadSize]; ok {
		return AttributePayloadSize
	}
	if _, ok := attributes[LegacyAttributePayloadSize]; ok {
		return LegacyAttributePayloadSize
	}
	return ""
}

// isShared reports whether message carries AttributePayloadShared set to "1".
func isShared(message *sqsworker.Message) bool {
	return message.MessageAttributes[AttributePayloadShared].StringValue == "1"
}

// PointerOf reports whether message refers to a payload in S3 (it carries
// AttributePayloadSize or LegacyAttributePayloadSize) and, if so, returns the pointer
// and the payload size the attribute announces, in bytes. A marked message whose body is
// not a pointer, or whose size attribute is not a non-negative integer, is an error
// wrapping [ErrMalformedPointer]; an unmarked message returns ok false and no error,
// whatever its body.
func PointerOf(message *sqsworker.Message) (pointer Pointer, size int64, ok bool, err error) {
	name := payloadSizeAttribute(message.MessageAttributes)
	if name == "" {
		return Pointer{}, 0, false, nil
	}
	value := message.MessageAttributes[name].StringValue
	size, parseErr := strconv.ParseInt(value, 10, 64)
	if parseErr != nil || size < 0 {
		return Pointer{}, 0, true, fmt.Errorf("message %s: %w: the %s attribute %q is not a size in bytes", message.ID, ErrMalformedPointer, name, value)
	}
	pointer, err = ParsePointer(message.Body)
	if err != nil {
		return Pointer{}, size, true, fmt.Errorf("message %s has the %s attribute: %w", message.ID, name, err)
	}
	return pointer, size, true, nil
}
