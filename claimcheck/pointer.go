package claimcheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/sqsworker/sqsworker"
)

// The wire format of the AWS extended client libraries (amazon-sqs-java-extended-client-lib
// with payload-offloading-java-common-lib, and amazon-sqs-extended-client for Python):
// a message whose payload is in S3 carries the message attribute AttributePayloadSize
// (Number: the payload's size in bytes), and its body is the JSON array
//
//	["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"BUCKET","s3Key":"KEY"}]
//
// (Jackson's default typing of the Java PayloadS3Pointer class: the class name, then the
// object). The attribute, not the body, marks a message as a pointer.
const (
	// AttributePayloadSize is the message attribute the current libraries set on a
	// message whose payload is in S3 (data type Number, the payload's size in bytes).
	AttributePayloadSize = "ExtendedPayloadSize"
	// LegacyAttributePayloadSize is the attribute name older Java versions (before 2.0)
	// set, and the Python library with use_legacy_attribute. It is accepted when reading.
	LegacyAttributePayloadSize = "SQSLargePayloadSize"
	// PointerClass is the class name written first in the pointer array, as the Java
	// library writes and requires it.
	PointerClass = "software.amazon.payloadoffloading.PayloadS3Pointer"
	// LegacyPointerClass is the class name of the legacy pointer (Java before 2.0, Python
	// with use_legacy_attribute). It is accepted when reading.
	LegacyPointerClass = "com.amazon.sqs.javamessaging.MessageS3Pointer"
)

// ErrMalformedPointer is wrapped by the errors [ParsePointer] and [PointerOf] return for
// a message that is marked as a pointer but whose body is not one.
var ErrMalformedPointer = errors.New("claimcheck: malformed S3 pointer")

// Pointer names the S3 object that holds a message's payload.
type Pointer struct {
	// Bucket is the S3 bucket name (s3BucketName).
	Bucket string
	// Key is the object key (s3Key).
	Key string
}

// pointerObject is the second element of the pointer array.
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

// ParsePointer decodes a pointer body: a JSON array of the class name (PointerClass or
// LegacyPointerClass) and an object with non-empty s3BucketName and s3Key. Unknown fields
// of the object are ignored, as the Java library ignores them.
//
// Errors wrap [ErrMalformedPointer] and say what is wrong.
func ParsePointer(body string) (Pointer, error) {
	var parts []json.RawMessage
	if err := json.Unmarshal([]byte(body), &parts); err != nil {
		return Pointer{}, fmt.Errorf("%w: the body is not a JSON array: %v", ErrMalformedPointer, err)
	}
	if len(parts) != 2 {
		return Pointer{}, fmt.Errorf("%w: the body is a JSON array of %d elements, not 2 (class name, pointer)", ErrMalformedPointer, len(parts))
	}
	var class string
	if err := json.Unmarshal(parts[0], &class); err != nil {
		return Pointer{}, fmt.Errorf("%w: the first element is not a class name string", ErrMalformedPointer)
	}
	if class != PointerClass && class != LegacyPointerClass {
		return Pointer{}, fmt.Errorf("%w: unknown pointer class %q (want %s)", ErrMalformedPointer, class, PointerClass)
	}
	var object pointerObject
	if err := json.Unmarshal(parts[1], &object); err != nil {
		return Pointer{}, fmt.Errorf("%w: the second element is not an object with s3BucketName and s3Key: %v", ErrMalformedPointer, err)
	}
	if object.Bucket == "" || object.Key == "" {
		return Pointer{}, fmt.Errorf("%w: s3BucketName or s3Key is empty", ErrMalformedPointer)
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

// PointerOf reports whether message refers to a payload in S3 (it carries
// AttributePayloadSize or LegacyAttributePayloadSize) and, if so, returns the pointer
// and the payload size the attribute announces (-1 when the attribute is not a number).
// A marked message whose body is not a pointer is an error wrapping
// [ErrMalformedPointer]; an unmarked message returns ok false and no error, whatever
// its body.
func PointerOf(message *sqsworker.Message) (pointer Pointer, size int64, ok bool, err error) {
	name := payloadSizeAttribute(message.MessageAttributes)
	if name == "" {
		return Pointer{}, 0, false, nil
	}
	size, parseErr := strconv.ParseInt(message.MessageAttributes[name].StringValue, 10, 64)
	if parseErr != nil || size < 0 {
		size = -1
	}
	pointer, err = ParsePointer(message.Body)
	if err != nil {
		return Pointer{}, size, true, fmt.Errorf("message %s has the %s attribute: %w", message.ID, name, err)
	}
	return pointer, size, true, nil
}
