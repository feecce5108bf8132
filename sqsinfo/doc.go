// Package sqsinfo is what sqsworker knows about Amazon SQS itself, in one public place that
// every sqsworker module shares: SQS's limits (each with the AWS document it comes from),
// queue ARN parsing and queue URL resolution, the queue description a worker reads at
// start ([LoadQueue]: its attributes, FIFO or standard, its redrive policy with the
// dead-letter queue and the max receive count), and a queue's approximate depth
// ([QueueDepth]).
//
//	url, err := sqsinfo.ResolveQueueURL(ctx, client, "orders") // a name, URL or ARN
//	if err != nil {
//		return err // errors.Is(err, sqsinfo.ErrQueueNotFound) when there is no such queue
//	}
//	queue, err := sqsinfo.LoadQueue(ctx, client, url)
//	if err != nil {
//		return err
//	}
//	if queue.RedrivePolicy != nil {
//		fmt.Println("dead-letter queue", queue.DeadLetterQueueURL, "after", queue.RedrivePolicy.MaxReceiveCount, "receives")
//	}
//
// It holds facts and read-only calls, no policy: the hosts, the producer, the CLI, the
// operations page and the OpenTelemetry gauges take their limits and queue descriptions
// from here. It imports no other sqsworker package, so any of them (the root package
// included) may import it.
package sqsinfo
