package provision

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dynamodbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TableCreator is the part of the DynamoDB client [CreateNewTable] uses.
type TableCreator interface {
	dynamodb.DescribeTableAPIClient
	CreateTable(ctx context.Context, input *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
}

// CreateNewTable creates the table of input, whose name the caller knows to be free (a
// unique name, or one it has just seen deleted), and waits until it is ACTIVE (at most
// 2 minutes). A ResourceInUseException is then this call's own table: the SDK retried
// CreateTable after the first attempt's answer was lost or failed its CRC32 check, which
// moto does under load (localstack/README.md), and the retry met the table the first
// attempt made. Every other error is returned, wrapped with the table's name.
func CreateNewTable(ctx context.Context, client TableCreator, input *dynamodb.CreateTableInput) error {
	name := aws.ToString(input.TableName)
	_, err := client.CreateTable(ctx, input)
	if _, inUse := errors.AsType[*dynamodbtypes.ResourceInUseException](err); err != nil && !inUse {
		return fmt.Errorf("creating table %s: %w", name, err)
	}
	waiter := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = tableWaitMinDelay
		o.MaxDelay = tableWaitMaxDelay
	})
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: input.TableName}, tableActiveWait); err != nil {
		return fmt.Errorf("waiting for table %s to become active: %w", name, err)
	}
	return nil
}
