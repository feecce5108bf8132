package producer

import (
	"fmt"

	"github.com/sqsworker/sqsworker/sqsinfo"
)

// withTenant returns job with its GroupID set to Config.Tenant's key when the queue is a
// standard queue, the job has no GroupID and the producer has a Tenant function. FIFO
// queues keep the caller's GroupID: there the group is an ordering decision, not only a
// tenant's name. A key SQS would refuse as a MessageGroupId is an error naming it.
func (p *Producer) withTenant(queueURL string, job Job) (Job, error) {
	if p.config.Tenant == nil || job.GroupID != "" || isFIFO(queueURL) {
		return job, nil
	}
	tenant := p.config.Tenant(job)
	if err := sqsinfo.CheckMessageGroupID(tenant); tenant != "" && err != nil {
		return job, fmt.Errorf("producer: Config.Tenant's key for the %q job: %w", job.Type, err)
	}
	job.GroupID = tenant
	return job, nil
}
