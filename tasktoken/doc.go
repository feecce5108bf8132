// Package tasktoken runs the jobs of AWS Step Functions' callback pattern: a Task state
// whose resource is arn:aws:states:::sqs:sendMessage.waitForTaskToken sends a message
// carrying its task token and waits until a worker answers with SendTaskSuccess or
// SendTaskFailure (AWS Step Functions Developer Guide, "Wait for a Callback with Task
// Token").
package tasktoken
