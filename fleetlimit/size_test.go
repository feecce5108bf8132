package fleetlimit

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sqsworker/sqsworker/table"
)

// TestFullPermitsItemFitsOneWriteUnit: an item holding SlotsPerItem leases of a
// default holder name (13 random characters and a 10-digit sequence) under a 100-byte key is at most 1 KB, so each write of it costs one write
// capacity unit, the figure the package docs' arithmetic rests on.
func TestFullPermitsItemFitsOneWriteUnit(t *testing.T) {
	t.Parallel()
	key, err := table.LimitPermitsKey("tenants", 3, strings.Repeat("k", 100-len("limit#permits#tenants#3#")))
	if err != nil {
		t.Fatal(err)
	}
	holder := strings.Repeat("z", 13) + "/" + strings.Repeat("9", 10)
	until := time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)
	item := map[string]types.AttributeValue{
		table.PartitionKey: &types.AttributeValueMemberS{Value: key},
		attributeFence:     number(1 << 40),
		table.TTLAttribute: ttl(until),
	}
	for slot := range SlotsPerItem {
		item[slotName(slot)] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			attributeHolder: &types.AttributeValueMemberS{Value: holder},
			attributeUntil:  millis(until),
		}}
	}
	size := table.ItemSize(item)
	if size > 1024 {
		t.Errorf("a full permits item is %d bytes; want at most 1024 (one write unit)", size)
	}
	t.Logf("a full permits item: %d bytes", size)
}
