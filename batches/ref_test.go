package batches

import (
	"bytes"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseRefRefusesWhatAddDoesNotWrite: only "<ULID>:<32 hex>:<1..64>" is accepted.
func TestParseRefRefusesWhatAddDoesNotWrite(t *testing.T) {
	token := strings.Repeat("a", 32)
	good := ref{id: "01KBQ2ZP5E8Y9V0D2X4M6N8R1T", token: token, shards: 8}
	parsed, err := parseRef(good.String())
	require.NoError(t, err)
	assert.Equal(t, good, parsed)
	for _, value := range []string{
		"",
		"idempotency##order-1:" + token + ":1",
		"01KBQ2ZP5E8Y9V0D2X4M6N8R1T#shard:" + token + ":1",
		"01kbq2zp5e8y9v0d2x4m6n8r1t:" + token + ":1", // not canonical (lower case)
		"81KBQ2ZP5E8Y9V0D2X4M6N8R1T:" + token + ":1", // overflows a ULID
		"01KBQ2ZP5E8Y9V0D2X4M6N8R1T:" + strings.Repeat("A", 32) + ":1",
		"01KBQ2ZP5E8Y9V0D2X4M6N8R1T:" + token[:31] + ":1",
		"01KBQ2ZP5E8Y9V0D2X4M6N8R1T:" + token + ":0",
		"01KBQ2ZP5E8Y9V0D2X4M6N8R1T:" + token + ":65",
		"01KBQ2ZP5E8Y9V0D2X4M6N8R1T:" + token + ":08",
		"01KBQ2ZP5E8Y9V0D2X4M6N8R1T:" + token + ":1:extra",
	} {
		_, err := parseRef(value)
		assert.ErrorIs(t, err, ErrInvalidAttribute, "%q", value)
	}
}

// TestShardOfSpreadsEvenly: 100,000 job ids (ULIDs of 100,000 milliseconds, the same
// every run) over 8 shards: the fullest shard is within 3% of the mean, the arithmetic
// of the package doc.
func TestShardOfSpreadsEvenly(t *testing.T) {
	counts := make([]int, 8)
	for i := range 100_000 {
		id := ulid.MustNew(uint64(1_780_000_000_000+i), bytes.NewReader(bytes.Repeat([]byte{byte(i), byte(i >> 8)}, 5))).String()
		counts[shardOf(id, 8)]++
	}
	for shard, c := range counts {
		assert.InDelta(t, 12_500, c, 12_500*0.03, "shard %d", shard)
	}
}
