// Package outboxdynamo is the DynamoDB store of the transactional outbox (package
// outbox): entries written into the caller's TransactWriteItems call
// ([Outbox.TransactItems]), a table whose sparse index holds the unpublished and failed
// entries ([Outbox.CreateTableInput]), the container relay over that index
// ([NewRelay], or [NewStore] for [outbox.NewRelay]), the operator's listings and
// actions ([Outbox.Failed], [Outbox.Parked], [Outbox.Summary], [Outbox.Retry],
// [Outbox.Skip]), and the relay of the table's stream ([StreamRelay]; its Lambda
// handler is package dynamostream, so that only a function on the stream links
// aws-lambda-go). It passes the conformance suite of outbox/outboxtest.
package outboxdynamo
