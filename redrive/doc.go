// Package redrive operates dead-letter queues: it moves messages back to a queue,
// natively or on the client side, and looks at them for triage.
//
// Three tools, from the cheapest to the most flexible:
//
//   - [StartMoveTask], [WaitMoveTask], [ListMoveTasks], [CancelMoveTask]: SQS's own
//     message move tasks (StartMessageMoveTask). SQS moves every message of a
//     dead-letter queue back to its source queue(s), or to one destination, at up to
//     [MaxMoveRate] messages per second. One active task per source queue.
//   - [Mover]: a client-side move for what the native API cannot do: a [Filter], a
//     limit, a dry run, any destination, FIFO destinations (group kept, new
//     deduplication id from [NextDeduplicationID]). It sends, waits for SQS to confirm,
//     and only then deletes from the source, so a crash can duplicate a message but
//     never lose one. Batches are packed by count (10) and by bytes (body plus
//     attributes, as SQS counts them) up to the destination's MaximumMessageSize. Each
//     moved message carries [AttributeRedriveCount] and [AttributeMoveID] when they
//     fit. A run moves the messages present when it starts, each once, and leaves what
//     reaches the source during it (a copy it sent that failed again), so a move beside
//     a worker that still fails the job ends.
//   - [Peek]: receive and release messages to read their failure attributes and expiry.
//
// A filtered move:
//
//	mover, err := redrive.NewMover(sqsClient, redrive.Config{
//		Source:      dlqURL,
//		Destination: queueURL,
//		Filter:      redrive.FailureReason("HTTP410"),
//		MaxMessages: 100,
//	})
//	if err != nil {
//		return err
//	}
//	result, err := mover.Run(ctx)
//	if err != nil {
//		return err
//	}
//	log.Printf("moved %d, left %d", result.Moved, len(result.TooLarge)+len(result.SendFailed))
//
// The command-line front end is cmd/sqsworker (`sqsworker redrive ...`, `sqsworker dlq ...`).
package redrive
