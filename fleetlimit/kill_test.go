package fleetlimit_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/fleetlimit"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/table"
)

const (
	envHolderTable = "FLEETLIMIT_TEST_HOLDER_TABLE" // set: this process is the holder
	holderBanner   = "fleetlimit holder: holding"
	// killLease is long enough that a loaded, serialized moto (one request at a time
	// for every parallel test) does not make two renewals in a row time out: the
	// holder then loses its permits before the kill (a CI run saw that at 3 s).
	killLease = 6 * time.Second
)

func TestMain(m *testing.M) {
	if name := os.Getenv(envHolderTable); name != "" {
		os.Exit(runHolder(name))
	}
	if os.Getenv(envWorkerTable) != "" {
		os.Exit(runWorkerProcess())
	}
	os.Exit(m.Run())
}

// runHolder takes both permits of key "k" through the middleware, with handlers that
// never return (so the middleware renews them), reports it and waits to be killed.
func runHolder(tableName string) int {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	limiter, err := fleetlimit.New(dynamodb.NewFromConfig(cfg), fleetlimit.Config{Table: tableName, Name: "kill", Concurrency: 2, Lease: killLease, Holder: "doomed"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	started := make(chan error, 2)
	handler := limiter.Middleware()(sqsworker.HandlerFunc(func(ctx context.Context, m *sqsworker.Message) error {
		started <- nil
		<-ctx.Done()
		return ctx.Err()
	}))
	for i := range 2 {
		go func() { // ends with the process
			started <- handler.Handle(context.Background(), &sqsworker.Message{ID: strconv.Itoa(i)})
		}()
	}
	for range 2 {
		if err := <-started; err != nil {
			fmt.Fprintln(os.Stderr, "fleetlimit holder:", err)
			return 1
		}
	}
	fmt.Println(holderBanner)
	err = <-started // a handler returns only when its permit was lost
	fmt.Fprintln(os.Stderr, "fleetlimit holder: lost a permit before the kill:", err)
	return 3
}

// leaseEnds reads the lease ends (epoch ms) of the permits item of "k".
func leaseEnds(t *testing.T, client *dynamodb.Client, tableName string) []int64 {
	key, err := table.LimitPermitsKey("kill", 0, "all")
	require.NoError(t, err)
	output, err := client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(tableName), Key: table.KeyAttribute(key), ConsistentRead: aws.Bool(true)})
	require.NoError(t, err)
	var ends []int64
	for name, value := range output.Item {
		if slot, ok := value.(*types.AttributeValueMemberM); ok && strings.HasPrefix(name, "p") {
			end, _ := strconv.ParseInt(slot.Value["u"].(*types.AttributeValueMemberN).Value, 10, 64)
			ends = append(ends, end)
		}
	}
	return ends
}

// A worker holding both permits is SIGKILLed (moto): its permits, renewed while it
// lived, come back by expiry within the lease of its last renewal, and not before.
func TestSIGKILLedHolderPermitsReturnWithinTheLease(t *testing.T) {
	t.Parallel()
	client := testenv.DynamoDB(t)
	tableName := testenv.NewTable(t, client)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envHolderTable+"="+tableName)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	lines := bufio.NewScanner(stdout)
	require.True(t, lines.Scan() && lines.Text() == holderBanner, "the holder took both permits; stderr: %s", stderr.String())

	limiter := newLimiter(t, client, fleetlimit.Config{Table: tableName, Name: "kill", Concurrency: 2, Lease: killLease})
	_, err = limiter.Acquire(context.Background(), "all")
	_, busy := errors.AsType[*fleetlimit.BusyError](err)
	require.True(t, busy, "both permits are held: %v", err)
	first := leaseEnds(t, client, tableName)
	require.Len(t, first, 2)
	// A renewal is due every killLease/3; the bound only catches a holder that stopped
	// renewing (a loaded emulator once took longer than two leases for the first one).
	testenv.Eventually(t, 20*time.Second, "the holder renewed its permits", func() bool {
		ends := leaseEnds(t, client, tableName)
		return len(ends) == 2 && min(ends[0], ends[1]) > max(first[0], first[1])
	})

	require.NoError(t, cmd.Process.Kill())
	killed := time.Now()
	err = cmd.Wait()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL, "killed by SIGKILL: %v; stderr: %s", err, stderr.String())
	ends := leaseEnds(t, client, tableName) // no renewal after the kill
	require.Len(t, ends, 2, "the killed holder's permits are still in the item; holder's stderr: %s", stderr.String())
	lastEnd := time.UnixMilli(max(ends[0], ends[1]))

	var taken []*fleetlimit.Permit
	testenv.Eventually(t, killLease+2*time.Second, "both permits taken back", func() bool {
		permit, err := limiter.Acquire(context.Background(), "all")
		if err == nil {
			taken = append(taken, permit)
		}
		return len(taken) == 2
	})
	back := time.Now()
	assert.LessOrEqual(t, back.Sub(killed), killLease+time.Second, "back within the lease of the kill (plus polling)")
	assert.False(t, back.Before(time.UnixMilli(min(ends[0], ends[1]))), "not before the dead holder's lease ended")
	t.Logf("killed %s; leases ended %s after the kill; both permits back %s after it", killed.Format(time.StampMilli), lastEnd.Sub(killed), back.Sub(killed))
}
