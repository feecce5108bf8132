package table

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ItemSize returns the size of item as DynamoDB counts it against [MaxItemBytes]
// ("DynamoDB item sizes and formats"): for each attribute, the UTF-8 bytes of its name
// plus its value's size, where a string counts its UTF-8 bytes, a binary its raw bytes
// (not its base64), a number one byte per two significant digits plus one (rounded up:
// AWS documents this size as approximate, so ItemSize errs on the large side), a Boolean
// or null one byte, a set the sum of its members, and a list or map 3 bytes plus one per
// element plus its elements (a map's keys counted as names).
func ItemSize(item map[string]types.AttributeValue) int {
	size := 0
	for name, value := range item {
		size += len(name) + valueSize(value)
	}
	return size
}

func valueSize(value types.AttributeValue) int {
	switch value := value.(type) {
	case *types.AttributeValueMemberS:
		return len(value.Value)
	case *types.AttributeValueMemberB:
		return len(value.Value)
	case *types.AttributeValueMemberN:
		return numberSize(value.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		size := 0
		for _, member := range value.Value {
			size += len(member)
		}
		return size
	case *types.AttributeValueMemberBS:
		size := 0
		for _, member := range value.Value {
			size += len(member)
		}
		return size
	case *types.AttributeValueMemberNS:
		size := 0
		for _, member := range value.Value {
			size += numberSize(member)
		}
		return size
	case *types.AttributeValueMemberL:
		size := 3
		for _, element := range value.Value {
			size += 1 + valueSize(element)
		}
		return size
	case *types.AttributeValueMemberM:
		size := 3
		for name, element := range value.Value {
			size += 1 + len(name) + valueSize(element)
		}
		return size
	}
	return 0
}

// numberSize is the size of a number's text: leading and trailing zeros and the sign,
// point and exponent do not count as significant digits.
func numberSize(text string) int {
	mantissa, _, _ := strings.Cut(strings.ToLower(text), "e")
	digits := strings.Trim(strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, mantissa), "0")
	return (len(digits)+1)/2 + 1
}
