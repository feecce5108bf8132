package redrive

import (
	"maps"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/internal/sqsx"
	"github.com/sqsworker/sqsworker/sqsinfo"
)

// moveAttributes returns the message attributes to send for raw and the message's size
// with them: raw's own, with AttributeRedriveCount set to one more than it was, then
// AttributeMoveID set to this move's id, each replacing the received value and each
// only when it fits (not an 11th attribute, not beyond the destination's
// MaximumMessageSize). A count that does not fit goes to the log (Info).
func (r *run) moveAttributes(raw types.Message, message *sqsworker.Message, size int) (map[string]types.MessageAttributeValue, int) {
	attributes := maps.Clone(raw.MessageAttributes)
	if attributes == nil {
		attributes = map[string]types.MessageAttributeValue{}
	}
	count, _ := strconv.Atoi(aws.ToString(attributes[AttributeRedriveCount].StringValue))
	size, reason := r.setAttribute(attributes, size, AttributeRedriveCount, "Number", strconv.Itoa(count+1))
	if reason != "" {
		r.config.Logger.Info("redrive: moved without "+AttributeRedriveCount+": "+reason,
			"message_id", message.ID, "redrive_count", count+1)
	}
	size, _ = r.setAttribute(attributes, size, AttributeMoveID, "String", r.start.moveID)
	return attributes, size
}

// setAttribute sets attribute name in attributes and returns the message's new size,
// or leaves attributes as they are and returns size and the reason it does not fit.
func (r *run) setAttribute(attributes map[string]types.MessageAttributeValue, size int, name, dataType, value string) (int, string) {
	newSize := size + sqsx.AttributeSize(name, dataType, value, nil)
	old, present := attributes[name]
	if present {
		newSize -= sqsx.AttributeSize(name, aws.ToString(old.DataType), aws.ToString(old.StringValue), old.BinaryValue)
	}
	switch {
	case !present && len(attributes) >= sqsinfo.MaxMessageAttributes:
		return size, "the message already has 10 message attributes, the SQS maximum"
	case newSize > r.maxBytes:
		return size, "the attribute would make the message larger than the destination's MaximumMessageSize"
	}
	attributes[name] = types.MessageAttributeValue{DataType: aws.String(dataType), StringValue: aws.String(value)}
	return newSize, ""
}
